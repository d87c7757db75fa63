// hone describe --app APP [--machine M] [--size S]: what a mapper for an app
// can name -- its tasks (variants, region arguments by index and name, with
// privileges), regions and partitions, the launch domains a placement
// function sees -- and what happens without statements (Legion's defaults
// as hone models them), on a machine and at a problem size. The same text the
// LLM agent's prompt holds, plus the launches and the defaults.
#include "cli/Commands.h"

#include "mapping/LlmAgent.h"
#include "model/App.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <iostream>
#include <map>
#include <set>

namespace hone::cli {

namespace {

std::string launchDims(const std::vector<int64_t> &d) {
  return d.empty() ? "a single task" : fmt::format("({})", fmt::join(d, ", "));
}

} // namespace

void addDescribeCommand(CLI::App &app, Action &action) {
  struct Options {
    std::string app, machine = "p100x4";
    std::optional<double> size;
  };
  auto opts = std::make_shared<Options>();
  auto *cmd = app.add_subcommand("describe", "What a mapper for an app can name: tasks, region arguments, launches, "
                                             "and Legion's defaults");
  cmd->add_option("--app", opts->app, "Application model: a name in models/apps or a .toml path")->required();
  cmd->add_option("--machine", opts->machine, "Machine model")->capture_default_str();
  cmd->add_option("--size", opts->size, "Problem size (default: the app's)");
  onModels(cmd, action, opts, [opts](LoadedModels &loaded) -> int {
    const model::AppModel &a = *loaded.app;
    const model::MachineModel &m = *loaded.machine;
    const model::Program &p = *loaded.program;
    mapping::MapperCodec codec(a, m, &p, "", {});
    std::cout << codec.appDescription();

    std::cout << "Region arguments by index (Region/Layout statements may name an argument by its index or by "
                 "its region):\n";
    for (const auto &t : a.tasks) {
      std::vector<std::string> args;
      for (size_t i = 0; i < t.args.size(); ++i)
        args.push_back(fmt::format("{} {}", i, t.args[i].region));
      if (!args.empty())
        std::cout << fmt::format("- {}: {}\n", t.name, fmt::join(args, ", "));
    }
    // The launch domains each task is started with (IndexTaskMap functions see these as ispace).
    std::map<int, std::set<std::vector<int64_t>>> domains;
    std::map<int, bool> single;
    for (const auto &pt : p.tasks) {
      if (pt.index)
        domains[pt.task].insert(pt.domain);
      else
        single[pt.task] = true;
    }
    std::cout << "Launches (index launch domains: what an IndexTaskMap function sees as ispace):\n";
    for (size_t t = 0; t < a.tasks.size(); ++t) {
      std::vector<std::string> kinds;
      for (const auto &d : domains[static_cast<int>(t)])
        kinds.push_back("index launch over " + launchDims(d));
      if (single[static_cast<int>(t)])
        kinds.emplace_back("single launches (SingleTaskMap)");
      if (!kinds.empty())
        std::cout << fmt::format("- {}: {}\n", a.tasks[t].name, fmt::join(kinds, "; "));
    }
    std::cout
        << "Without statements (Legion's defaults, as hone models them):\n"
           "- Task: the first of GPU, OMP, CPU, IO, PY, PROC that the task has a variant for and the machine has\n"
           "- Region: the processor's default memory (the highest affinity):";
    std::vector<std::string> defaults;
    for (const auto &proc : m.processors) {
      const model::MemorySpec *best = nullptr;
      double affinity = -1, bandwidth = -1;
      for (const auto &mem : m.memories)
        for (const auto &acc : mem.access)
          if (acc.proc == proc.kind &&
              (acc.affinity > affinity || (acc.affinity == affinity && acc.bandwidth > bandwidth))) {
            best = &mem;
            affinity = acc.affinity;
            bandwidth = acc.bandwidth;
          }
      if (best)
        defaults.push_back(fmt::format("{} -> {}", model::toString(proc.kind), model::toString(best->kind)));
    }
    std::cout << " " << fmt::format("{}", fmt::join(defaults, ", ")) << "\n"
              << "- Layout: SOA, F_order (dimension x fastest), no alignment constraint\n"
              << "- IndexTaskMap: the linearised launch blocked over every processor of the kind\n";
    std::cout << "\nThe machine: " << codec.machineDescription();
    return kOk;
  });
}

} // namespace hone::cli
