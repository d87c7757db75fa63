// hone model calibrate --app APP --machine M --runs DB: how well the performance model predicts the
// real runs a store holds, and the machine model's cost numbers fitted to them.
#include "cli/Commands.h"

#include "mapping/Calibrate.h"
#include "mapping/MappingDomain.h"
#include "model/Catalog.h"
#include "store/Store.h"
#include "support/FileUtil.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <iostream>

namespace hone::cli {

void addModelCommand(CLI::App &app, Action &action) {
  struct Options {
    std::string app, machine = "cpu-only", runs, out;
    std::optional<double> size;
    bool json = false;
  };
  auto opts = std::make_shared<Options>();
  auto *group = app.add_subcommand("model", "The performance model against real runs");
  group->require_subcommand(1);
  auto *cmd = group->add_subcommand(
      "calibrate",
      "Compare the model's predictions with a store's real runs, and fit the machine model's costs to them");
  cmd->add_option("--app", opts->app, "Application model: a name in models/apps or a .toml path")->required();
  cmd->add_option("--machine", opts->machine, "Machine model the runs were made on (hone machine detect writes one)")
      ->capture_default_str();
  cmd->add_option("--runs", opts->runs, "Experiment store with command-evaluator runs of the app")->required();
  cmd->add_option("--size", opts->size, "Problem size of the real runs (the app's size parameter)");
  cmd->add_option("-o,--output", opts->out, "Write the calibrated machine model here");
  cmd->add_flag("--json", opts->json, "Print one JSON object");
  onModels(cmd, action, opts, [opts](LoadedModels &loaded) -> int {
    auto machinePath = model::findModel("machines", opts->machine);
    if (!machinePath) {
      std::cerr << "hone: --machine: " << machinePath.error().message << "\n";
      return kRejected;
    }
    auto machineText = support::readFile(*machinePath);
    if (!machineText) {
      std::cerr << "hone: --machine: " << machineText.error().message << "\n";
      return kRejected;
    }
    auto store = store::Store::openReadOnly(opts->runs);
    if (!store) {
      std::cerr << "hone: --runs: " << store.error().message << "\n";
      return kRejected;
    }
    std::vector<std::string> notes;
    auto obs = mapping::observationsFromStore(**store, loaded.app->name, &notes);
    if (!obs) {
      std::cerr << "hone: " << obs.error().message << "\n";
      return kRejected;
    }
    for (const auto &n : notes)
      std::cerr << "hone: note: " << n << "\n";
    auto cal = mapping::calibrate(*obs, *loaded.app, *loaded.machine, *machineText, opts->size);
    if (!cal) {
      std::cerr << "hone: " << cal.error().message << "\n";
      return kRejected;
    }
    if (!opts->out.empty()) {
      std::string error;
      if (!support::writeFileAtomically(opts->out, cal->toml, &error)) {
        std::cerr << "hone: " << error << "\n";
        return kRejected;
      }
    }
    if (opts->json) {
      nlohmann::json j;
      j["app"] = loaded.app->name;
      j["machine"] = loaded.machine->name;
      j["observations"] = obs->size();
      auto fid = [](const mapping::Fidelity &f, double loss) {
        return nlohmann::json{{"compared", f.compared},
                              {"spearman", f.spearman},
                              {"median_rel_error", f.medianRelError},
                              {"mean_squared_log_error", loss}};
      };
      j["before"] = fid(cal->before, cal->lossBefore);
      j["after"] = fid(cal->after, cal->lossAfter);
      j["factors"] = {
          {"compute", cal->compute}, {"memory", cal->memory}, {"copies", cal->copies}, {"runtime", cal->runtime}};
      j["points"] = nlohmann::json::array();
      for (size_t i = 0; i < obs->size(); ++i) {
        auto num = [](double v) { return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(nullptr); };
        j["points"].push_back({{"label", (*obs)[i].label},
                               {"measured_s", (*obs)[i].measuredS},
                               {"predicted_s", num(cal->before.predictedS[i])},
                               {"calibrated_s", num(cal->after.predictedS[i])}});
      }
      if (!opts->out.empty())
        j["output"] = opts->out;
      std::cout << j.dump(2) << "\n";
      return kOk;
    }
    std::cout << fmt::format("{} on {}: {} real runs, the model predicts {}\n", loaded.app->name, loaded.machine->name,
                             obs->size(), cal->before.compared);
    std::cout << fmt::format("{:<12} {:>9} {:>18} {:>16}\n", "", "Spearman", "median rel. error", "mean sq. log err");
    std::cout << fmt::format("{:<12} {:>9.3f} {:>17.1f}% {:>16.4f}\n", "before", cal->before.spearman,
                             100 * cal->before.medianRelError, cal->lossBefore);
    std::cout << fmt::format("{:<12} {:>9.3f} {:>17.1f}% {:>16.4f}\n", "calibrated", cal->after.spearman,
                             100 * cal->after.medianRelError, cal->lossAfter);
    std::cout << fmt::format("factors: compute x{:.3g}, memory bandwidth x{:.3g}, copy bandwidth x{:.3g}, runtime "
                             "costs x{:.3g}\n",
                             cal->compute, cal->memory, cal->copies, cal->runtime);
    if (!opts->out.empty())
      std::cout << "wrote " << opts->out << "\n";
    return kOk;
  });
}

} // namespace hone::cli
