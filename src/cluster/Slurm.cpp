#include "cluster/Slurm.h"

#include "support/FileUtil.h"
#include "support/Interrupt.h"
#include "support/StringUtil.h"
#include "support/Template.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <sstream>
#include <thread>
#include <unistd.h>

namespace fs = std::filesystem;

namespace hone::cluster {

// ---- settings ------------------------------------------------------------------------

nlohmann::json SlurmSettings::toJson() const {
  return {{"job_dir", jobDir},
          {"run_tag", runTag},
          {"partition", partition},
          {"account", account},
          {"gpus", gpus},
          {"time_limit_s", timeLimitS},
          {"directives", directives},
          {"header", header},
          {"header_file", headerFile},
          {"poll_s", pollS},
          {"pending_timeout_s", pendingTimeoutS},
          {"retries", retries},
          {"bin_dir", binDir}};
}

support::Expected<SlurmSettings> SlurmSettings::fromJson(const nlohmann::json &j) {
  if (!j.is_object())
    return support::Error{"slurm settings: not an object"};
  static const std::vector<std::string> known = {
      "job_dir", "run_tag",     "partition", "account",           "gpus",    "time_limit_s", "directives",
      "header",  "header_file", "poll_s",    "pending_timeout_s", "retries", "bin_dir"};
  for (const auto &[key, value] : j.items())
    if (std::find(known.begin(), known.end(), key) == known.end()) {
      auto near = support::closestMatch(key, known);
      return support::Error{fmt::format("slurm settings: unknown key '{}'{}", key,
                                        near ? fmt::format(" (did you mean '{}'?)", *near) : "")};
    }
  SlurmSettings s;
  try {
    s.jobDir = j.value("job_dir", s.jobDir);
    s.runTag = j.value("run_tag", s.runTag);
    s.partition = j.value("partition", s.partition);
    s.account = j.value("account", s.account);
    s.gpus = j.value("gpus", s.gpus);
    s.timeLimitS = j.value("time_limit_s", s.timeLimitS);
    s.directives = j.value("directives", s.directives);
    s.header = j.value("header", s.header);
    s.headerFile = j.value("header_file", s.headerFile);
    s.pollS = j.value("poll_s", s.pollS);
    s.pendingTimeoutS = j.value("pending_timeout_s", s.pendingTimeoutS);
    s.retries = j.value("retries", s.retries);
    s.binDir = j.value("bin_dir", s.binDir);
  } catch (const std::exception &e) {
    return support::Error{fmt::format("slurm settings: {}", e.what())};
  }
  if (!(s.pollS > 0) || !std::isfinite(s.pollS))
    return support::Error{fmt::format("slurm settings: poll_s is {}, must be above 0", s.pollS)};
  if (s.retries < 0 || s.timeLimitS < 0 || s.pendingTimeoutS < 0)
    return support::Error{"slurm settings: retries, time_limit_s and pending_timeout_s must not be negative"};
  return s;
}

// ---- what Slurm says -----------------------------------------------------------------

namespace {

std::string trimmed(std::string_view s) {
  size_t b = 0, e = s.size();
  while (b < e && std::isspace(static_cast<unsigned char>(s[b])))
    ++b;
  while (e > b && std::isspace(static_cast<unsigned char>(s[e - 1])))
    --e;
  return std::string(s.substr(b, e - b));
}

std::vector<std::string> splitOn(const std::string &s, char sep) {
  std::vector<std::string> out;
  std::string cur;
  for (char c : s) {
    if (c == sep) {
      out.push_back(cur);
      cur.clear();
    } else {
      cur += c;
    }
  }
  out.push_back(cur);
  return out;
}

/// "0:15" (code:signal) into the state.
void readExit(const std::string &text, JobState &st) {
  auto colon = text.find(':');
  try {
    st.exitCode = std::stoi(text.substr(0, colon));
    if (colon != std::string::npos)
      st.signal = std::stoi(text.substr(colon + 1));
  } catch (const std::exception &) {
  }
}

/// "123", an array's task "123_4", or its pending tasks "123_[5-9%2]".
bool isJobId(const std::string &s) {
  return !s.empty() && std::isdigit(static_cast<unsigned char>(s[0])) &&
         std::all_of(s.begin(), s.end(), [](unsigned char c) { return std::isdigit(c) || std::strchr("_[]-%,", c); });
}

} // namespace

std::map<std::string, JobState> parseSqueue(const std::string &text) {
  std::map<std::string, JobState> jobs;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    auto f = splitOn(trimmed(line), '|');
    if (f.size() < 2 || !isJobId(f[0]) || f[1].empty())
      continue;
    JobState st;
    st.id = f[0];
    st.state = f[1];
    if (f.size() > 2)
      st.reason = f[2] == "None" ? "" : f[2];
    if (f.size() > 3)
      st.nodes = f[3];
    jobs[st.id] = st;
  }
  return jobs;
}

