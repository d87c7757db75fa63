#include "tune/Sweep.h"

#include "support/FileUtil.h"
#include "support/Interrupt.h"
#include "support/StringUtil.h"

#include <fmt/format.h>

#include <atomic>
#include <cstdlib>
#include <sstream>
#include <thread>

namespace hone::tune {

namespace fs = std::filesystem;

std::vector<SweepTask> planSweep(const std::vector<std::string> &subjects, const std::string &subjectFlag,
                                 const std::vector<std::string> &agents, const std::vector<uint64_t> &seeds,
                                 size_t iterations, const std::string &machine,
                                 const std::vector<std::string> &tuneArgs, const std::string &self,
                                 const fs::path &root, const std::string &bestName) {
  std::error_code ec;
  std::vector<SweepTask> tasks;
  for (const auto &subject : subjects)
    for (const auto &agent : agents)
      for (uint64_t seed : seeds) {
        SweepTask t;
        t.subject = subject;
        t.agent = agent;
        t.seed = seed;
        t.folder = root / fmt::format("task-{}", tasks.size());
        fs::create_directories(t.folder, ec);
        std::vector<std::string> argv = {self,
                                         "tune",
                                         subjectFlag,
                                         subject,
                                         "--agent",
                                         agent,
                                         "--seed",
                                         std::to_string(seed),
                                         "--iterations",
                                         std::to_string(iterations),
                                         "--db",
                                         (t.folder / "tune.db").string(),
                                         "--workdir",
                                         (t.folder / "work").string(),
                                         "--out",
                                         (t.folder / bestName).string(),
                                         "--json"};
        if (!machine.empty())
          argv.insert(argv.end(), {"--machine", machine});
        argv.insert(argv.end(), tuneArgs.begin(), tuneArgs.end());
        t.command.argv = argv;
        t.command.workdir = t.folder.string();
        t.command.outputLimitBytes = 4 << 20;
        tasks.push_back(std::move(t));
      }
  return tasks;
}

void runSweepHere(std::vector<SweepTask> &tasks, size_t jobs,
                  const std::function<void(size_t, const support::SubprocessResult &)> &heard) {
  std::atomic<size_t> next{0};
  auto worker = [&]() {
    for (size_t i; (i = next++) < tasks.size() && !support::interrupted();) {
      SweepTask &t = tasks[i];
      auto status = support::readFile((t.folder / "status").string());
      if (status && !status->empty()) {
        t.result.started = true;
        t.result.exitCode = std::atoi(status->c_str());
        continue;
      }
      t.result = support::runSubprocess(t.command);
      (void)support::writeFileAtomically((t.folder / "output").string(), t.result.output, nullptr);
      if (!t.result.interrupted && t.result.started)
        (void)support::writeFileAtomically(
            (t.folder / "status").string(),
            std::to_string(t.result.signal ? 128 + t.result.signal : t.result.exitCode) + "\n", nullptr);
      heard(i, t.result);
    }
  };
  std::vector<std::thread> pool;
  for (size_t w = 0; w < std::max<size_t>(1, std::min(jobs, tasks.size())); ++w)
    pool.emplace_back(worker);
  for (auto &th : pool)
    th.join();
}

size_t gatherSweep(std::vector<SweepTask> &tasks, store::Store &store) {
  size_t failed = 0;
  for (auto &t : tasks) {
    if (auto gathered = support::readFile((t.folder / "gathered").string())) {
      std::istringstream in(*gathered);
      for (int64_t id; in >> id;)
        t.runs.push_back(id);
      continue;
    }
    if (!fs::exists(t.folder / "tune.db")) {
      t.error = t.result.interrupted ? "interrupted" : "no run: " + t.result.describe();
      continue;
    }
    auto from = store::Store::open((t.folder / "tune.db").string());
    if (!from) {
      t.error = from.error().message;
      continue;
    }
    std::string ids;
    for (const auto &run : (*from)->runs()) {
      auto id = store.importRun(**from, run.id);
      if (!id) {
        t.error = id.error().message;
        break;
      }
      t.runs.push_back(*id);
      ids += std::to_string(*id) + "\n";
    }
    if (t.error.empty())
      (void)support::writeFileAtomically((t.folder / "gathered").string(), ids, nullptr);
  }
  for (auto &t : tasks) {
    if (t.error.empty() && t.result.started && !t.result.ok()) {       // `hone tune` said why on its stderr
      auto output = support::readFile((t.folder / "output").string()); // here; a job's output is in its result
      std::string why = support::telltaleLine(!t.result.output.empty() ? t.result.output : output ? *output : "");
      t.error = "hone tune " + t.result.describe() + (why.empty() ? "" : ": " + why);
    }
    failed += !t.error.empty() || t.runs.empty();
  }
  return failed;
}

} // namespace hone::tune
