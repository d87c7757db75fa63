// The mapping domain of a tuning run: an application model on a machine
// model, mappers as DSL text, evaluated by the performance model or by real
// builds and runs (the command evaluator), improved by the guided, LLM,
// ensemble and random agents. Registered with tune's registry by
// registerMappingDomain().
#pragma once

#include "mapping/Evaluators.h"
#include "model/App.h"
#include "model/Machine.h"
#include "support/Expected.h"
#include "tune/Domain.h"

#include <memory>
#include <optional>
#include <string>

namespace hone::mapping {

/// The mapping domain's options of a run (TuneConfig::options).
struct MappingOptions {
  std::string app;
  std::string machine = "p100x4";
  std::optional<double> size;
  double noise = 0;
  std::string evaluator = "model"; // or "command"
  CommandOptions command;
  std::string surrogate;            // "model": search the performance model, evaluate its best for real
  size_t surrogateSimulations = 200; // model evaluations per real one

  nlohmann::json toJson() const;
  /// Strict: unknown keys are errors.
  static support::Expected<MappingOptions> fromJson(const nlohmann::json &j);
};

/// A machine, an app and the app instantiated on it.
struct LoadedModels {
  std::unique_ptr<model::MachineModel> machine;
  std::unique_ptr<model::AppModel> app;
  std::unique_ptr<model::Program> program;
};

/// Finds (a name in models/ or a path) and loads the models; the error names the option
/// ("--app: ...", "--machine: ...") or the file and line.
support::Expected<LoadedModels> loadModels(const std::string &app, const std::string &machine,
                                           std::optional<double> size);

/// The domain's flags of `hone tune` (MappingFlags.cpp): --app chooses it.
std::unique_ptr<tune::DomainFlags> addMappingTuneFlags(CLI::App &cmd, const tune::CommonFlags &common);

/// The domain's name, decided here: runs record it, the CLI selects the domain by it.
inline constexpr const char *kDomainName = "mapping";
/// Adds the mapping domain and its agents (guided, llm) to the registry.
void registerMappingDomain(tune::Registry &registry);

} // namespace hone::mapping