std::map<size_t, JobState> arrayTasks(const std::map<std::string, JobState> &queue, const std::string &id,
                                      size_t count, bool *unread) {
  std::map<size_t, JobState> tasks;
  auto number = [](const std::string &t) -> std::optional<size_t> {
    if (t.empty() || t.size() > 9 || !std::all_of(t.begin(), t.end(), [](char c) { return c >= '0' && c <= '9'; }))
      return std::nullopt;
    return static_cast<size_t>(std::stoul(t));
  };
  std::string prefix = id + "_";
  for (const auto &[jid, st] : queue) {
    if (jid.rfind(prefix, 0) != 0)
      continue;
    std::string rest = jid.substr(prefix.size());
    bool ok = true;
    if (rest.size() > 2 && rest.front() == '[' && rest.back() == ']') {
      std::string list = rest.substr(1, rest.size() - 2);
      list = list.substr(0, list.find('%')); // the in-flight limit
      for (const auto &part : splitOn(list, ',')) {
        auto dash = part.find('-');
        auto lo = number(part.substr(0, dash));
        auto hi = dash == std::string::npos ? lo : number(part.substr(dash + 1));
        if (!lo || !hi || *hi < *lo) {
          ok = false;
          continue;
        }
        for (size_t t = *lo; t < count && t <= *hi; ++t)
          tasks[t] = st;
      }
    } else if (auto t = number(rest); t && *t < count) {
      tasks[*t] = st;
    } else {
      ok = ok && t.has_value(); // a task beyond `count` is not one of ours, but it was read
    }
    if (!ok && unread)
      *unread = true;
  }
  return tasks;
}

std::optional<JobState> parseScontrolJob(const std::string &text) {
  // Space-separated Key=Value pairs; values have no spaces in -o (one line) form, except the last
  // few (Command=, WorkDir=) which are not read here.
  JobState st;
  std::istringstream in(text);
  for (std::string word; in >> word;) {
    auto eq = word.find('=');
    if (eq == std::string::npos)
      continue;
    std::string key = word.substr(0, eq), value = word.substr(eq + 1);
    if (key == "JobId" && st.id.empty())
      st.id = value;
    else if (key == "JobState" && st.state.empty())
      st.state = value;
    else if (key == "Reason" && st.reason.empty())
      st.reason = value == "None" ? "" : value;
    else if (key == "ExitCode" && st.exitCode < 0)
      readExit(value, st);
    else if (key == "NodeList" && st.nodes.empty())
      st.nodes = value == "(null)" ? "" : value;
  }
  if (!isJobId(st.id) || st.state.empty())
    return std::nullopt;
  return st;
}

std::optional<JobState> parseSacct(const std::string &text) {
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    auto f = splitOn(trimmed(line), '|');
    if (f.size() < 2 || !isJobId(f[0]))
      continue;
    JobState st;
    st.id = f[0];
    st.state = f[1].substr(0, f[1].find(' ')); // "CANCELLED by 0"
    if (st.state.empty())
      continue;
    if (f.size() > 2)
      readExit(f[2], st);
    if (f.size() > 3)
      st.nodes = f[3];
    return st;
  }
  return std::nullopt;
}

bool resubmittable(const std::string &state) {
  return state == "NODE_FAIL" || state == "BOOT_FAIL" || state == "PREEMPTED" || state == "REQUEUE_FED" ||
         state == "REVOKED";
}

bool finalState(const std::string &state) {
  static const std::vector<std::string> active = {"PENDING",   "RUNNING",   "CONFIGURING",  "COMPLETING",
                                                  "SUSPENDED", "REQUEUED",  "REQUEUE_HOLD", "RESIZING",
                                                  "SIGNALING", "STAGE_OUT", "STOPPED",      "RESV_DEL_HOLD"};
  return std::find(active.begin(), active.end(), state) == active.end();
}

// ---- the job script -------------------------------------------------------------------

std::string timeLimitOf(const SlurmSettings &settings, double timeoutS) {
  double s = settings.timeLimitS > 0 ? settings.timeLimitS : timeoutS > 0 ? timeoutS + 60 : 0;
  if (s <= 0)
    return "";
  return std::to_string(static_cast<long long>(std::ceil(s / 60.0)));
}

