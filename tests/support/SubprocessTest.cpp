// Subprocesses: output, exit codes, the time limit killing the whole process
// group, the memory limit, and commands that cannot start.
#include "support/Subprocess.h"

#include <gtest/gtest.h>

#include <csignal>
#include <filesystem>
#include <fstream>
#include <thread>
#include <sys/wait.h>
#include <unistd.h>

namespace hone::support {
namespace {

SubprocessOptions cmd(std::vector<std::string> argv, double timeoutS = 0, size_t memory = 0, std::string workdir = {}) {
  SubprocessOptions o;
  o.argv = std::move(argv);
  o.timeoutS = timeoutS;
  o.memoryLimitBytes = memory;
  o.workdir = std::move(workdir);
  return o;
}

TEST(Subprocess, ACommandWhoseEndIsUnknownIsDescribedByItsError) {
  SubprocessResult r;
  r.started = true;
  r.error = "Slurm job 7 ended NODE_FAIL without a result";
  EXPECT_FALSE(r.ok());
  EXPECT_EQ(r.describe(), r.error);
  r.exitCode = 2;
  EXPECT_EQ(r.describe(), "exit 2");
  r.started = false;
  EXPECT_EQ(r.describe(), "could not start: " + r.error);
}

TEST(Subprocess, StaleOutputsAreRemovedBeforeTheCommandRuns) {
  namespace fs = std::filesystem;
  fs::path dir = fs::temp_directory_path() / ("hone-clear-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  for (const char *name : {"out.bin", "prof_0.gz", "prof_1.gz", "keep.txt"})
    std::ofstream(dir / name) << "old";
  SubprocessOptions o = cmd({"sh", "-c", "ls"}, 0, 0, dir.string());
  o.clearFirst = {(dir / "out.bin").string(), (dir / "prof_*").string(), (dir / "never-there").string()};
  auto r = runSubprocess(o);
  ASSERT_TRUE(r.ok()) << r.describe();
  EXPECT_EQ(r.output, "keep.txt\n");
  fs::remove_all(dir);
}

TEST(Subprocess, CapturesOutputAndExitCode) {
  auto r = runSubprocess(cmd({"sh", "-c", "echo out; echo err >&2; exit 3"}));
  ASSERT_TRUE(r.started) << r.error;
  EXPECT_EQ(r.exitCode, 3);
  EXPECT_FALSE(r.ok());
  EXPECT_NE(r.output.find("out\n"), std::string::npos);
  EXPECT_NE(r.output.find("err\n"), std::string::npos);
  EXPECT_EQ(r.describe(), "exit 3");
  EXPECT_TRUE(runSubprocess(cmd({"true"})).ok());
}

TEST(Subprocess, TimeLimitKillsTheWholeGroup) {
  std::string pidFile = std::filesystem::temp_directory_path() / ("hone-subprocess-" + std::to_string(getpid()));
  auto r = runSubprocess(cmd({"sh", "-c", "sleep 30 & echo $! > " + pidFile + "; sleep 30"}, 0.5));
  EXPECT_TRUE(r.timedOut);
  EXPECT_LT(r.seconds, 10);
  EXPECT_NE(r.describe().find("timed out"), std::string::npos);
  std::ifstream in(pidFile);
  pid_t grandchild = 0;
  in >> grandchild;
  std::filesystem::remove(pidFile);
  ASSERT_GT(grandchild, 0);
  // The background sleep was in the group: it is gone (or a zombie about to be reaped by init).
  bool gone = false;
  for (int i = 0; i < 100 && !gone; ++i) {
    std::ifstream stat("/proc/" + std::to_string(grandchild) + "/stat");
    std::string pid, comm, state;
    gone = !(stat >> pid >> comm >> state) || state == "Z";
    if (!gone)
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_TRUE(gone);
}

/// Whether `pid` has ended (gone, or a zombie about to be reaped), waiting up to 2 s.
bool ends(pid_t pid) {
  for (int i = 0; i < 100; ++i) {
    std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
    std::string p, comm, state;
    if (!(stat >> p >> comm >> state) || state == "Z")
      return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return false;
}

TEST(Subprocess, ACallerKilledBySigkillTakesTheCommandsGroupWithIt) {
  // hone killed with kill -9 in the middle of a command: the command and what it started must not run
  // on (a resume runs the evaluation again).
  std::string pidFile = std::filesystem::temp_directory_path() / ("hone-orphan-" + std::to_string(getpid()));
  std::filesystem::remove(pidFile);
  pid_t caller = fork();
  ASSERT_GE(caller, 0);
  if (caller == 0) {
    runSubprocess(cmd({"sh", "-c", "sleep 30 & echo $$ $! > " + pidFile + ".tmp; mv " + pidFile + ".tmp " + pidFile +
                                       "; sleep 30"}));
    _exit(0);
  }
  pid_t shell = 0, background = 0;
  for (int i = 0; i < 250 && !(std::ifstream(pidFile) >> shell >> background); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  ASSERT_GT(shell, 0);
  kill(caller, SIGKILL);
  waitpid(caller, nullptr, 0);
  EXPECT_TRUE(ends(shell));
  EXPECT_TRUE(ends(background));
  std::filesystem::remove(pidFile);
}

TEST(Subprocess, WhatACommandStartsInASessionOfItsOwnEndsWithItToo) {
  // setsid() leaves the process group hone kills; the keeper, a child subreaper, gets such processes
  // back when their parent ends, and clears them: after an ordinary end, a time limit, and the
  // caller's death by SIGKILL.
  std::string pidFile = std::filesystem::temp_directory_path() / ("hone-setsid-" + std::to_string(getpid()));
  auto sleeper = [&] {
    pid_t pid = 0;
    for (int i = 0; i < 250 && !(std::ifstream(pidFile) >> pid); ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    std::filesystem::remove(pidFile);
    return pid;
  };
  std::string start = "setsid sleep 30 </dev/null >/dev/null 2>&1 & echo $! > " + pidFile + ".tmp; mv " + pidFile +
                      ".tmp " + pidFile;
  auto done = runSubprocess(cmd({"sh", "-c", start + "; echo started"}, 20));
  EXPECT_TRUE(done.ok()) << done.describe();
  pid_t first = sleeper();
  ASSERT_GT(first, 0);
  EXPECT_TRUE(ends(first));

  auto late = runSubprocess(cmd({"sh", "-c", start + "; sleep 30"}, 0.5));
  EXPECT_TRUE(late.timedOut);
  pid_t second = sleeper();
  ASSERT_GT(second, 0);
  EXPECT_TRUE(ends(second));

  pid_t caller = fork();
  ASSERT_GE(caller, 0);
  if (caller == 0) {
    runSubprocess(cmd({"sh", "-c", start + "; sleep 30"}));
    _exit(0);
  }
  pid_t third = sleeper();
  ASSERT_GT(third, 0);
  kill(caller, SIGKILL);
  waitpid(caller, nullptr, 0);
  EXPECT_TRUE(ends(third));
}

TEST(Subprocess, ACommandKilledByASignalIsReportedSo) {
  auto r = runSubprocess(cmd({"sh", "-c", "kill -SEGV $$"}));
  ASSERT_TRUE(r.started) << r.error;
  EXPECT_EQ(r.signal, SIGSEGV) << r.describe();
  EXPECT_NE(r.describe().find("killed by signal"), std::string::npos);
}

TEST(Subprocess, LeftoverChildrenDoNotHoldTheCaller) {
  // The command exits at once but leaves a child holding the output pipe.
  auto r = runSubprocess(cmd({"sh", "-c", "sleep 30 & echo done"}, 20));
  EXPECT_TRUE(r.ok()) << r.describe();
  EXPECT_LT(r.seconds, 10);
  EXPECT_NE(r.output.find("done"), std::string::npos);
}

TEST(Subprocess, MemoryLimitApplies) {
  // 50 MB of address space cannot hold a 200 MB shell variable; 2 MB fits.
  auto fill = [](const char *bytes) {
    return cmd({"sh", "-c", std::string("x=$(head -c ") + bytes + " /dev/zero | tr '\\0' a); echo ${#x}"}, 20,
               50u << 20);
  };
  auto big = runSubprocess(fill("200000000"));
  ASSERT_TRUE(big.started) << big.error;
  EXPECT_FALSE(big.ok()) << big.output;
  auto small = runSubprocess(fill("2000000"));
  EXPECT_TRUE(small.ok()) << small.describe() << small.output;
  EXPECT_NE(small.output.find("2000000"), std::string::npos);
}

TEST(Subprocess, MissingCommandDoesNotStart) {
  auto r = runSubprocess(cmd({"hone-no-such-command"}));
  EXPECT_FALSE(r.started);
  EXPECT_NE(r.error.find("exec"), std::string::npos) << r.error;
  EXPECT_NE(r.describe().find("could not start"), std::string::npos);
  EXPECT_FALSE(runSubprocess(cmd({"true"}, 0, 0, "/no/such/dir")).started);
}

TEST(Subprocess, OutputIsBounded) {
  SubprocessOptions o = cmd({"sh", "-c", "yes 0123456789 | head -c 100000"});
  o.outputLimitBytes = 1000;
  auto r = runSubprocess(o);
  EXPECT_TRUE(r.ok());
  EXPECT_TRUE(r.outputTruncated);
  EXPECT_EQ(r.output.size(), 1000u);
}

} // namespace
} // namespace hone::support
