// hone sweep (--apps A,B | --kernels DIR,DIR) --agents G,H --seeds 1-3 [--iterations N] [--machine M]
//            [--db STORE] [--executor local|slurm [--slurm-*]] [--jobs N] [--tag NAME] [--json] [-- TUNE ARGS]
// The papers' protocol, subjects x agents x seeds, as one batch (tune/Sweep.h): its flags, the executor
// that runs the tasks (here N at a time, or an executor kind that runs many at once: one Slurm array job),
// and the sweep's table. Running the same command again picks up where a killed sweep stopped: finished
// tasks are not run again, an array still in the queue is waited for, and runs already gathered are not
// gathered twice.
#include "cli/Commands.h"

#include "kernel/KernelDomain.h"
#include "mapping/MappingDomain.h"
#include "support/FileUtil.h"
#include "support/Interrupt.h"
#include "support/StringUtil.h"
#include "tune/Session.h"
#include "tune/Sweep.h"

#include <fmt/format.h>

#include <filesystem>
#include <iostream>
#include <mutex>

namespace fs = std::filesystem;

namespace hone::cli {

namespace {

std::vector<std::string> splitList(const std::vector<std::string> &items) {
  std::vector<std::string> out;
  for (const auto &item : items) {
    std::string cur;
    for (char c : item + ",") {
      if (c == ',') {
        if (!cur.empty())
          out.push_back(cur);
        cur.clear();
      } else {
        cur += c;
      }
    }
  }
  return out;
}

/// "1-3,7" -> 1 2 3 7; an error names the bad part.
support::Expected<std::vector<uint64_t>> parseSeeds(const std::vector<std::string> &items) {
  std::vector<uint64_t> seeds;
  for (const auto &part : splitList(items)) {
    try {
      size_t dash = part.find('-', 1);
      size_t used = 0;
      uint64_t a = std::stoull(part.substr(0, dash), &used);
      if (used != (dash == std::string::npos ? part.size() : dash))
        throw std::invalid_argument(part);
      uint64_t b = a;
      if (dash != std::string::npos) {
        b = std::stoull(part.substr(dash + 1), &used);
        if (used != part.size() - dash - 1 || b < a || b - a > 10000)
          throw std::invalid_argument(part);
      }
      for (uint64_t s = a; s <= b; ++s)
        seeds.push_back(s);
    } catch (const std::exception &) {
      return support::Error{fmt::format("--seeds: '{}' is not a seed or a range A-B", part)};
    }
  }
  if (seeds.empty())
    return support::Error{"--seeds: no seed given"};
  return seeds;
}

/// The sweep's table (or its JSON): a row per task with its runs, their status and best score.
void printSweep(const std::vector<tune::SweepTask> &tasks, store::Store &store, const std::string &db, const fs::path &root,
                bool json, size_t failed) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto &t : tasks) {
    nlohmann::json row{
        {"subject", t.subject}, {"agent", t.agent}, {"seed", t.seed}, {"runs", t.runs}, {"folder", t.folder.string()}};
    if (!t.error.empty())
      row["error"] = t.error;
    for (int64_t id : t.runs)
      if (auto run = store.run(id)) {
        row["status"] = run->status;
        double best = 0;
        bool any = false;
        for (const auto &s : store.steps(id))
          if (s.status == "ok" && (!any || s.score > best)) {
            best = s.score;
            any = true;
          }
        row["best_score"] = any ? nlohmann::json(best) : nlohmann::json();
      }
    out.push_back(row);
  }
  if (json) {
    std::cout << nlohmann::json{{"db", db}, {"folder", root.string()}, {"tasks", out}}.dump(2) << "\n";
  } else {
    std::cout << fmt::format("{:<22} {:<9} {:>5}  {:>5}  {:<11} {}\n", "subject", "agent", "seed", "run", "status",
                             "best");
    for (const auto &row : out) {
      std::string runs;
      for (const auto &id : row["runs"])
        runs += (runs.empty() ? "" : ",") + std::to_string(id.get<int64_t>());
      std::cout << fmt::format("{:<22} {:<9} {:>5}  {:>5}  {:<11} {}\n",
                               fs::path(row["subject"].get<std::string>()).filename().string(),
                               row["agent"].get<std::string>(), row["seed"].get<uint64_t>(), runs.empty() ? "-" : runs,
                               row.value("status", std::string("-")),
                               row.contains("best_score") && row["best_score"].is_number()
                                   ? fmt::format("{:.3f}", row["best_score"].get<double>())
                                   : row.value("error", std::string("-")));
    }
    std::cout << fmt::format("{} runs in {} ({} tasks failed); the tasks' files: {}\n", tasks.size() - failed, db,
                             failed, root.string());
  }
}

} // namespace