namespace {

/// The user's header with its placeholders filled in, or hone's #SBATCH lines from the settings.
std::string jobHeader(const SlurmSettings &settings, const std::string &name, const std::string &time,
                      const std::string &folder) {
  std::string out = "#!/bin/sh\n";
  if (!settings.header.empty()) {
    std::string h = support::fillTemplate(settings.header, {{"name", name}, {"time", time}, {"dir", folder}});
    if (h.rfind("#!", 0) == 0) // the user's interpreter line replaces hone's
      out.clear();
    out += h;
    if (!h.empty() && h.back() != '\n')
      out += '\n';
    return out;
  }
  out += "# hone's job header (sbatch options from --slurm-*); --job-name and --output come from sbatch's\n"
         "# command line.\n";
  if (!settings.partition.empty())
    out += "#SBATCH --partition=" + settings.partition + "\n";
  if (!settings.account.empty())
    out += "#SBATCH --account=" + settings.account + "\n";
  if (!settings.gpus.empty())
    out += "#SBATCH --gpus=" + settings.gpus + "\n";
  if (!time.empty())
    out += "#SBATCH --time=" + time + "\n";
  out += "#SBATCH --nodes=1\n#SBATCH --ntasks=1\n";
  for (const auto &d : settings.directives)
    out += "#SBATCH " + d + "\n";
  return out;
}

/// hone's part of a job: the command with its limits, its output, its exit status and times.
std::string jobBody(const support::SubprocessOptions &p, const std::string &jobFolder, const std::string &indent) {
  std::string out;
  std::string folder = support::shellQuote(jobFolder);
  // The folder is quoted in the message too: inside double quotes, a `$(...)` in its name would run.
  std::string workdir = support::shellQuote(p.workdir.empty() ? "." : p.workdir);
  out += fmt::format("{}cd {} || {{ echo \"hone job: cannot enter the folder \"{} >&2; exit 97; }}\n", indent, workdir,
                     workdir);
  if (p.memoryLimitBytes > 0)
    out += fmt::format("{}ulimit -v {}\n", indent, p.memoryLimitBytes / 1024);
  for (const auto &path : p.clearFirst) {
    bool prefix = !path.empty() && path.back() == '*';
    out += fmt::format("{}rm -f -- {}{}\n", indent,
                       support::shellQuote(prefix ? path.substr(0, path.size() - 1) : path), prefix ? "*" : "");
  }
  std::string command;
  for (const auto &a : p.argv)
    command += (command.empty() ? "" : " ") + support::shellQuote(a);
  if (p.timeoutS > 0)
    command = fmt::format("timeout --kill-after=5 {:.3f} {}", p.timeoutS, command);
  out += indent + "start=$(date +%s.%N)\n";
  out += fmt::format("{}{} > {}/output 2>&1 < /dev/null\n", indent, command, folder);
  out += indent + "rc=$?\n" + indent + "end=$(date +%s.%N)\n";
  out += fmt::format("{}printf '%s %s %s\\n' \"$rc\" \"$start\" \"$end\" > {}/status.part && mv -f {}/status.part "
                     "{}/status\n",
                     indent, folder, folder, folder);
  return out;
}

} // namespace

std::string renderJobScript(const SlurmSettings &settings, const JobSpec &job) {
  return jobHeader(settings, job.name, timeLimitOf(settings, job.process.timeoutS), job.folder) +
         "\n# hone's part: the command, its limits, and its exit status and times for hone to read.\n" +
         jobBody(job.process, job.folder, "");
}

std::string renderArrayScript(const SlurmSettings &settings, const std::string &name, const std::string &folder,
                              const std::vector<std::pair<size_t, JobSpec>> &tasks) {
  double longest = 0;
  for (const auto &[i, t] : tasks)
    longest = t.process.timeoutS > 0 && longest >= 0 ? std::max(longest, t.process.timeoutS) : -1;
  std::string out = jobHeader(settings, name, timeLimitOf(settings, std::max(0.0, longest)), folder);
  out += "\n# hone's part: each array task runs its command, with its limits, and writes its exit status\n"
         "# and times for hone to read.\ncase \"$SLURM_ARRAY_TASK_ID\" in\n";
  for (const auto &[i, t] : tasks)
    out += fmt::format("{})\n{}  ;;\n", i, jobBody(t.process, t.folder, "  "));
  out += "*)\n  echo \"hone job: no task $SLURM_ARRAY_TASK_ID\" >&2\n  exit 98\n  ;;\nesac\n";
  return out;
}

// ---- the executor ----------------------------------------------------------------------

support::Expected<std::shared_ptr<SlurmExecutor>> SlurmExecutor::make(SlurmSettings settings) {
  if (settings.jobDir.empty())
    return support::Error{"--slurm-job-dir: the job folder is not set"};
  std::error_code ec;
  settings.jobDir = fs::absolute(settings.jobDir, ec).string();
  fs::create_directories(fs::path(settings.jobDir) / (settings.runTag.empty() ? "untagged" : settings.runTag), ec);
  if (ec)
    return support::Error{fmt::format("--slurm-job-dir {}: cannot create it: {}", settings.jobDir, ec.message())};
  std::shared_ptr<SlurmExecutor> ex(new SlurmExecutor(std::move(settings)));
  auto probe = ex->slurm({ex->tool("sbatch"), "--version"}, 30);
  if (!probe.ok())
    return support::Error{fmt::format("--executor slurm: sbatch does not run ({}{}); is Slurm installed and "
                                      "SLURM_CONF set? (scripts/install-deps.sh installs slurm-wlm)",
                                      probe.describe(),
                                      ex->settings_.binDir.empty() ? "" : " in " + ex->settings_.binDir)};
  return ex;
}

