// hone eval FILE --machine SPEC --task NAME [--space S --point P | --all-points]:
// where a policy's placement functions put a task's points.
#include "cli/Commands.h"

#include "dsl/Frontend.h"
#include "dsl/Interpreter.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <iostream>
#include <sstream>

namespace hone::cli {
namespace {

std::optional<std::vector<int64_t>> parseInts(const std::string &text, std::string_view what) {
  std::vector<int64_t> out;
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) {
    try {
      size_t used = 0;
      long long v = std::stoll(item, &used);
      if (used != item.size())
        throw std::invalid_argument(item);
      out.push_back(v);
    } catch (const std::exception &) {
      std::cerr << fmt::format("hone: {} '{}' is not a comma list of integers\n", what, text);
      return std::nullopt;
    }
  }
  if (out.empty()) {
    std::cerr << fmt::format("hone: {} is empty\n", what);
    return std::nullopt;
  }
  return out;
}

std::string tupleStr(const std::vector<int64_t> &p) {
  std::string out = "(";
  for (size_t i = 0; i < p.size(); ++i)
    out += (i ? ", " : "") + std::to_string(p[i]);
  return out + ")";
}

} // namespace

namespace {

/// What `hone eval`'s flags say.
struct EvalOptions {
  std::string file;
  std::string machine = "nodes=1,gpus=4,cpus=8";
  std::string task;
  std::string space;
  std::string point;
  std::string kind;
  std::string parentProc;
  bool allPoints = false;
  bool json = false;
};

/// The points of the launch the flags name (one empty point for a single task, whose parent may be
/// placed by --parent-proc), or the exit code of a usage error, said.
int launchPoints(const EvalOptions &opts, bool single, dsl::TaskInfo &task, std::vector<std::vector<int64_t>> &points) {
  if (single) {
    if (!opts.parentProc.empty()) {
      auto pp = parseInts(opts.parentProc, "--parent-proc");
      if (!pp || pp->size() != 2) {
        std::cerr << "hone: --parent-proc takes node,processor\n";
        return kUsage;
      }
      auto parent = std::make_shared<dsl::TaskInfo>();
      parent->name = "parent";
      parent->kind = task.kind;
      parent->indexLaunch = false;
      parent->processor = dsl::Point2{(*pp)[0], (*pp)[1]};
      task.parent = parent;
    }
    points.push_back({});
  } else {
    auto space = parseInts(opts.space, "--space");
    if (!space)
      return kUsage;
    for (auto e : *space)
      if (e < 1 || e > (1 << 20)) {
        std::cerr << "hone: --space extents must be between 1 and 2^20\n";
        return kUsage;
      }
    task.ispace = *space;
    if (opts.allPoints) {
      // Legion iterates a domain with dimension 0 varying fastest.
      int64_t total = 1;
      for (auto e : *space)
        total *= e;
      if (total > (1 << 20)) {
        std::cerr << "hone: --all-points: the launch domain has more than 2^20 points\n";
        return kUsage;
      }
      for (int64_t n = 0; n < total; ++n) {
        std::vector<int64_t> p;
        int64_t rest = n;
        for (auto e : *space) {
          p.push_back(rest % e);
          rest /= e;
        }
        points.push_back(p);
      }
    } else if (!opts.point.empty()) {
      auto p = parseInts(opts.point, "--point");
      if (!p)
        return kUsage;
      if (p->size() != space->size()) {
        std::cerr << fmt::format("hone: --point has {} coordinates but --space has {}\n", p->size(), space->size());
        return kUsage;
      }
      for (size_t i = 0; i < p->size(); ++i)
        if ((*p)[i] < 0 || (*p)[i] >= (*space)[i]) {
          std::cerr << fmt::format("hone: --point {} is outside --space {}\n", opts.point, opts.space);
          return kUsage;
        }
      points.push_back(*p);
    } else {
      std::cerr << "hone: give --point P or --all-points with --space\n";
      return kUsage;
    }
  }
  return kOk;
}

/// Places the task's points with the policy's placement function, printing each placement or error.
int placePoints(const EvalOptions &opts) {
  auto shape = dsl::MachineShape::parse(opts.machine);
  if (!shape) {
    std::cerr << "hone: --machine: " << shape.error().message << "\n";
    return kUsage;
  }
  auto file = readSource(opts.file);
  if (!file)
    return kRejected;
  auto checked = dsl::checkSource(std::move(*file));
  printDiagnostics(checked);
  if (!checked.ok())
    return kRejected;

  dsl::Interpreter interp(checked.program, *shape, &std::cerr);
  if (auto init = interp.initialize(); !init) {
    printLocatedError(*checked.file, init.error().line, init.error().column, init.error().message,
                      "while running the policy's top-level statements");
    return kRejected;
  }

  dsl::ProcKind kind;
  if (!opts.kind.empty()) {
    auto k = dsl::parseProcKind(opts.kind);
    if (!k) {
      std::cerr << fmt::format("hone: --kind '{}' is not a processor kind (CPU, GPU, IO, PY, PROC, OMP)\n", opts.kind);
      return kUsage;
    }
    kind = *k;
  } else if (auto k = interp.processorKindFor(opts.task)) {
    kind = *k;
  } else {
    std::cerr << fmt::format("hone: no Task statement gives task '{}' a processor kind that {} has; pass --kind\n",
                             opts.task, shape->describe());
    return kRejected;
  }

  bool single = opts.space.empty();
  const dsl::FuncDef *fn = interp.placementFunctionFor(opts.task, kind, single);
  if (!fn) {
    std::cerr << fmt::format("hone: no {} applies to task '{}' on {}; Legion's default mapper would place it\n",
                             single ? "SingleTaskMap" : "IndexTaskMap", opts.task, dsl::toString(kind));
    return kRejected;
  }

  dsl::TaskInfo task;
  task.name = opts.task;
  task.kind = kind;
  task.indexLaunch = !single;
  std::vector<std::vector<int64_t>> points;
  if (int code = launchPoints(opts, single, task, points); code != kOk)
    return code;

  int status = kOk;
  auto results = nlohmann::json::array();
  for (const auto &p : points) {
    task.ipoint = p;
    auto placed = interp.place(*fn, task);
    std::string where =
        single ? fmt::format("task '{}'", task.name) : fmt::format("point {} of task '{}'", tupleStr(p), task.name);
    if (!placed) {
      status = kRejected;
      printLocatedError(*checked.file, placed.error().line, placed.error().column, placed.error().message,
                        fmt::format("while placing {} with '{}' on {}", where, fn->name.text, shape->describe()));
      results.push_back({{"point", p},
                         {"error", placed.error().message},
                         {"line", placed.error().line},
                         {"column", placed.error().column}});
      continue;
    }
    nlohmann::json procs = nlohmann::json::array();
    for (const auto &q : placed->points)
      procs.push_back({q[0], q[1]});
    results.push_back({{"point", p}, {"kind", std::string(dsl::toString(placed->kind))}, {"processors", procs}});
    if (!opts.json) {
      if (opts.allPoints)
        std::cout << fmt::format("{} -> {}\n", tupleStr(p), placed->str());
      else
        std::cout << placed->str() << "\n";
    }
  }
  if (opts.json)
    std::cout << nlohmann::json{{"task", task.name},
                                {"function", fn->name.text},
                                {"machine", shape->describe()},
                                {"placements", results}}
                     .dump(2)
              << "\n";
  return status;
}

} // namespace

