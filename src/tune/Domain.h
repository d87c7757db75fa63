// The seam between hone's tuning run and what is being tuned. A Domain
// (mapping, kernel) turns a run's configuration into a Problem: how to
// evaluate a candidate, what scores 1.0, where to start, the agents it
// offers, and how to hand the best artifact to the user. The session
// (tune/Session.h) runs any Problem the same way; `tune` never names a
// domain: domains register themselves (the CLI's wiring calls their
// registration functions, src/cli/Domains.cpp).
#pragma once

#include "engine/Engine.h"
#include "support/Expected.h"
#include "tune/Config.h"

#include <nlohmann/json.hpp>

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace CLI {
class App;
}
namespace hone::llm {
class Client;
}

namespace hone::tune {

/// A decision space of categorical parameters: how the built-in search agents
/// (random, ensemble) see a domain. Value 0 of each parameter is its default.
class CategoricalSpace {
public:
  virtual ~CategoricalSpace() = default;
  virtual std::vector<size_t> sizes() const = 0;
  /// The artifact of one value index per parameter.
  virtual std::string render(const std::vector<int> &assignment) const = 0;
};

/// What an agent is made with.
struct AgentContext {
  const TuneConfig &config;
  std::string start, startLabel; // the artifact to improve (guided, LLM)
  llm::Client *client = nullptr; // the LLM client, for agents that ask a model
};

/// One domain's side of a run, ready to tune.
class Problem {
public:
  virtual ~Problem() = default;
  /// "circuit", "matmul": the runs table's app column.
  virtual std::string subject() const = 0;
  /// "p100x4", "local (8 cores)": the runs table's machine column.
  virtual std::string machine() const = 0;
  /// Evaluates one candidate; thread-safe. Failures are results.
  virtual engine::EvalResult evaluate(const engine::Candidate &candidate) = 0;
  /// The artifact that scores 1.0 and its label ("the expert mapper ...").
  virtual std::pair<std::string, std::string> reference() const = 0;
  /// The number of a result that the scores are relative to (throughput, 1/time); <= 0: none.
  virtual double baselineOf(const engine::EvalResult &reference) const = 0;
  /// What a failed reference is reported as ("throughput", "time").
  virtual std::string baselineMetricName() const = 0;
  virtual void setBaseline(double baseline) = 0;
  /// Whether a reference that fails stops the run before any candidate: true where its failure means
  /// the evaluation itself is broken (a real build/run command), false where raw scores still make
  /// sense (a model's expert mapper that does not fit a machine).
  virtual bool referenceMustRun() const { return false; }
  /// The start when the user gave none, and its label.
  virtual std::pair<std::string, std::string> defaultStart() const = 0;
  /// The categorical space of the search agents; null: the domain has none.
  virtual const CategoricalSpace *space() const = 0;
  /// Writes the best artifact where the user can use it (`path`); returns what was written.
  virtual support::Expected<std::string> writeBest(const engine::Step &best, const std::string &path,
                                                   const std::string &header) const = 0;
  /// What the domain measured of the best while writing it, for the run's summary (kernels: the best
  /// against the compiler-only baseline, side by side); "" when nothing.
  virtual std::string bestNote() const { return {}; }
  /// The best's file or folder name when the user does not say, e.g. "best-circuit-run3.map"; the
  /// session puts it beside the store, after the store's name ("hone-best-circuit-run3.map" for hone.db).
  virtual std::string defaultBestName(int64_t runId) const = 0;
  /// The agent the run uses, made from the one the user chose (a domain may wrap it, e.g. to search a
  /// model before spending real evaluations); an error when the options do not go together.
  virtual support::Expected<std::unique_ptr<engine::Strategy>> decorateAgent(std::unique_ptr<engine::Strategy> agent,
                                                                            const AgentContext &) {
    return agent;
  }
};

/// What `hone tune`'s flags give every domain to read (flags no one domain owns).
struct CommonFlags {
  std::string workdir; // --workdir: the folder of candidates' files (each domain its default)
};

/// One domain's flags of `hone tune`, added to the command by the domain (Domain::addTuneFlags) and
/// read back after parsing: the command line never names a domain's options.
class DomainFlags {
public:
  virtual ~DomainFlags() = default;
  /// Whether the user chose the domain (gave its chooser flag: --app, --kernel).
  virtual bool chosen() const = 0;
  /// The options the flags say, as Domain::open reads them.
  virtual nlohmann::json options() const = 0;
  /// A warning for each flag given that goes unread: all of them (`chosen` false: another domain was
  /// chosen), or those that the chosen options do not read ("--build has no effect without --evaluator
  /// command").
  virtual std::vector<std::string> unread(bool chosen) const = 0;
};

/// An agent by name: makes the strategy for a problem.
struct AgentInfo {
  std::string name;
  std::string help;
  std::vector<std::string> domains; // the domains it serves; empty: every domain with a categorical space
  std::function<support::Expected<std::unique_ptr<engine::Strategy>>(Problem &, const AgentContext &)> make;
  bool asksModel = false; // needs a language model's client (the session makes it; `--llm-*` apply)
  bool usesStart = true;  // improves a start artifact (`--start`); false: searches the space from its default
  bool isDefault = false; // the agent a run uses when the user names none (TuneConfig::agent empty)
};

class Domain {
public:
  virtual ~Domain() = default;
  /// "mapping", "kernel": recorded with the run; AutoGuide's rules of this domain apply.
  virtual std::string name() const = 0;
  /// What reports call its candidates ("mapper", "variant") and its scores relative to the reference
  /// ("score (relative)", "speedup"): stored with each run (TuneConfig::presentation), so that reports
  /// read them from the run, never from the domain's name.
  virtual std::string artifactName() const = 0;
  virtual std::string scoreName() const { return "score (relative)"; }
  /// Reads `config.options` (strictly) and prepares the problem; may fill in options it decides.
  virtual support::Expected<std::unique_ptr<Problem>> open(TuneConfig &config) const = 0;
  /// Checks a start artifact the user gave (labelled `label` in messages) without preparing a
  /// problem: nullopt when it is fine, the located diagnostics when it is not (every edit of it
  /// would fail); an error when the options themselves are wrong.
  virtual support::Expected<std::optional<std::string>> checkStart(const TuneConfig &config, const std::string &text,
                                                                   const std::string &label) const = 0;
  /// How a user chooses the domain on `hone tune`'s command line, for messages: "--app APP (a Legion
  /// application model)".
  virtual std::string chooser() const = 0;
  /// Adds the domain's own flags to `hone tune`'s command `cmd` (its chooser among them; help texts
  /// grouped under the domain's heading); they are read through the returned object once `cmd` is
  /// parsed, with `common` filled in by then.
  virtual std::unique_ptr<DomainFlags> addTuneFlags(CLI::App &cmd, const CommonFlags &common) const = 0;
};

/// The domains and agents hone knows, registered at start-up.
class Registry {
public:
  static Registry &instance();
  void addDomain(std::unique_ptr<Domain> domain);
  void addAgent(AgentInfo agent);
  const Domain *domain(const std::string &name) const;
  std::vector<std::string> domainNames() const;
  /// The agents for `domain` (all when empty), in registration order.
  std::vector<const AgentInfo *> agents(const std::string &domain = "") const;
  const AgentInfo *agent(const std::string &domain, const std::string &name) const;
  /// The agent a run of `domain` uses when the user names none: the one registered as the default, else
  /// the first registered for the domain itself, else the first that serves it; "" when none does.
  std::string defaultAgent(const std::string &domain) const;
  /// "guided (default): ...; ensemble: ..." for help texts.
  std::string agentHelp(const std::string &domain = "") const;

private:
  std::vector<std::unique_ptr<Domain>> domains_;
  std::vector<AgentInfo> agents_;
};

/// Registers the agents every domain with a categorical space has: random and ensemble.
void registerSearchAgents(Registry &registry);

} // namespace hone::tune