SlurmExecutor::~SlurmExecutor() { cancelAll(); }

std::string SlurmExecutor::describe() const {
  std::string d = "slurm";
  if (!settings_.partition.empty())
    d += " (partition " + settings_.partition + ")";
  return d + ", jobs in " + (fs::path(settings_.jobDir) / settings_.runTag).string();
}

std::string SlurmExecutor::sharedDir() const { return (fs::path(settings_.jobDir) / settings_.runTag).string(); }

std::string SlurmExecutor::activity() const {
  return fmt::format("{} jobs submitted, {} found from an earlier process", submitted(), adopted());
}

void registerSlurmExecutor() {
  support::registerExecutorKind(
      {"slurm",
       [](nlohmann::json &options,
          const std::string &besideStore) -> support::Expected<std::shared_ptr<support::CommandExecutor>> {
         auto settings = SlurmSettings::fromJson(options);
         if (!settings)
           return settings.error();
         std::error_code ec;
         if (settings->jobDir.empty())
           settings->jobDir = besideStore;
         settings->jobDir = fs::absolute(settings->jobDir, ec).string();
         if (settings->runTag.empty()) {
           char host[256] = {};
           (void)gethostname(host, sizeof host - 1);
           auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(
               std::chrono::system_clock::now().time_since_epoch());
           settings->runTag = fmt::format("{}-{}-{}", host[0] ? host : "host", ::getpid(), ms.count());
         }
         options = settings->toJson();
         auto made = SlurmExecutor::make(*settings);
         if (!made)
           return made.error();
         return std::shared_ptr<support::CommandExecutor>(*made);
       },
       [](const nlohmann::json &options, const std::string &folder,
          const std::vector<support::SubprocessOptions> &commands, size_t inFlight,
          const std::function<void(size_t, const support::SubprocessResult &)> &heard)
           -> support::Expected<std::vector<support::SubprocessResult>> {
         auto settings = SlurmSettings::fromJson(options);
         if (!settings)
           return settings.error();
         settings->jobDir = settings->jobDir.empty() ? folder : settings->jobDir;
         settings->runTag = "jobs"; // the same for every run of the batch: a restarted one adopts its array
         auto made = SlurmExecutor::make(*settings);
         if (!made)
           return made.error();
         return (*made)->runArray(commands, "sweep", inFlight, heard);
       }});
}

std::string SlurmExecutor::tool(const char *name) const {
  return settings_.binDir.empty() ? std::string(name) : (fs::path(settings_.binDir) / name).string();
}

support::SubprocessResult SlurmExecutor::slurm(std::vector<std::string> argv, double timeoutS) const {
  support::SubprocessOptions o;
  o.argv = std::move(argv);
  o.timeoutS = timeoutS;
  o.outputLimitBytes = 4 << 20;
  o.runWhenInterrupted = true; // scancel after Ctrl-C; the queries are short
  return support::runSubprocess(o);
}

std::string SlurmExecutor::folderFor(const support::SubprocessOptions &options, const std::string &key) {
  std::string identity = options.workdir;
  for (const auto &a : options.argv)
    identity += std::string(1, '\0') + a;
  std::string label;
  for (char c : key)
    label += std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.' ? c : '_';
  if (label.empty())
    label = "command";
  std::string base = fmt::format("{}-{:012x}", label.substr(0, 40), support::fnv1a64(identity) & 0xffffffffffffull);
  int n;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    n = occurrences_[base]++;
  }
  return (fs::path(settings_.jobDir) / settings_.runTag / fmt::format("{}-{}", base, n)).string();
}

void SlurmExecutor::refresh(std::chrono::steady_clock::time_point after, bool *known) {
  // (under mutex_)
  auto now = std::chrono::steady_clock::now();
  if (now - snapshotAt_ >= std::chrono::duration<double>(settings_.pollS) || snapshotAt_ <= after) {
    auto r = slurm({tool("squeue"), "-h", "-u", std::to_string(::getuid()), "-o", "%i|%T|%r|%N"});
    snapshotOk_ = r.ok();
    if (snapshotOk_)
      snapshot_ = parseSqueue(r.output);
    snapshotAt_ = std::chrono::steady_clock::now();
  }
  *known = snapshotOk_ && snapshotAt_ > after;
}

std::map<size_t, JobState> SlurmExecutor::arrayQueued(const std::string &id, size_t count,
                                                      std::chrono::steady_clock::time_point after, bool *known,
                                                      bool *any) {
  std::lock_guard<std::mutex> lock(mutex_);
  refresh(after, known);
  std::string prefix = id + "_";
  *any = false;
  for (const auto &[jid, st] : snapshot_)
    if (jid == id || jid.rfind(prefix, 0) == 0)
      *any = true;
  return arrayTasks(snapshot_, id, count);
}

