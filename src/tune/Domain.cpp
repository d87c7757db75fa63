#include "tune/Domain.h"

#include "tune/SearchAgents.h"

#include <fmt/format.h>

#include <algorithm>

namespace hone::tune {

Registry &Registry::instance() {
  static Registry registry;
  return registry;
}

void Registry::addDomain(std::unique_ptr<Domain> domain) {
  if (this->domain(domain->name()))
    return; // registered already (registration functions may be called more than once)
  domains_.push_back(std::move(domain));
}

void Registry::addAgent(AgentInfo agent) {
  for (const auto &a : agents_)
    if (a.name == agent.name && a.domains == agent.domains)
      return;
  agents_.push_back(std::move(agent));
}

const Domain *Registry::domain(const std::string &name) const {
  for (const auto &d : domains_)
    if (d->name() == name)
      return d.get();
  return nullptr;
}

std::vector<std::string> Registry::domainNames() const {
  std::vector<std::string> out;
  for (const auto &d : domains_)
    out.push_back(d->name());
  return out;
}

std::vector<const AgentInfo *> Registry::agents(const std::string &domain) const {
  std::vector<const AgentInfo *> out;
  for (const auto &a : agents_)
    if (domain.empty() || a.domains.empty() ||
        std::find(a.domains.begin(), a.domains.end(), domain) != a.domains.end())
      if (std::none_of(out.begin(), out.end(), [&](const AgentInfo *o) { return o->name == a.name; }))
        out.push_back(&a);
  // The default agent first, then in registration order.
  std::stable_sort(out.begin(), out.end(),
                   [](const AgentInfo *a, const AgentInfo *b) { return a->isDefault && !b->isDefault; });
  return out;
}

const AgentInfo *Registry::agent(const std::string &domain, const std::string &name) const {
  for (const auto &a : agents_)
    if (a.name == name &&
        (a.domains.empty() || std::find(a.domains.begin(), a.domains.end(), domain) != a.domains.end()))
      return &a;
  return nullptr;
}

std::string Registry::defaultAgent(const std::string &domain) const {
  auto all = agents(domain);
  if (!all.empty() && all.front()->isDefault) // the default sorts first
    return all.front()->name;
  for (const AgentInfo *a : all) // else the first the domain registered for itself
    if (std::find(a->domains.begin(), a->domains.end(), domain) != a->domains.end())
      return a->name;
  return all.empty() ? "" : all.front()->name;
}

std::string Registry::agentHelp(const std::string &domain) const {
  std::string out;
  for (const AgentInfo *a : agents(domain))
    out += fmt::format("{}{}{}: {}", out.empty() ? "" : "; ", a->name, a->isDefault ? " (default)" : "", a->help);
  return out;
}

void registerSearchAgents(Registry &registry) {
  auto needSpace = [](Problem &p, const char *agent) -> support::Expected<const CategoricalSpace *> {
    if (!p.space())
      return support::Error{fmt::format("the {} agent needs a categorical decision space, which {} has not", agent,
                                        p.subject())};
    return p.space();
  };
  registry.addAgent({kEnsembleAgent, "an OpenTuner-style bandit over four search techniques (scores only)", {},
                     [needSpace](Problem &p, const AgentContext &c)
                         -> support::Expected<std::unique_ptr<engine::Strategy>> {
                       auto space = needSpace(p, kEnsembleAgent);
                       if (!space)
                         return space.error();
                       return makeEnsembleAgent(**space, c.config.seed);
                     },
                     /*asksModel=*/false, /*usesStart=*/false});
  registry.addAgent({kRandomAgent, "uniform samples of the decision space (the papers' baseline)", {},
                     [needSpace](Problem &p, const AgentContext &c)
                         -> support::Expected<std::unique_ptr<engine::Strategy>> {
                       auto space = needSpace(p, kRandomAgent);
                       if (!space)
                         return space.error();
                       return makeRandomAgent(**space, c.config.seed);
                     },
                     /*asksModel=*/false, /*usesStart=*/false});
}

} // namespace hone::tune