void addEvalCommand(CLI::App &app, Action &action) {
  auto opts = std::make_shared<EvalOptions>();
  auto *cmd = app.add_subcommand("eval", "Evaluate where a policy places a task's points");
  cmd->add_option("file", opts->file, "Policy file")->required();
  cmd->add_option("--machine", opts->machine, "Machine shape, e.g. nodes=2,gpus=4,cpus=8")->capture_default_str();
  cmd->add_option("--task", opts->task, "Task name")->required();
  cmd->add_option("--space", opts->space, "Launch domain extents, e.g. 8 or 4,4 (omit for a single task)");
  cmd->add_option("--point", opts->point, "The point in the launch domain, e.g. 5 or 1,2");
  cmd->add_flag("--all-points", opts->allPoints, "Place every point of the launch domain")
      ->excludes(cmd->get_option("--point"));
  cmd->add_option("--kind", opts->kind, "Processor kind the task runs on (default: from its Task statement)");
  cmd->add_option("--parent-proc", opts->parentProc,
                  "For a single task: the (node,processor) its parent runs on, e.g. 1,2");
  cmd->add_flag("--json", opts->json, "Print the placements as JSON");
  cmd->callback([opts, &action] { action = [opts]() -> int { return placePoints(*opts); }; });
}

} // namespace hone::cli