std::optional<JobState> SlurmExecutor::queued(const std::string &id, std::chrono::steady_clock::time_point after,
                                              bool *known) {
  std::lock_guard<std::mutex> lock(mutex_);
  refresh(after, known);
  auto it = snapshot_.find(id);
  if (it == snapshot_.end())
    return std::nullopt;
  return it->second;
}

std::optional<JobState> SlurmExecutor::finished(const std::string &id) const {
  auto r = slurm({tool("scontrol"), "show", "job", "-o", id});
  if (r.ok())
    if (auto st = parseScontrolJob(r.output))
      return st;
  auto a = slurm({tool("sacct"), "-n", "-P", "-X", "-o", "JobID,State,ExitCode,NodeList", "-j", id});
  if (a.ok())
    return parseSacct(a.output);
  return std::nullopt;
}

support::Expected<std::string> SlurmExecutor::submit(const JobSpec &job) {
  std::string why;
  std::string script = (fs::path(job.folder) / "job.sh").string();
  if (!support::writeFileAtomically(script, renderJobScript(settings_, job), &why))
    return support::Error{"cannot write the job script: " + why};
  std::vector<std::string> argv = {tool("sbatch"), "--parsable", "--job-name=" + job.name,
                                   "--output=" + (fs::path(job.folder) / "slurm.out").string()};
  argv.push_back(script);
  auto r = slurm(argv, 120);
  std::string first = trimmed(r.output.substr(0, r.output.find(';')));
  // sbatch --parsable prints "ID" or "ID;cluster" (warnings may come first, on lines of their own)
  std::string id;
  std::istringstream in(r.output);
  for (std::string line; std::getline(in, line);) {
    std::string t = trimmed(line.substr(0, line.find(';')));
    if (isJobId(t))
      id = t;
  }
  if (!r.ok() || id.empty()) {
    std::string line = support::telltaleLine(r.output);
    return support::Error{fmt::format("sbatch {}{}", r.describe(), line.empty() ? "" : ": " + line)};
  }
  if (!support::writeFileAtomically((fs::path(job.folder) / "jobid").string(), id + "\n", &why))
    return support::Error{fmt::format("job {} was submitted but its id cannot be recorded ({}); cancelled", id,
                                      why)}; // (the caller cancels it)
  ++submitted_;
  return id;
}

void SlurmExecutor::cancel(const std::string &id) const { (void)slurm({tool("scancel"), id}, 60); }

void SlurmExecutor::cancelAll() {
  std::set<std::string> ids;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    ids = inFlight_;
  }
  for (const auto &id : ids)
    cancel(id);
}

namespace {

/// The result a finished job left in its folder: nullopt when it wrote no status.
std::optional<support::SubprocessResult> resultIn(const fs::path &folder, const support::SubprocessOptions &o) {
  auto status = support::readFile((folder / "status").string());
  if (!status)
    return std::nullopt;
  std::istringstream in(*status);
  int rc = -1;
  double start = 0, end = 0;
  if (!(in >> rc >> start >> end))
    return std::nullopt;
  support::SubprocessResult r;
  r.started = true;
  r.seconds = std::max(0.0, end - start);
  bool cut = false; // only the tail is read: a job's output may be larger than memory should hold
  auto output = support::readFileTail((folder / "output").string(), o.outputLimitBytes, &cut);
  r.output = output ? *output : std::string();
  r.outputTruncated = output && cut;
  // `timeout` exits 124 (137 after the KILL) when the limit ends the command.
  if (o.timeoutS > 0 && (rc == 124 || rc == 137) && r.seconds >= 0.98 * o.timeoutS)
    r.timedOut = true;
  else if (rc > 128 && rc < 128 + 65) // the shell reports a command a signal ended as 128 + the signal
    r.signal = rc - 128;
  else
    r.exitCode = rc;
  return r;
}

} // namespace

std::optional<std::string> statusContradicted(const support::SubprocessResult &r, double seenRunningS, double pollS) {
  double slack = 1.0 + 2 * pollS;
  if (!r.started || r.seconds + slack >= seenRunningS)
    return std::nullopt;
  return fmt::format("its status file says the command took {:.3f} s, but the job was seen running for {:.1f} s: "
                     "the status was not written by hone's job script (the command may have written it, or "
                     "ended the script), and is not trusted",
                     r.seconds, seenRunningS);
}

namespace {

support::SubprocessResult notRun(std::string error) {
  support::SubprocessResult r;
  r.error = std::move(error);
  return r;
}

std::string tailOf(const fs::path &file) {
  auto text = support::readFileTail(file.string(), 64 * 1024);
  return text ? support::telltaleLine(*text) : std::string();
}

} // namespace

