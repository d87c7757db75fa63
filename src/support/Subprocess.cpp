#include "support/Subprocess.h"

#include "support/Executor.h"
#include "support/Interrupt.h"

#include <fmt/format.h>

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstring>
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

/// The keeper's answer to hone's death: the command's whole group goes (the keeper with it).
void killOwnGroup(int) { kill(0, SIGKILL); }

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
  if (pid == 0) {
    // The child leads a process group of its own and keeps it: it forks the command and waits for it.
    // When hone dies, even by SIGKILL, the kernel sends the keeper SIGTERM (PR_SET_PDEATHSIG), and the
    // keeper kills the whole group: a killed hone leaves no command running (a resume runs it again).
    setpgid(0, 0);
    pid_t command = fork();
    if (command < 0)
      childFail(status[1], "fork");
    if (command == 0) {
      if (options.memoryLimitBytes > 0) {
        rlimit limit{options.memoryLimitBytes, options.memoryLimitBytes};
        if (setrlimit(RLIMIT_AS, &limit) != 0)
          childFail(status[1], "setrlimit");
      }
      if (!options.workdir.empty() && chdir(options.workdir.c_str()) != 0)
        childFail(status[1], "chdir");
      int devnull = open("/dev/null", O_RDONLY);
      if (devnull >= 0)
        dup2(devnull, STDIN_FILENO);
      dup2(out[1], STDOUT_FILENO);
      dup2(out[1], STDERR_FILENO);
      execvp(argv[0], argv.data());
      childFail(status[1], "exec");
    }
    close(status[1]); // hone reads exec's outcome from the command alone
    close(out[0]);
    close(out[1]);
    struct sigaction onDeath {};
    onDeath.sa_handler = killOwnGroup;
    sigaction(SIGTERM, &onDeath, nullptr);
    prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (getppid() != parent) // hone died before the line above
      killOwnGroup(0);
    int st = 0;
    while (waitpid(command, &st, 0) < 0 && errno == EINTR) {
    }
    if (WIFSIGNALED(st)) { // end as the command did, so hone reports its signal (without a core of ours)
      rlimit none{0, 0};
      setrlimit(RLIMIT_CORE, &none);
      signal(WTERMSIG(st), SIG_DFL);
      raise(WTERMSIG(st));
    }
    _exit(WIFEXITED(st) ? WEXITSTATUS(st) : 127);
  }
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
  // The whole group goes: at the time limit, and any children the command left running.
  kill(-pid, SIGKILL);
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

} // namespace hone::support
