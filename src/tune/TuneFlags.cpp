#include "tune/TuneFlags.h"

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <fmt/ranges.h>

namespace hone::tune {

TuneFlags::TuneFlags(CLI::App &cmd, const Registry &registry) {
  cmd.add_option("--workdir", common_.workdir, "Folder for candidates' files (each domain has its default)");
  for (const std::string &name : registry.domainNames()) {
    const Domain *domain = registry.domain(name);
    if (auto flags = domain->addTuneFlags(cmd, common_))
      domains_.emplace_back(domain, std::move(flags));
  }
}

support::Expected<bool> TuneFlags::apply(TuneConfig &config, std::vector<std::string> &warnings) const {
  std::vector<std::string> choosers, chosen;
  const Domain *domain = nullptr;
  const DomainFlags *flags = nullptr;
  for (const auto &[d, f] : domains_) {
    choosers.push_back(d->chooser());
    if (f->chosen()) {
      chosen.push_back(d->chooser().substr(0, d->chooser().find(' ')));
      domain = d;
      flags = f.get();
    }
  }
  if (chosen.empty())
    return support::Error{fmt::format("tune needs {}", fmt::join(choosers, " or "))};
  if (chosen.size() > 1)
    return support::Error{fmt::format("{} choose different things to tune: give one", fmt::join(chosen, " and "))};
  config.domain = domain->name();
  config.options = flags->options();
  for (const auto &[d, f] : domains_)
    for (std::string &w : f->unread(f.get() == flags))
      warnings.push_back(std::move(w));
  return true;
}

} // namespace hone::tune