/// The job a killed hone submitted for this folder, when it can still give a result: the recorded id, or
/// one found by name in the queue (killed before the id was written); "" when there is none to wait for
/// (an id whose job left the queue without a result is set aside, so that the command is submitted again).
std::string SlurmExecutor::adoptable(const std::string &dir, const std::string &name,
                                     const support::SubprocessOptions &options) {
  fs::path folder(dir);
  std::error_code ec;
  std::string id;
  if (auto recorded = support::readFile((folder / "jobid").string()))
    id = trimmed(*recorded);
  else if (fs::exists(folder / "job.sh")) { // submitted, killed before the id was written: find it by name
    auto r = slurm({tool("squeue"), "-h", "-u", std::to_string(::getuid()), "-n", name, "-o", "%i"});
    std::istringstream in(r.ok() ? r.output : "");
    std::string first;
    if (in >> first && isJobId(first))
      id = first;
  }
  if (id.empty())
    return id;
  bool known = false;
  auto q = queued(id, std::chrono::steady_clock::now(), &known);
  if (q || (known && resultIn(folder, options)) || !known) { // a queue that does not answer: wait for it
    ++adopted_;
    return id;
  }
  fs::rename(folder / "jobid", folder / fmt::format("jobid.{}", id), ec);
  return "";
}

support::SubprocessResult SlurmExecutor::jobEndedWithoutResult(const std::string &what,
                                                               const std::optional<JobState> &st,
                                                               const std::string &slurmOut, int attempts,
                                                               double ranS) const {
  std::string state = st ? st->state : "UNKNOWN";
  support::SubprocessResult r;
  r.seconds = ranS;
  r.started = true; // its end is not known: exitCode stays -1 and describe() gives the error
  if (state == "TIMEOUT") {
    r.timedOut = true;
    return r;
  }
  std::string why = tailOf(slurmOut);
  r.error = fmt::format(
      "{} ended {} without a result{}{}{}", what, state, st && !st->nodes.empty() ? " on " + st->nodes : "",
      attempts > 0 ? fmt::format(" after {} resubmission(s)", attempts) : "", why.empty() ? "" : ": " + why);
  if (state == "OUT_OF_MEMORY")
    r.error += " (the job's memory limit; raise it with --slurm-sbatch=--mem=...)";
  return r;
}

support::SubprocessResult SlurmExecutor::run(const support::SubprocessOptions &options, const std::string &key) {
  using Clock = std::chrono::steady_clock;
  auto seconds = [](Clock::time_point a) { return std::chrono::duration<double>(Clock::now() - a).count(); };
  if (options.argv.empty())
    return notRun("empty command");
  fs::path folder = folderFor(options, key);
  std::error_code ec;
  fs::create_directories(folder, ec);
  if (ec)
    return notRun(fmt::format("cannot create the job folder {}: {}", folder.string(), ec.message()));
  JobSpec job;
  job.folder = folder.string();
  job.name = "hone-" + folder.filename().string();
  job.process = options;

  // A hone that was killed finds its jobs again: a result already written is the result; a job
  // still queued or running is waited for; one that ended without a result runs again.
  if (auto done = resultIn(folder, options)) {
    ++adopted_;
    return *done;
  }
  std::string id = adoptable(folder.string(), job.name, options);
  int attempts = 0;
  auto submitNew = [&]() -> std::optional<support::SubprocessResult> {
    auto sent = submit(job);
    if (!sent) {
      if (sent.error().message.rfind("job ", 0) == 0) // submitted but not recorded
        cancel(sent.error().message.substr(4, sent.error().message.find(' ', 4) - 4));
      return notRun(sent.error().message);
    }
    id = *sent;
    return std::nullopt;
  };
  if (id.empty())
    if (auto failed = submitNew())
      return *failed;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    inFlight_.insert(id);
  }
  struct Forget {
    SlurmExecutor &ex;
    const std::string &id;
    ~Forget() {
      std::lock_guard<std::mutex> lock(ex.mutex_);
      ex.inFlight_.erase(id);
    }
  };
  auto since = Clock::now();
  // (time points with flags, not optionals: g++ 12 warns falsely about optional time points)
  Clock::time_point runningSince{}, lastSeenRunning{}, goneSince{};
  bool running = false, gone = false;
  double nap = 0.05;
  // The status a job leaves is read once the job has left the queue (a program the job runs can reach
  // its job's folder, and a status written while it runs would be taken as its result), and believed
  // only as far as Slurm agrees: a command cannot have taken less time than hone saw its job running.
  auto taken = [&](support::SubprocessResult r) {
    Forget forget{*this, id};
    double seen = running ? std::chrono::duration<double>(lastSeenRunning - runningSince).count() : 0;
    if (auto why = statusContradicted(r, seen, settings_.pollS)) {
      support::SubprocessResult bad = notRun(fmt::format("Slurm job {}: {}", id, *why));
      bad.started = true;
      bad.output = r.output;
      return bad;
    }
    return r;
  };
  for (;;) {
    std::this_thread::sleep_for(std::chrono::duration<double>(nap));
    nap = std::min(nap * 1.5, std::min(0.5, settings_.pollS));
    if (support::interrupted()) {
      Forget forget{*this, id};
      cancel(id);
      support::SubprocessResult r;
      r.started = true;
      r.interrupted = true;
      r.seconds = seconds(since);
      return r;
    }
    bool fresh = false;
    auto q = queued(id, since, &fresh);
    if (!fresh || (q && q->state == "COMPLETING")) // a queue that does not answer: the status decides
      if (auto done = resultIn(folder, options))
        return taken(*done);
    if (q) {
      gone = false;
      if (q->state == "RUNNING" || q->state == "COMPLETING") {
        if (!running) {
          running = true;
          runningSince = Clock::now();
        }
        if (q->state == "RUNNING")
          lastSeenRunning = Clock::now();
        // Slurm's own limit (--time) is in minutes; a command that outlives its limit by far is stopped here.
        if (options.timeoutS > 0 && seconds(runningSince) > options.timeoutS + 120) {
          Forget forget{*this, id};
          cancel(id);
          support::SubprocessResult r;
          r.started = true;
          r.timedOut = true;
          r.seconds = seconds(runningSince);
          return r;
        }
      } else if (q->state == "PENDING" && settings_.pendingTimeoutS > 0 && seconds(since) > settings_.pendingTimeoutS) {
        Forget forget{*this, id};
        cancel(id);
        return notRun(fmt::format("Slurm job {} was still pending after {:.0f} s ({}); cancelled", id,
                                  settings_.pendingTimeoutS, q->reason.empty() ? "no reason given" : q->reason));
      }
      continue;
    }
    if (!fresh)
      continue;
    // Gone from the queue: its status file may take a moment to show on a shared filesystem.
    if (!gone) {
      gone = true;
      goneSince = Clock::now();
    }
    if (auto done = resultIn(folder, options))
      return taken(*done);
    if (seconds(goneSince) < std::max(1.0, 2 * settings_.pollS))
      continue;
    auto st = finished(id);
    std::string state = st ? st->state : "UNKNOWN";
    if (resubmittable(state) && attempts < settings_.retries) {
      ++attempts;
      {
        std::lock_guard<std::mutex> lock(mutex_);
        inFlight_.erase(id);
      }
      fs::rename(folder / "jobid", folder / fmt::format("jobid.{}", id), ec);
      if (auto failed = submitNew())
        return *failed;
      {
        std::lock_guard<std::mutex> lock(mutex_);
        inFlight_.insert(id);
      }
      gone = running = false;
      since = Clock::now();
      continue;
    }
    Forget forget{*this, id};
    return jobEndedWithoutResult("Slurm job " + id, st, (folder / "slurm.out").string(), attempts,
                                 running ? seconds(runningSince) : 0);
  }
}

