// hone simulate FILE --app APP [--machine M] [--size S] [--noise SIGMA --seed N] [--json]
// hone simulate --assign ASSIGNMENT.json --app APP ... (an assignment of `hone space`):
// runs a policy on hone's performance model of an application and a machine.
#include "cli/Commands.h"

#include "dsl/Frontend.h"
#include "mapping/Evaluators.h"
#include "mapping/Space.h"
#include "model/App.h"
#include "model/Catalog.h"
#include "sim/AppCheck.h"
#include "sim/Simulator.h"

#include <fmt/format.h>

#include "support/FileUtil.h"

#include <iostream>

namespace hone::cli {

int exitCodeOf(const support::Error &error) { return error.line > 0 ? kRejected : kUsage; }

std::optional<LoadedModels> loadModels(const std::string &appName, const std::string &machineName,
                                       std::optional<double> size, int *failure) {
  auto models = mapping::loadModels(appName, machineName, size);
  if (!models) {
    std::cerr << "hone: " << models.error().message << "\n";
    *failure = exitCodeOf(models.error());
    return std::nullopt;
  }
  return std::move(*models);
}

void addSimulateCommand(CLI::App &app, Action &action) {
  struct Options {
    std::string file;
    std::string assign;
    std::string app;
    std::string machine = "p100x4";
    std::optional<double> size;
    double noise = 0;
    uint64_t seed = 1;
    bool json = false;
  };
  auto opts = std::make_shared<Options>();
  auto *cmd = app.add_subcommand("simulate", "Run a policy on the performance model of an app and a machine");
  auto *fileOpt = cmd->add_option("file", opts->file, "Policy file");
  auto *assignOpt = cmd->add_option("--assign", opts->assign,
                                    "Instead of a file: an assignment of the decision space (hone space --json)");
  fileOpt->excludes(assignOpt);
  assignOpt->excludes(fileOpt);
  cmd->add_option("--app", opts->app, "Application model: a name in models/apps or a .toml path")->required();
  cmd->add_option("--machine", opts->machine, "Machine model: a name in models/machines or a .toml path")
      ->capture_default_str();
  cmd->add_option("--size", opts->size, "Problem size (the app's size parameter; default: the app's)");
  cmd->add_option("--noise", opts->noise, "Log-normal measurement noise on the time (sigma, e.g. 0.05)")
      ->check(CLI::Range(0.0, 1.0));
  cmd->add_option("--seed", opts->seed, "Seed of the noise")->capture_default_str()->check(CLI::NonNegativeNumber);
  cmd->add_flag("--json", opts->json, "Print one JSON object");
  onModels(cmd, action, opts, [opts](LoadedModels &loaded) -> int {
    if (opts->file.empty() && opts->assign.empty()) {
      std::cerr << "hone: simulate needs a policy file or --assign ASSIGNMENT.json\n";
      return kUsage;
    }
    std::optional<support::SourceFile> file;
    if (!opts->assign.empty()) {
      mapping::Space space = mapping::Space::build(*loaded.app, *loaded.machine);
      auto text = renderAssignment(space, opts->assign);
      if (!text)
        return kRejected;
      file.emplace(opts->assign + ".map", *text);
    } else {
      file = readSource(opts->file);
    }
    if (!file)
      return kRejected;
    auto checked = dsl::checkSource(std::move(*file));
    if (checked.ok()) {
      sim::checkAgainstApp(checked.program, *loaded.app, *checked.diags);
      checked.diags->sortByLocation();
    }
    printDiagnostics(checked);
    if (!checked.ok())
      return kRejected;
    sim::Context context(*loaded.machine, *loaded.program);
    sim::Result result = sim::simulate(context, checked.program, {opts->noise, opts->seed});
    if (opts->json) {
      nlohmann::json j = sim::toJson(result);
      if (!opts->assign.empty()) { // for external tuners: the mapper and its score
        j["mapper"] = checked.file->text();
        j["score"] = 0.0;
        if (auto expert = mapping::findExpertMapper(loaded.app->name); expert && result.ok) {
          mapping::ModelEvaluator reference(*loaded.machine, *loaded.app, *loaded.program);
          if (auto text = support::readFile(*expert)) {
            auto r = reference.evaluate(engine::Candidate::make(*text));
            if (r.ok())
              j["score"] = result.throughput / r.metrics["throughput"];
          }
        }
      }
      std::cout << j.dump(2) << "\n";
    } else
      std::cout << sim::summarize(result, context);
    return result.ok ? kOk : kRejected;
  });
}

} // namespace hone::cli
