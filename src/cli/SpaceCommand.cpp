// hone space --app APP [--machine M] [--json] [--render ASSIGNMENT.json]:
// the decision space of mapping an app on a machine, for external tuners
// (OpenTuner, ytopt, BaCO), which evaluate assignments with
// `hone simulate --app APP --assign ASSIGNMENT.json --json`.
#include "cli/Commands.h"

#include "mapping/Space.h"
#include "model/App.h"
#include "support/FileUtil.h"

#include <fmt/format.h>

#include <iostream>

namespace hone::cli {

std::optional<std::string> renderAssignment(const mapping::Space &space, const std::string &path) {
  auto text = support::readFile(path);
  if (!text) {
    std::cerr << "hone: --assign: " << text.error().message << "\n";
    return std::nullopt;
  }
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(*text);
  } catch (const nlohmann::json::parse_error &e) {
    std::cerr << fmt::format("hone: {}: not JSON: {}\n", path, e.what());
    return std::nullopt;
  }
  auto a = space.fromJson(j);
  if (!a) {
    std::cerr << fmt::format("hone: {}: {}\n", path, a.error().message);
    return std::nullopt;
  }
  return space.render(*a);
}

void addSpaceCommand(CLI::App &app, Action &action) {
  struct Options {
    std::string app, machine = "p100x4", render;
    std::optional<double> size;
    bool json = false;
  };
  auto opts = std::make_shared<Options>();
  auto *cmd = app.add_subcommand("space", "The decision space of mapping an app on a machine (for external tuners)");
  cmd->add_option("--app", opts->app, "Application model")->required();
  cmd->add_option("--machine", opts->machine, "Machine model")->capture_default_str();
  cmd->add_option("--size", opts->size, "Problem size (default: the app's)");
  cmd->add_option("--render", opts->render, "Print the mapper of this assignment (JSON file) instead");
  cmd->add_flag("--json", opts->json, "Print the space as JSON: typed parameters and constraints");
  onModels(cmd, action, opts, [opts](LoadedModels &loaded) -> int {
    mapping::Space space = mapping::Space::build(*loaded.app, *loaded.machine);
    if (!opts->render.empty()) {
      auto text = renderAssignment(space, opts->render);
      if (!text)
        return kRejected;
      std::cout << *text;
      return kOk;
    }
    if (opts->json) {
      std::cout << space.describe().dump(2) << "\n";
      return kOk;
    }
    std::cout << fmt::format("{} on {}: {} parameters, about 10^{:.1f} mappers\n\n", space.app(), space.machine(),
                             space.params().size(), space.log10Size());
    for (const auto &p : space.params())
      std::cout << fmt::format("  {:<40} {}\n", p.name, fmt::join(p.values, " | "));
    if (!space.constraints().empty()) {
      std::cout << "\nconstraints:\n";
      for (const auto &c : space.constraints())
        std::cout << fmt::format("  {}{}: {}\n", c.param, c.dependsOn.empty() ? "" : " (given " + c.dependsOn + ")",
                                 c.rule);
    }
    return kOk;
  });
}

} // namespace hone::cli