support::Expected<std::string> SlurmExecutor::submitArray(const std::vector<support::SubprocessOptions> &commands,
                                                         const std::vector<bool> &done, const std::string &folder,
                                                         const std::string &name, size_t inFlight) {
  std::error_code ec;
  std::vector<std::pair<size_t, JobSpec>> tasks;
  std::string list;
  for (size_t i = 0; i < commands.size(); ++i)
    if (!done[i]) {
      JobSpec t;
      t.name = name;
      t.folder = (fs::path(folder) / fmt::format("task-{}", i)).string();
      fs::create_directories(t.folder, ec);
      t.process = commands[i];
      tasks.emplace_back(i, std::move(t));
      list += (list.empty() ? "" : ",") + std::to_string(i);
    }
  std::string why;
  std::string script = (fs::path(folder) / "job.sh").string();
  if (!support::writeFileAtomically(script, renderArrayScript(settings_, name, folder, tasks), &why))
    return support::Error{"cannot write the job script: " + why};
  auto r = slurm({tool("sbatch"), "--parsable", "--job-name=" + name,
                  "--array=" + list + (inFlight > 0 ? fmt::format("%{}", inFlight) : ""),
                  "--output=" + (fs::path(folder) / "slurm-%a.out").string(), script},
                 120);
  std::string id;
  std::istringstream in(r.output);
  for (std::string line; std::getline(in, line);)
    if (std::string t = trimmed(line.substr(0, line.find(';'))); isJobId(t))
      id = t;
  if (!r.ok() || id.empty() || !support::writeFileAtomically((fs::path(folder) / "jobid").string(), id + "\n", &why)) {
    if (!id.empty())
      cancel(id);
    std::string line = support::telltaleLine(r.output);
    return support::Error{fmt::format("sbatch {}{}", r.describe(), line.empty() ? why : ": " + line)};
  }
  ++submitted_;
  return id;
}

