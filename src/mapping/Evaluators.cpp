#include "mapping/Evaluators.h"

#include "dsl/Frontend.h"
#include "legion/Compiler.h"
#include "legion/ProfLog.h"
#include "sim/AppCheck.h"
#include "support/DataPaths.h"
#include "support/FileUtil.h"
#include "support/StringUtil.h"
#include "support/Template.h"
#include "support/Executor.h"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>

#include <sys/stat.h>
#include <sys/file.h>
#include <fcntl.h>
#include <unistd.h>

namespace hone::mapping {

namespace fs = std::filesystem;
using engine::EvalResult;
using engine::EvalStatus;

namespace {

std::vector<fs::path> exampleFolders() {
  std::vector<fs::path> folders;
  if (const char *env = std::getenv("HONE_EXAMPLES"); env && *env)
    folders.emplace_back(env);
  folders.emplace_back(support::dataDir("examples/mappers"));
  return folders;
}

} // namespace

std::optional<std::string> findExpertMapper(const std::string &app) {
  for (const auto &f : exampleFolders()) {
    fs::path p = f / (app + ".map");
    std::error_code ec;
    if (fs::is_regular_file(p, ec))
      return p.string();
  }
  return std::nullopt;
}

std::vector<std::string> exampleMappers() {
  std::map<std::string, std::string> byApp; // the first folder that has an app wins
  for (const auto &f : exampleFolders()) {
    std::error_code ec;
    for (const auto &e : fs::directory_iterator(f, ec))
      if (e.path().extension() == ".map" && e.is_regular_file(ec))
        byApp.emplace(e.path().stem().string(), e.path().string());
  }
  std::vector<std::string> out;
  for (const auto &[app, path] : byApp)
    out.push_back(path);
  return out;
}

namespace {

double since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

/// Parses and checks a policy (against the app when given).
dsl::CheckedSource check(const std::string &text, const model::AppModel *app) {
  dsl::CheckedSource checked = dsl::checkSource(support::SourceFile("candidate.map", text));
  if (checked.ok() && app) {
    sim::checkAgainstApp(checked.program, *app, *checked.diags);
    checked.diags->sortByLocation();
  }
  return checked;
}

EvalResult rejected(const dsl::CheckedSource &checked) {
  EvalResult r;
  r.status = EvalStatus::Rejected;
  r.rawOutput = support::renderText(*checked.file, checked.diags->diagnostics());
  for (const auto &d : checked.diags->diagnostics())
    if (d.severity == support::Severity::Error) {
      r.error = d.message;
      break;
    }
  r.profile = support::toJson(*checked.file, checked.diags->diagnostics());
  return r;
}

} // namespace

std::optional<EvalResult> rejectIfInvalid(const std::string &text, const model::AppModel *app) {
  dsl::CheckedSource checked = check(text, app);
  if (checked.ok())
    return std::nullopt;
  return rejected(checked);
}

// ---- the model -----------------------------------------------------------------

ModelEvaluator::ModelEvaluator(const model::MachineModel &machine, const model::AppModel &app,
                               const model::Program &program, double noiseSigma)
    : app_(app), context_(machine, program), noise_(noiseSigma) {}

EvalResult ModelEvaluator::evaluate(const engine::Candidate &candidate) const {
  auto t0 = std::chrono::steady_clock::now();
  dsl::CheckedSource checked = check(candidate.artifact, &app_);
  if (!checked.ok()) {
    EvalResult r = rejected(checked);
    r.seconds = since(t0);
    return r;
  }
  // Noise (if any) is seeded by the text, so a candidate always measures the same.
  uint64_t seed = std::strtoull(engine::contentHash(candidate.artifact).c_str(), nullptr, 16);
  sim::Result sr = sim::simulate(context_, checked.program, {noise_, seed});
  EvalResult r;
  r.profile = sim::toJson(sr);
  r.profile.erase("bottlenecks"); // carried typed
  r.evidence = sim::toEvidence(sr.bottlenecks, "simulator");
  if (!sr.ok) {
    r.status = EvalStatus::RunFailed;
    r.error = sr.error;
    r.rawOutput = sr.errorDetail.empty() ? sr.error : sr.error + "\n(" + sr.errorDetail + ")";
  } else {
    r.metrics = {{"time_s", sr.timeS},
                 {"throughput", sr.throughput},
                 {"lower_bound_s", sr.lowerBoundS},
                 {"bytes_copied", sr.bytesCopied},
                 {"copies", sr.copies}};
    r.score = baseline_ > 0 ? sr.throughput / baseline_ : sr.throughput;
    r.rawOutput = fmt::format("time {:.6g} s, {:.6g} {}", sr.timeS, sr.throughput, sr.throughputUnit);
  }
  r.seconds = since(t0);
  return r;
}

// ---- real runs -----------------------------------------------------------------

support::Expected<CommandEvaluator> CommandEvaluator::make(CommandOptions options) {
  if (options.run.empty())
    return support::Error{"the command evaluator needs a run command (--run)"};
  if (options.metric.empty())
    return support::Error{"the command evaluator needs a metric regex (--metric)"};
  auto re = support::Regex::compile(options.metric);
  if (!re)
    return support::Error{fmt::format("--metric: invalid regex '{}': {}", options.metric, re.error().message)};
  if (re->groups() < 1) // found now, not as "no match" on every candidate
    return support::Error{fmt::format("--metric '{}' has no capture group: put the number in parentheses, e.g. "
                                      "'time: ([0-9.eE+-]+)'",
                                      options.metric)};
  std::error_code ec;
  if (options.workdir.empty()) {
    // Private to this user: a shared, predictable folder in /tmp would let another user plant files
    // (or links) where hone writes the candidates it then builds and runs.
    fs::path mine = fs::temp_directory_path() / fmt::format("hone-{}", ::getuid());
    if (::mkdir(mine.c_str(), 0700) != 0 && errno != EEXIST)
      return support::Error{fmt::format("cannot create {}: {}", mine.string(), std::strerror(errno))};
    struct stat st {};
    if (::lstat(mine.c_str(), &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != ::getuid() ||
        (st.st_mode & 077) != 0)
      return support::Error{fmt::format("{} is not a folder private to this user; remove it, or give --workdir",
                                        mine.string())};
    options.workdir = (mine / "candidates").string();
  }
  // The templates run in the candidate's folder: a relative path would be resolved from there.
  options.workdir = fs::absolute(options.workdir, ec).string();
  // One process per folder: the first takes WORKDIR (an flock on WORKDIR/.hone-lock, released when
  // it exits, however it exits); another takes a folder of its own inside it.
  auto lockIn = [](const fs::path &dir) -> std::shared_ptr<void> {
    std::error_code e;
    fs::create_directories(dir, e);
    int fd = ::open((dir / ".hone-lock").c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (fd < 0)
      return nullptr;
    if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
      ::close(fd);
      return nullptr;
    }
    return std::shared_ptr<void>(new int(fd), [](void *p) {
      ::close(*static_cast<int *>(p));
      delete static_cast<int *>(p);
    });
  };
  std::shared_ptr<void> lock = lockIn(options.workdir);
  if (!lock) { // taken: a folder of this process's (and of this evaluator's, when the process has several)
    fs::path base = options.workdir;
    for (int k = 0; k < 256 && !lock; ++k) {
      options.workdir = (base / (k == 0 ? fmt::format("pid-{}", ::getpid()) : fmt::format("pid-{}-{}", ::getpid(), k)))
                            .string();
      lock = lockIn(options.workdir);
    }
    if (!lock)
      return support::Error{fmt::format("cannot take a work folder in {}: {}", base.string(), std::strerror(errno))};
  }
  return CommandEvaluator(std::move(options), std::move(*re), std::move(lock));
}

namespace {

std::string quote(const std::string &s) {
  std::string out = "'";
  for (char c : s)
    out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

} // namespace

namespace {

/// The last match of `metric` in a run's output (its group 1, else the whole match) as a number.
std::optional<double> lastMatch(const support::Regex &metric, const std::string &output) {
  std::optional<double> value;
  for (const support::RegexMatch &m : metric.findAll(output)) {
    const std::string &text = m.groups.size() > 1 ? m.groups[1] : m.groups[0];
    char *end = nullptr;
    double v = std::strtod(text.c_str(), &end);
    if (end != text.c_str())
      value = v;
  }
  return value;
}

/// The Legion Prof logs a run left in `dir` ({prof}), when it left any, as the result's profile and
/// evidence; the tasks named in `untimed` left out; a log that does not read is a warning.
void readProfLogs(const fs::path &dir, const std::vector<std::string> &untimed, EvalResult &r) {
  std::vector<std::string> logs;
  std::error_code ec;
  for (const auto &e : fs::directory_iterator(dir, ec))
    if (e.path().filename().string().rfind("legion_prof_", 0) == 0)
      logs.push_back(e.path().string());
  std::sort(logs.begin(), logs.end());
  if (logs.empty())
    return;
  std::vector<std::string> warnings;
  auto prof = legion::readLegionProfile(logs, &warnings);
  if (prof) {
    if (!untimed.empty()) {
      auto &tasks = prof->tasks;
      tasks.erase(std::remove_if(tasks.begin(), tasks.end(),
                                 [&](const legion::LegionProfile::Task &t) {
                                   return std::find(untimed.begin(), untimed.end(), t.name) != untimed.end();
                                 }),
                  tasks.end());
    }
    r.profile = legion::toProfileJson(*prof);
    r.profile.erase("bottlenecks"); // carried typed
    r.evidence = legion::evidenceOf(*prof);
    if (!untimed.empty())
      r.profile["untimed_tasks_left_out"] = untimed;
    for (const auto &w : warnings)
      r.profile["warnings"].push_back(w);
  } else {
    r.profile = {{"source", "legion-prof"}, {"warnings", {prof.error().message}}};
  }
}

} // namespace

EvalResult CommandEvaluator::evaluate(const engine::Candidate &candidate) const {
  auto t0 = std::chrono::steady_clock::now();
  dsl::CheckedSource checked = check(candidate.artifact, nullptr);
  if (!checked.ok()) {
    EvalResult r = rejected(checked);
    r.seconds = since(t0);
    return r;
  }
  EvalResult r;
  std::string hash = candidate.hash.empty() ? engine::contentHash(candidate.artifact) : candidate.hash;
  fs::path dir = fs::path(options_.workdir) / hash;
  std::error_code ec;
  fs::create_directories(dir, ec);
  fs::path policy = dir / "mapper.map", cpp = dir / "mapper.cc";
  legion::CompileOptions co;
  co.className = "HoneMapper";
  co.sourceName = "mapper.map";
  std::string why;
  bool wrote = support::writeFileAtomically(policy.string(), candidate.artifact, &why) &&
               support::writeFileAtomically(cpp.string(), legion::compileToCpp(checked.program, co), &why) &&
               support::writeFileAtomically((dir / "hone_mapper_support.h").string(),
                                            legion::supportHeaderText(), &why);
  if (!wrote) {
    r.status = EvalStatus::BuildFailed;
    r.error = "cannot set up the candidate: " + why;
    r.seconds = since(t0);
    return r;
  }
  // {prof}: where a Legion program writes its profiler logs (-lg:prof 1 -lg:prof_logfile {prof});
  // Legion replaces the % with the node. When the run leaves such logs, they are the profile.
  std::map<std::string, std::string> vars = {{"policy", quote(policy.string())},
                                             {"cpp", quote(cpp.string())},
                                             {"dir", quote(dir.string())},
                                             {"hash", hash},
                                             {"prof", quote((dir / "legion_prof_%.gz").string())}};
  auto runOne = [&](const std::string &templ, const std::string &key, std::vector<std::string> clearFirst) {
    support::SubprocessOptions so;
    so.clearFirst = std::move(clearFirst);
    so.argv = {"/bin/sh", "-c", support::fillTemplate(templ, vars)};
    so.workdir = dir.string();
    so.timeoutS = options_.timeoutS;
    so.memoryLimitBytes = options_.memoryLimitBytes;
    return (options_.executor ? options_.executor : support::localExecutor())->run(so, key);
  };
  // The error names the output's telltale line (a compiler's or the runtime's message), so that a
  // rejected mapping reads as what the runtime said, not only as an exit status.
  auto failed = [&](const support::SubprocessResult &sr, EvalStatus status, const char *what) {
    r.status = sr.timedOut ? EvalStatus::TimedOut : status;
    std::string line = support::telltaleLine(sr.output);
    r.error = fmt::format("{} command {}{}", what, sr.describe(), line.empty() ? "" : ": " + line);
    r.rawOutput += sr.output;
  };
  if (!options_.build.empty()) {
    auto built = runOne(options_.build, "build", {});
    r.metrics["build_s"] = built.seconds;
    if (!built.ok()) {
      failed(built, EvalStatus::BuildFailed, "build");
      r.seconds = since(t0);
      return r;
    }
  }
  // --repeats N: N runs, the metric is their median (a real machine is noisy); one failed run fails
  // the candidate, since a mapping that only sometimes works is not one to keep.
  std::optional<double> value;
  std::vector<double> values;
  double runSeconds = 0;
  for (int rep = 0; rep < std::max(1, options_.repeats); ++rep) {
    // Each run's logs are its own.
    auto ran = runOne(options_.run, fmt::format("run-{}", rep), {(dir / "legion_prof_*").string()});
    runSeconds += ran.seconds;
    r.metrics["run_s"] = runSeconds;
    if (!ran.ok()) {
      r.rawOutput.clear();
      failed(ran, EvalStatus::RunFailed, "run");
      if (rep > 0)
        r.error = fmt::format("run {} of {}: {}", rep + 1, options_.repeats, r.error);
      r.seconds = since(t0);
      return r;
    }
    r.rawOutput = ran.output;
    value = lastMatch(metric_, ran.output);
    if (!value || !std::isfinite(*value) || !(*value > 0))
      break; // reported below, from this run's output
    values.push_back(*value);
  }
  readProfLogs(dir, options_.untimedTasks, r);
  if (values.size() > 1 && values.size() == static_cast<size_t>(options_.repeats)) {
    std::sort(values.begin(), values.end());
    const size_t n = values.size();
    value = n % 2 ? values[n / 2] : 0.5 * (values[n / 2 - 1] + values[n / 2]);
    r.metrics["metric_min"] = values.front();
    r.metrics["metric_max"] = values.back();
    r.metrics["repeats"] = static_cast<double>(n);
  }
  double rel = 0, base = 1;
  if (value && std::isfinite(*value) && *value > 0) {
    rel = options_.higherIsBetter ? *value : 1.0 / *value;
    base = baseline_ > 0 ? (options_.higherIsBetter ? baseline_ : 1.0 / baseline_) : 1.0;
  }
  if (!value || !std::isfinite(*value) || !(*value > 0)) {
    r.status = EvalStatus::Invalid;
    r.error = value ? fmt::format("the metric is {}, not a finite positive number", *value)
                    : fmt::format("the run's output has no match of the metric regex '{}'", options_.metric);
  } else if (!std::isfinite(rel / base) || !(rel / base > 0)) {
    // 1e-320 as a time: its inverse overflows; such a number is not a measurement.
    r.status = EvalStatus::Invalid;
    r.error = fmt::format("the metric is {}, which gives no finite score", *value);
  } else {
    r.metrics["metric"] = *value;
    r.score = rel / base;
  }
  r.seconds = since(t0);
  return r;
}

} // namespace hone::mapping