void addSweepCommand(CLI::App &app, Action &action) {
  struct Options {
    std::vector<std::string> apps, kernels, agents, seeds = {"1"}, tuneArgs; // agents: none, the domain's default
    size_t iterations = 10, jobs = 1;
    std::string machine, db = "hone.db", tag;
    bool json = false;
    ExecutorFlags executor;
  };
  auto opts = std::make_shared<Options>();
  auto *cmd = app.add_subcommand(
      "sweep", "Subjects x agents x seeds as one batch (here, or one Slurm array job), gathered into one store");
  cmd->add_option("--apps", opts->apps, "Application models, comma-separated (the mapping domain)");
  cmd->add_option("--kernels", opts->kernels, "Kernel project folders, comma-separated");
  cmd->add_option("--agents", opts->agents, "Agents, comma-separated (default: the domain's default agent)");
  cmd->add_option("--seeds", opts->seeds, "Seeds: 1,2,5 or 1-3")->capture_default_str();
  cmd->add_option("--iterations", opts->iterations, "Evaluations per run")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  cmd->add_option("--machine", opts->machine, "Machine model (mapping)");
  cmd->add_option("--db", opts->db, "The store every run is gathered into")->capture_default_str();
  cmd->add_option("--jobs", opts->jobs, "Runs at a time (here: processes; Slurm: array tasks in flight, 0: no limit)")
      ->capture_default_str();
  cmd->add_option("--tag", opts->tag, "The sweep's name (its folder beside the store); default: from its runs");
  cmd->add_flag("--json", opts->json, "Print one JSON object at the end");
  cmd->add_option("tune-args", opts->tuneArgs, "After --: more hone tune options for every run");
  addExecutorOptions(*cmd, opts->executor,
                     "Where the runs go: local (--jobs processes here), or slurm (one array job; each run's own "
                     "commands then run on its node)");
  cmd->callback([opts, &action] {
    action = [opts]() -> int {
      auto apps = splitList(opts->apps), kernels = splitList(opts->kernels), agents = splitList(opts->agents);
      if (apps.empty() == kernels.empty()) {
        std::cerr << "hone: sweep needs --apps A,B (application models) or --kernels DIR,DIR (kernel projects)\n";
        return kUsage;
      }
      if (agents.empty()) // the default agent of the subjects' domain
        agents.push_back(tune::Registry::instance().defaultAgent(kernels.empty() ? mapping::kDomainName
                                                                                 : kernel::kDomainName));
      auto seeds = parseSeeds(opts->seeds);
      if (!seeds) {
        std::cerr << "hone: " << seeds.error().message << "\n";
        return kUsage;
      }
      for (const auto &a : opts->tuneArgs)
        for (const char *own : {"--db", "--seed", "--agent", "--iterations", "--app", "--kernel", "--executor"})
          if (a == own || a.rfind(std::string(own) + "=", 0) == 0) {
            std::cerr << "hone: sweep sets " << own << " of each run itself; give it to sweep, not after --\n";
            return kUsage;
          }
      if (opts->executor.executor != "local" && opts->executor.executor != "slurm") {
        std::cerr << "hone: --executor: '" << opts->executor.executor << "' is not one of local, slurm\n";
        return kUsage;
      }
      std::error_code ec;
      std::string self = fs::read_symlink("/proc/self/exe", ec).string();
      if (self.empty())
        self = "hone";
      bool kernel = !kernels.empty();
      std::vector<std::string> subjects = kernel ? kernels : apps;
      if (kernel)
        for (auto &k : subjects)
          k = fs::absolute(k, ec).string();
      // The sweep's folder: named by its runs, so the same command finds it again.
      std::string identity = fmt::format("{}|{}|{}", opts->iterations, opts->machine, kernel);
      for (const auto &s : subjects)
        identity += "|" + s;
      for (const auto &a : agents)
        identity += "|" + a;
      for (uint64_t s : *seeds)
        identity += "|" + std::to_string(s);
      for (const auto &a : opts->tuneArgs)
        identity += "|" + a;
      std::string tag =
          opts->tag.empty() ? fmt::format("{:012x}", support::fnv1a64(identity) & 0xffffffffffffull) : opts->tag;
      fs::path root = fs::absolute(tune::besideStore(opts->db, "sweep-" + tag), ec);
      fs::create_directories(root, ec);
      if (ec) {
        std::cerr << "hone: cannot create the sweep's folder " << root.string() << ": " << ec.message() << "\n";
        return kUsage;
      }
      std::vector<tune::SweepTask> tasks =
          tune::planSweep(subjects, kernel ? "--kernel" : "--app", agents, *seeds, opts->iterations, opts->machine,
                          opts->tuneArgs, self, root, kernel ? "best" : "best.map");

      support::installInterruptHandlers();
      std::mutex printing;
      auto heard = [&](size_t i, const support::SubprocessResult &r) {
        std::lock_guard<std::mutex> lock(printing);
        if (!opts->json)
          std::cerr << fmt::format("hone: sweep task {} ({} {} seed {}): {}\n", i,
                                   fs::path(tasks[i].subject).filename().string(), tasks[i].agent, tasks[i].seed,
                                   r.ok() ? "done" : r.describe());
      };
      // An executor kind that runs many commands at once (Slurm: one array job) takes them all.
      const support::ExecutorKind *kind = support::executorKind(opts->executor.executor);
      if (kind && kind->runMany) {
        tune::TuneConfig probe;
        if (!applyExecutorOptions(opts->executor, probe))
          return kUsage;
        std::vector<support::SubprocessOptions> commands;
        for (const auto &t : tasks)
          commands.push_back(t.command);
        auto results = kind->runMany(probe.executorOptions, root.string(), commands, opts->jobs, heard);
        if (!results) {
          std::cerr << "hone: " << results.error().message << "\n";
          return kUsage;
        }
        for (size_t i = 0; i < tasks.size(); ++i)
          tasks[i].result = (*results)[i];
      } else {
        tune::runSweepHere(tasks, opts->jobs, heard);
      }

      auto st = store::Store::open(opts->db);
      if (!st) {
        std::cerr << "hone: --db " << opts->db << ": " << st.error().message << "\n";
        return kUsage;
      }
      size_t failed = tune::gatherSweep(tasks, **st);
      printSweep(tasks, **st, opts->db, root, opts->json, failed);
      if (support::interrupted())
        return 128 + support::interruptSignal();
      return failed == 0 ? kOk : kRejected;
    };
  });
}

} // namespace hone::cli