std::vector<support::SubprocessResult>
SlurmExecutor::runArray(const std::vector<support::SubprocessOptions> &commands, const std::string &key,
                        size_t inFlight, const std::function<void(size_t, const support::SubprocessResult &)> &onDone) {
  using Clock = std::chrono::steady_clock;
  std::vector<support::SubprocessResult> results(commands.size());
  if (commands.empty())
    return results;
  // The array's folder is named by all its commands; task i's files are in task-i.
  support::SubprocessOptions all;
  for (const auto &c : commands) {
    all.argv.push_back(c.workdir);
    all.argv.insert(all.argv.end(), c.argv.begin(), c.argv.end());
  }
  fs::path folder = folderFor(all, key);
  std::error_code ec;
  fs::create_directories(folder, ec);
  auto taskFolder = [&](size_t i) { return folder / fmt::format("task-{}", i); };
  std::vector<bool> done(commands.size(), false);
  size_t left = commands.size();
  auto finish = [&](size_t i, support::SubprocessResult r) {
    results[i] = std::move(r);
    done[i] = true;
    --left;
    if (onDone)
      onDone(i, results[i]);
  };
  // As with run(): a task's status is read once the task has left the queue (its command can reach its
  // folder), and believed only as far as the time hone saw the task running agrees.
  std::vector<Clock::time_point> runningSince(commands.size()), lastSeenRunning(commands.size());
  std::vector<bool> running(commands.size(), false);
  std::string id;
  auto collect = [&](const std::map<size_t, JobState> *queue) {
    for (size_t i = 0; i < commands.size(); ++i) {
      if (done[i])
        continue;
      if (queue)
        if (auto q = queue->find(i); q != queue->end() && q->second.state != "COMPLETING")
          continue;
      auto r = resultIn(taskFolder(i), commands[i]);
      if (!r)
        continue;
      double seen = running[i] ? std::chrono::duration<double>(lastSeenRunning[i] - runningSince[i]).count() : 0;
      if (auto why = statusContradicted(*r, seen, settings_.pollS)) {
        support::SubprocessResult bad = notRun(fmt::format("Slurm array task {}_{}: {}", id, i, *why));
        bad.started = true;
        bad.output = r->output;
        finish(i, std::move(bad));
      } else {
        finish(i, std::move(*r));
      }
    }
  };
  auto watch = [&](const std::map<size_t, JobState> &queue) {
    for (const auto &[i, st] : queue) {
      if (st.state != "RUNNING" && st.state != "COMPLETING")
        continue;
      if (!running[i]) {
        running[i] = true;
        runningSince[i] = Clock::now();
      }
      if (st.state == "RUNNING")
        lastSeenRunning[i] = Clock::now();
    }
  };
  // What an earlier hone's array left: tasks still in its queue are waited for, not read.
  bool known = false, any = false;
  std::map<size_t, JobState> queue;
  if (auto recorded = support::readFile((folder / "jobid").string())) {
    id = trimmed(*recorded);
    queue = arrayQueued(id, commands.size(), Clock::now(), &known, &any);
  }
  collect(id.empty() || known ? &queue : nullptr);
  if (left < commands.size())
    adopted_ += commands.size() - left;
  if (left == 0)
    return results;

  std::string name = "hone-" + folder.filename().string();
  if (!id.empty()) {
    if (any || !known) {
      ++adopted_;
    } else {
      fs::rename(folder / "jobid", folder / fmt::format("jobid.{}", id), ec);
      id.clear();
    }
  }
  if (id.empty()) { // an array of the tasks without a result
    auto sent = submitArray(commands, done, folder.string(), name, inFlight);
    if (!sent) {
      for (size_t i = 0; i < commands.size(); ++i)
        if (!done[i])
          finish(i, notRun(sent.error().message));
      return results;
    }
    id = *sent;
  }
  {
    std::lock_guard<std::mutex> lock(mutex_);
    inFlight_.insert(id);
  }
  auto since = Clock::now();
  Clock::time_point goneSince{};
  bool gone = false;
  while (left > 0) {
    std::this_thread::sleep_for(std::chrono::duration<double>(std::min(0.5, settings_.pollS)));
    queue = arrayQueued(id, commands.size(), since, &known, &any);
    if (known) // a queue that did not answer is an old snapshot: nothing is seen running by it
      watch(queue);
    collect(known ? &queue : nullptr); // a queue that does not answer: the statuses decide
    if (left == 0)
      break;
    if (support::interrupted()) {
      cancel(id);
      for (size_t i = 0; i < commands.size(); ++i)
        if (!done[i]) {
          support::SubprocessResult r;
          r.started = true;
          r.interrupted = true;
          finish(i, std::move(r));
        }
      break;
    }
    if (any || !known) {
      gone = false;
      continue;
    }
    if (!gone) {
      gone = true;
      goneSince = Clock::now();
    }
    if (std::chrono::duration<double>(Clock::now() - goneSince).count() < std::max(1.0, 2 * settings_.pollS))
      continue;
    queue.clear();
    collect(&queue);
    for (size_t i = 0; i < commands.size(); ++i)
      if (!done[i])
        finish(i, jobEndedWithoutResult(fmt::format("Slurm array task {}_{}", id, i),
                                        finished(fmt::format("{}_{}", id, i)),
                                        (folder / fmt::format("slurm-{}.out", i)).string(), 0, 0));
  }
  std::lock_guard<std::mutex> lock(mutex_);
  inFlight_.erase(id);
  return results;
}

} // namespace hone::cluster
