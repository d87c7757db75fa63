#include "support/Subprocess.h"

#include "support/Executor.h"
#include "support/Interrupt.h"

#include <fmt/format.h>

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstring>
#include <dirent.h>
#include <fcntl.h>
#include <filesystem>
#include <poll.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

namespace hone::support {

std::string SubprocessResult::describe() const {
  if (!started)
    return "could not start: " + error;
  if (timedOut)
    return fmt::format("timed out after {:.1f} s", seconds);
  if (interrupted)
    return "interrupted (hone was stopped)";
  if (signal != 0)
    return fmt::format("killed by signal {} ({})", signal, strsignal(signal));
  if (exitCode < 0 && !error.empty()) // started, but its end is not known (a batch job that vanished)
    return error;
  return fmt::format("exit {}", exitCode);
}

namespace {

/// The command the keeper runs (0 until it is forked).
volatile sig_atomic_t keptCommand = 0;

/// The keeper's answer to hone's death or a time limit: the command goes, and the keeper then clears
/// whatever the command left (sweepDescendants) before it ends.
void killCommand(int) {
  if (keptCommand > 0)
    kill(static_cast<pid_t>(keptCommand), SIGKILL);
  else
    kill(0, SIGKILL);
}

/// Reads "/proc/<pid>/stat"'s parent and group ids with async-signal-safe calls only (the keeper is a
/// fork of a process with threads and never execs: no malloc, no stdio).
bool parentAndGroup(const char *pid, pid_t *ppid, pid_t *pgrp) {
  char path[64] = "/proc/";
  size_t n = 6;
  for (const char *c = pid; *c && n < 40; ++c)
    path[n++] = *c;
  const char *tail = "/stat";
  for (const char *c = tail; *c; ++c)
    path[n++] = *c;
  path[n] = 0;
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return false;
  char buf[512];
  ssize_t got = read(fd, buf, sizeof buf - 1);
  close(fd);
  if (got <= 0)
    return false;
  buf[got] = 0;
  // "pid (comm) state ppid pgrp ...": the name may hold spaces and parentheses; the last ')' ends it.
  char *close = nullptr;
  for (char *c = buf; *c; ++c)
    if (*c == ')')
      close = c;
  if (!close)
    return false;
  char *c = close + 1;
  long fields[2] = {0, 0};
  int field = -1; // the state comes first
  while (*c && field < 2) {
    while (*c == ' ')
      ++c;
    if (field >= 0) {
      long v = 0;
      while (*c >= '0' && *c <= '9')
        v = v * 10 + (*c++ - '0');
      fields[field] = v;
    } else {
      while (*c && *c != ' ')
        ++c;
    }
    ++field;
  }
  *ppid = static_cast<pid_t>(fields[0]);
  *pgrp = static_cast<pid_t>(fields[1]);
  return field == 2;
}

/// The keeper, a child subreaper, after its command ended: every process the command left -- in the
/// keeper's group, or orphaned to the keeper after leaving the group with setsid() -- is killed and
/// reaped, pass after pass until none is left (a bounded number of passes against a fork bomb).
void sweepDescendants() {
  pid_t self = getpid(), group = getpgrp();
  for (int pass = 0; pass < 2000; ++pass) {
    bool found = false;
    int dir = open("/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dir < 0)
      return;
    alignas(8) char entries[8192];
    for (ssize_t n; (n = getdents64(dir, entries, sizeof entries)) > 0;)
      for (ssize_t at = 0; at < n;) {
        auto *e = reinterpret_cast<struct dirent64 *>(entries + at);
        at += e->d_reclen;
        if (e->d_name[0] < '1' || e->d_name[0] > '9')
          continue;
        pid_t ppid = 0, pgrp = 0;
        pid_t pid = 0;
        for (const char *c = e->d_name; *c >= '0' && *c <= '9'; ++c)
          pid = pid * 10 + (*c - '0');
        if (pid == self || !parentAndGroup(e->d_name, &ppid, &pgrp))
          continue;
        if (ppid == self || pgrp == group) {
          kill(pid, SIGKILL);
          found = true;
        }
      }
    close(dir);
    while (waitpid(-1, nullptr, WNOHANG) > 0) {
    }
    if (!found)
      return;
    usleep(1000);
  }
}

[[noreturn]] void childFail(int fd, const char *what) {
  // Only async-signal-safe calls after fork: report through the pipe.
  const char *reason = strerror(errno);
  (void)!write(fd, what, strlen(what));
  (void)!write(fd, ": ", 2);
  (void)!write(fd, reason, strlen(reason));
  _exit(127);
}

} // namespace

void clearOutputs(const std::vector<std::string> &clearFirst) {
  namespace fs = std::filesystem;
  std::error_code ec;
  for (const auto &path : clearFirst) {
    if (!path.empty() && path.back() == '*') {
      fs::path pattern = path.substr(0, path.size() - 1);
      std::string prefix = pattern.filename().string();
      for (const auto &e : fs::directory_iterator(pattern.parent_path(), ec))
        if (e.path().filename().string().rfind(prefix, 0) == 0)
          fs::remove(e.path(), ec);
    } else {
      fs::remove(path, ec);
    }
  }
}

namespace {

/// The forked child: it leads a process group of its own and keeps it, forks the command and waits for
/// it, then ends as the command did. Never returns.
[[noreturn]] void runKeeper(const SubprocessOptions &options, std::vector<char *> &argv, const int out[2],
                            int statusWrite, pid_t parent) {
  // The child leads a process group of its own and keeps it: it forks the command and waits for it.
  // When hone dies, even by SIGKILL, the kernel sends the keeper SIGTERM (PR_SET_PDEATHSIG), and the
  // keeper kills the whole group: a killed hone leaves no command running (a resume runs it again).
  setpgid(0, 0);
  // A child subreaper: what the command leaves behind, even after setsid(), comes back to the keeper
  // when its parent ends, not to init; the keeper clears it all before it ends (sweepDescendants).
  prctl(PR_SET_CHILD_SUBREAPER, 1);
  pid_t command = fork();
  if (command < 0)
    childFail(statusWrite, "fork");
  if (command == 0) {
    if (options.memoryLimitBytes > 0) {
      rlimit limit{options.memoryLimitBytes, options.memoryLimitBytes};
      if (setrlimit(RLIMIT_AS, &limit) != 0)
        childFail(statusWrite, "setrlimit");
    }
    if (!options.workdir.empty() && chdir(options.workdir.c_str()) != 0)
      childFail(statusWrite, "chdir");
    int devnull = open("/dev/null", O_RDONLY);
    if (devnull >= 0)
      dup2(devnull, STDIN_FILENO);
    dup2(out[1], STDOUT_FILENO);
    dup2(out[1], STDERR_FILENO);
    execvp(argv[0], argv.data());
    childFail(statusWrite, "exec");
  }
  close(statusWrite); // hone reads exec's outcome from the command alone
  close(out[0]);
  close(out[1]);
  keptCommand = command;
  struct sigaction onDeath {};
  onDeath.sa_handler = killCommand;
  sigaction(SIGTERM, &onDeath, nullptr);
  prctl(PR_SET_PDEATHSIG, SIGTERM);
  if (getppid() != parent) // hone died before the line above
    killCommand(0);
  int st = 0;
  while (waitpid(command, &st, 0) < 0 && errno == EINTR) {
  }
  sweepDescendants();
  if (WIFSIGNALED(st)) { // end as the command did, so hone reports its signal (without a core of ours)
    rlimit none{0, 0};
    setrlimit(RLIMIT_CORE, &none);
    signal(WTERMSIG(st), SIG_DFL);
    raise(WTERMSIG(st));
  }
  _exit(WIFEXITED(st) ? WEXITSTATUS(st) : 127);
}

} // namespace

SubprocessResult runSubprocess(const SubprocessOptions &options) {
  SubprocessResult result;
  clearOutputs(options.clearFirst);
  if (options.argv.empty()) {
    result.error = "empty command";
    return result;
  }
  std::vector<char *> argv;
  for (const auto &a : options.argv)
    argv.push_back(const_cast<char *>(a.c_str()));
  argv.push_back(nullptr);

  int out[2];
  int status[2]; // closes on exec: a message on it means exec failed
  if (pipe2(out, O_CLOEXEC) != 0 || pipe2(status, O_CLOEXEC) != 0) {
    result.error = fmt::format("pipe: {}", strerror(errno));
    return result;
  }
  auto start = std::chrono::steady_clock::now();
  pid_t parent = getpid();
  pid_t pid = fork();
  if (pid < 0) {
    result.error = fmt::format("fork: {}", strerror(errno));
    for (int fd : {out[0], out[1], status[0], status[1]})
      close(fd);
    return result;
  }
  if (pid == 0)
    runKeeper(options, argv, out, status[1], parent);
  setpgid(pid, pid); // also in the parent: no race with the kill below
  close(out[1]);
  close(status[1]);

  std::string startError;
  char buffer[4096];
  for (ssize_t n; (n = read(status[0], buffer, sizeof buffer)) > 0;)
    startError.append(buffer, static_cast<size_t>(n));
  close(status[0]);

  auto elapsed = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(); };
  auto keep = [&](const char *data, size_t n) {
    result.output.append(data, n);
    if (result.output.size() > 2 * options.outputLimitBytes) {
      result.output.erase(0, result.output.size() - options.outputLimitBytes);
      result.outputTruncated = true;
    }
  };
  // Read until the command exits or the time is up, checking both every 50 ms.
  pollfd pfd{out[0], POLLIN, 0};
  int wstatus = 0;
  bool exited = false, eof = false;
  while (!exited) {
    if (options.timeoutS > 0 && elapsed() >= options.timeoutS) {
      result.timedOut = true;
      break;
    }
    if (!options.runWhenInterrupted && interrupted()) { // hone itself is stopping: the command's whole group goes with it
      result.interrupted = true;
      break;
    }
    if (!eof && poll(&pfd, 1, 50) > 0) {
      ssize_t n = read(out[0], buffer, sizeof buffer);
      if (n > 0)
        keep(buffer, static_cast<size_t>(n));
      else if (n == 0)
        eof = true;
    } else if (eof) {
      usleep(5000);
    }
    pid_t done = waitpid(pid, &wstatus, WNOHANG);
    exited = done == pid;
  }
  // At the time limit or an interrupt, the keeper stops the command and clears what it left (those
  // that left the group with setsid() too); a keeper that does not end in 2 s is killed with its group.
  if (!exited) {
    kill(pid, SIGTERM);
    for (int i = 0; i < 400 && !exited; ++i) {
      exited = waitpid(pid, &wstatus, WNOHANG) == pid;
      if (!exited)
        usleep(5000);
    }
  }
  kill(-pid, SIGKILL); // whatever is left in the group
  if (!exited)
    while (waitpid(pid, &wstatus, 0) < 0 && errno == EINTR) {
    }
  // What is still in the pipe; non-blocking, in case something outside the
  // group (a daemon the command started) still holds the other end.
  fcntl(out[0], F_SETFL, fcntl(out[0], F_GETFL) | O_NONBLOCK);
  for (ssize_t n; !eof && (n = read(out[0], buffer, sizeof buffer)) > 0;)
    keep(buffer, static_cast<size_t>(n));
  close(out[0]);
  result.seconds = elapsed();
  if (result.output.size() > options.outputLimitBytes) {
    result.output.erase(0, result.output.size() - options.outputLimitBytes);
    result.outputTruncated = true;
  }
  if (!startError.empty()) {
    result.error = startError;
    return result; // started stays false
  }
  result.started = true;
  if (WIFEXITED(wstatus))
    result.exitCode = WEXITSTATUS(wstatus);
  else if (WIFSIGNALED(wstatus))
    result.signal = WTERMSIG(wstatus);
  return result;
}

std::shared_ptr<CommandExecutor> localExecutor() {
  static const std::shared_ptr<CommandExecutor> local = std::make_shared<LocalExecutor>();
  return local;
}

namespace {
std::vector<ExecutorKind> &executorKinds() {
  static std::vector<ExecutorKind> kinds;
  return kinds;
}
} // namespace

void registerExecutorKind(ExecutorKind kind) {
  if (!executorKind(kind.name))
    executorKinds().push_back(std::move(kind));
}

const ExecutorKind *executorKind(const std::string &name) {
  for (const auto &k : executorKinds())
    if (k.name == name)
      return &k;
  return nullptr;
}

std::vector<std::string> executorNames() {
  std::vector<std::string> names = {"local"};
  for (const auto &k : executorKinds())
    names.push_back(k.name);
  return names;
}

} // namespace hone::support
