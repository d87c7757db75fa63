// The Slurm executor's parts that need no cluster: what squeue, scontrol and sacct print, read back
// (and what is not theirs, refused); the settings as stored; and the batch scripts, run here with sh
// as a node would run them (folders with spaces and quotes, commands that must stay literal, stale
// outputs removed first, the time limit, an array's task selection); an array's statuses read against
// fake Slurm tools. The executor against a real single-node Slurm is tests/e2e/slurm_test.sh.
#include "cluster/Slurm.h"

#include "support/FileUtil.h"
#include "support/Subprocess.h"

#include <gtest/gtest.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

namespace fs = std::filesystem;

namespace hone::cluster {
namespace {

TEST(Slurm, ParsesSqueueIncludingArrayTasksAndSkipsWhatIsNotAJob) {
  auto jobs = parseSqueue("12|RUNNING|None|node1\n"
                          "13|PENDING|ReqNodeNotAvail, UnavailableNodes:vm|\n"
                          "14_2|RUNNING|None|node2\n"
                          "14_[3-5%2]|PENDING|JobArrayTaskLimit|\n"
                          "garbage line\n"
                          "|RUNNING|None|x\n"
                          "abc|RUNNING|None|x\n"
                          "15|\n");
  ASSERT_EQ(jobs.size(), 4u);
  EXPECT_EQ(jobs["12"].state, "RUNNING");
  EXPECT_EQ(jobs["12"].reason, "");
  EXPECT_EQ(jobs["12"].nodes, "node1");
  EXPECT_EQ(jobs["13"].reason, "ReqNodeNotAvail, UnavailableNodes:vm");
  EXPECT_EQ(jobs["14_2"].nodes, "node2");
  EXPECT_EQ(jobs["14_[3-5%2]"].state, "PENDING");
  EXPECT_TRUE(parseSqueue("").empty());
}

TEST(Slurm, AnArraysTasksAreReadFromTheQueueRangesIncluded) {
  auto queue = parseSqueue("14_2|RUNNING|None|node2\n"
                           "14_[3-5,7,40-50%2]|PENDING|JobArrayTaskLimit|\n"
                           "140_1|RUNNING|None|node1\n" // another job whose id starts the same
                           "14|PENDING|None|\n");
  bool unread = false;
  auto tasks = arrayTasks(queue, "14", 8, &unread);
  EXPECT_FALSE(unread);
  std::vector<size_t> ids;
  for (const auto &[i, st] : tasks)
    ids.push_back(i);
  EXPECT_EQ(ids, (std::vector<size_t>{2, 3, 4, 5, 7})); // 40-50 are not among its 8 tasks
  EXPECT_EQ(tasks[2].state, "RUNNING");
  EXPECT_EQ(tasks[4].state, "PENDING");
  EXPECT_TRUE(arrayTasks(queue, "14", 0).empty());
  auto odd = parseSqueue("9_[2-x]|PENDING|None|\n9_[5-3]|PENDING|None|\n9_1|RUNNING|None|\n");
  tasks = arrayTasks(odd, "9", 100000000, &unread);
  EXPECT_TRUE(unread);
  EXPECT_EQ(tasks.size(), 1u);
  EXPECT_EQ(tasks.count(1), 1u);
}

TEST(Slurm, ParsesScontrolShowJob) {
  auto st =
      parseScontrolJob("JobId=41 JobName=hone-run-0 UserId=root(0) JobState=TIMEOUT Reason=TimeLimit Dependency=(null) "
                       "Requeue=1 Restarts=0 BatchFlag=1 ExitCode=0:15 RunTime=00:01:02 NodeList=vm BatchHost=vm\n");
  ASSERT_TRUE(st);
  EXPECT_EQ(st->id, "41");
  EXPECT_EQ(st->state, "TIMEOUT");
  EXPECT_EQ(st->reason, "TimeLimit");
  EXPECT_EQ(st->exitCode, 0);
  EXPECT_EQ(st->signal, 15);
  EXPECT_EQ(st->nodes, "vm");
  EXPECT_FALSE(parseScontrolJob("slurm_load_jobs error: Invalid job id specified"));
  EXPECT_FALSE(parseScontrolJob("JobId=41 JobName=x")); // no state
  EXPECT_FALSE(parseScontrolJob("JobId=x1 JobState=RUNNING"));
  auto odd = parseScontrolJob("JobId=7 JobState=FAILED ExitCode=garbage NodeList=(null)");
  ASSERT_TRUE(odd);
  EXPECT_EQ(odd->exitCode, -1);
  EXPECT_EQ(odd->nodes, "");
}

TEST(Slurm, ParsesSacct) {
  auto st = parseSacct("\n5|CANCELLED by 0|0:15|vm\n6|COMPLETED|0:0|vm\n");
  ASSERT_TRUE(st);
  EXPECT_EQ(st->id, "5");
  EXPECT_EQ(st->state, "CANCELLED");
  EXPECT_EQ(st->signal, 15);
  EXPECT_FALSE(parseSacct("Slurm accounting storage is disabled\n"));
  EXPECT_FALSE(parseSacct("5||0:0|vm"));
}

TEST(Slurm, StatesThatRunAgainAndStatesThatAreFinal) {
  for (const char *s : {"NODE_FAIL", "BOOT_FAIL", "PREEMPTED"}) {
    EXPECT_TRUE(resubmittable(s)) << s;
    EXPECT_TRUE(finalState(s)) << s;
  }
  for (const char *s : {"COMPLETED", "FAILED", "TIMEOUT", "CANCELLED", "OUT_OF_MEMORY"}) {
    EXPECT_FALSE(resubmittable(s)) << s;
    EXPECT_TRUE(finalState(s)) << s;
  }
  for (const char *s : {"PENDING", "RUNNING", "COMPLETING", "REQUEUED", "SUSPENDED"})
    EXPECT_FALSE(finalState(s)) << s;
}

TEST(Slurm, SettingsRoundTripAndAreReadStrictly) {
  SlurmSettings s;
  s.jobDir = "/shared/jobs";
  s.runTag = "host-1-2";
  s.partition = "gpu";
  s.gpus = "a100:2";
  s.directives = {"--exclusive", "--mem=8G"};
  s.header = "#SBATCH -p x\n";
  s.pollS = 0.5;
  s.pendingTimeoutS = 30;
  s.retries = 4;
  auto back = SlurmSettings::fromJson(s.toJson());
  ASSERT_TRUE(back) << back.error().message;
  EXPECT_EQ(back->toJson(), s.toJson());
  nlohmann::json typo = s.toJson();
  typo["partiton"] = "gpu";
  auto bad = SlurmSettings::fromJson(typo);
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message.find("did you mean 'partition'"), std::string::npos) << bad.error().message;
  EXPECT_FALSE(SlurmSettings::fromJson(nlohmann::json{{"poll_s", 0}}));
  EXPECT_FALSE(SlurmSettings::fromJson(nlohmann::json{{"retries", -1}}));
  EXPECT_FALSE(SlurmSettings::fromJson(nlohmann::json{{"directives", "not a list"}}));
  EXPECT_FALSE(SlurmSettings::fromJson(nlohmann::json::array()));
}

TEST(Slurm, TimeLimitIsTheCommandsOwnPlusAMinuteInWholeMinutes) {
  SlurmSettings s;
  EXPECT_EQ(timeLimitOf(s, 0), "");
  EXPECT_EQ(timeLimitOf(s, 1), "2");
  EXPECT_EQ(timeLimitOf(s, 600), "11");
  s.timeLimitS = 3601;
  EXPECT_EQ(timeLimitOf(s, 5), "61");
}

struct ScriptDir {
  fs::path root;
  ScriptDir() {
    root = fs::temp_directory_path() / ("hone-slurm-test-" + std::to_string(::getpid()) + "-" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(root);
    fs::create_directories(root);
  }
  ~ScriptDir() { fs::remove_all(root); }
  /// Runs a script with sh, as a node would (plus `env`), and returns its exit code.
  int run(const std::string &script, std::vector<std::string> env = {}) {
    std::string path = (root / "job.sh").string();
    EXPECT_TRUE(support::writeFileAtomically(path, script, nullptr));
    support::SubprocessOptions o;
    o.argv = {"env"};
    o.argv.insert(o.argv.end(), env.begin(), env.end());
    o.argv.insert(o.argv.end(), {"sh", path});
    o.timeoutS = 30;
    auto r = support::runSubprocess(o);
    EXPECT_TRUE(r.started) << r.error;
    return r.exitCode;
  }
};

std::string read(const fs::path &p) {
  auto t = support::readFile(p.string());
  return t ? *t : std::string("<missing>");
}

TEST(Slurm, AJobScriptRunsTheCommandLiterallyInItsFolderAndWritesStatusAndOutput) {
  ScriptDir d;
  fs::path work = d.root / "it's a \"work\" dir $(x)";
  fs::path job = d.root / "job folder";
  fs::create_directories(work);
  fs::create_directories(job);
  std::ofstream(work / "stale.out") << "old";
  std::ofstream(work / "prof_1.gz") << "old";
  std::ofstream(work / "keep.txt") << "mine";
  JobSpec spec;
  spec.name = "hone-test";
  spec.folder = job.string();
  spec.process.workdir = work.string();
  spec.process.argv = {"sh", "-c", "echo \"$1\"; pwd; ls; exit 3", "sh", "$(touch pwned) `x` ; 'q'"};
  spec.process.clearFirst = {(work / "stale.out").string(), (work / "prof_*").string()};
  SlurmSettings s;
  s.partition = "gpu";
  s.directives = {"--exclusive"};
  std::string script = renderJobScript(s, spec);
  EXPECT_NE(script.find("#SBATCH --partition=gpu\n"), std::string::npos);
  EXPECT_NE(script.find("#SBATCH --exclusive\n"), std::string::npos);
  EXPECT_EQ(d.run(script), 0);
  std::istringstream status(read(job / "status"));
  int rc = -1;
  double start = 0, end = 0;
  ASSERT_TRUE(status >> rc >> start >> end) << read(job / "status");
  EXPECT_EQ(rc, 3);
  EXPECT_LE(start, end);
  std::string out = read(job / "output");
  EXPECT_NE(out.find("$(touch pwned) `x` ; 'q'\n"), std::string::npos) << out;
  EXPECT_NE(out.find(work.string()), std::string::npos) << out;
  EXPECT_NE(out.find("keep.txt"), std::string::npos);
  EXPECT_EQ(out.find("stale.out"), std::string::npos) << "a stale output survived: " << out;
  EXPECT_EQ(out.find("prof_1.gz"), std::string::npos) << out;
  EXPECT_FALSE(fs::exists(work / "pwned"));
  EXPECT_FALSE(fs::exists(d.root / "pwned"));
}

TEST(Slurm, AStatusThatClaimsLessTimeThanTheJobWasSeenRunningIsNotTrusted) {
  support::SubprocessResult r;
  r.started = true;
  r.exitCode = 0;
  r.seconds = 0.001; // what a program that wrote its job's status itself claims
  auto why = statusContradicted(r, 6.0, 0.5);
  ASSERT_TRUE(why);
  EXPECT_NE(why->find("not trusted"), std::string::npos) << *why;
  EXPECT_NE(why->find("6.0 s"), std::string::npos) << *why;
  r.seconds = 5.2; // the script's own steps and a late read of the queue are allowed for
  EXPECT_FALSE(statusContradicted(r, 6.0, 0.5));
  r.seconds = 0.001;
  EXPECT_FALSE(statusContradicted(r, 1.5, 0.5)); // too short a run to tell
  EXPECT_FALSE(statusContradicted(r, 0, 0.5));   // never seen running (it ran between two polls)
}

TEST(Slurm, AJobScriptEnforcesTheCommandsTimeLimit) {
  ScriptDir d;
  JobSpec spec;
  spec.folder = d.root.string();
  spec.process.argv = {"sleep", "20"};
  spec.process.timeoutS = 0.5;
  EXPECT_EQ(d.run(renderJobScript({}, spec)), 0);
  std::istringstream status(read(d.root / "status"));
  int rc = -1;
  double start = 0, end = 0;
  ASSERT_TRUE(status >> rc >> start >> end);
  EXPECT_EQ(rc, 124);
  EXPECT_LT(end - start, 10);
}

TEST(Slurm, AUsersHeaderGetsItsPlaceholdersAndMayBringItsInterpreter) {
  SlurmSettings s;
  s.header = "#!/bin/bash -l\n#SBATCH --job-name={name}\n#SBATCH --time={time}\n#SBATCH --chdir={dir}\nmodule load x";
  JobSpec spec;
  spec.name = "hone-x";
  spec.folder = "/shared/j";
  spec.process.argv = {"true"};
  spec.process.timeoutS = 90;
  std::string script = renderJobScript(s, spec);
  EXPECT_EQ(script.rfind("#!/bin/bash -l\n#SBATCH --job-name=hone-x\n#SBATCH --time=3\n#SBATCH --chdir=/shared/j\n"
                         "module load x\n",
                         0),
            0u)
      << script;
  EXPECT_EQ(script.find("#!/bin/sh"), std::string::npos);
  EXPECT_EQ(script.find("--nodes"), std::string::npos); // hone's header is replaced, not merged
}

TEST(Slurm, AHeadersValuesAreNotFilledAgain) {
  // A job name and folder holding the other placeholders: filled once, left to right, never rescanned.
  SlurmSettings s;
  s.header = "#SBATCH --chdir={dir}\n#SBATCH --job-name={name}\n#SBATCH --time={time}\n";
  JobSpec spec;
  spec.name = "hone-{time}{dir}";
  spec.folder = "/shared/{name}{time}{dir}$(touch PWNED)`x`'\"";
  spec.process.argv = {"true"};
  spec.process.timeoutS = 90;
  std::string script = renderJobScript(s, spec);
  EXPECT_NE(script.find("#SBATCH --chdir=/shared/{name}{time}{dir}$(touch PWNED)`x`'\"\n#SBATCH --job-name=hone-{time}{dir}\n"
                        "#SBATCH --time=3\n"),
            std::string::npos)
      << script;
}

TEST(Slurm, AFolderThatCannotBeEnteredIsNamedWithoutRunningItsName) {
  // The message naming the folder quotes it too: inside double quotes a `$(...)` in the name ran.
  ScriptDir d;
  JobSpec spec;
  spec.folder = d.root.string();
  spec.process.workdir = (d.root / "gone $(touch pwned) `touch pwned2`").string();
  spec.process.argv = {"true"};
  EXPECT_EQ(d.run(renderJobScript({}, spec)), 97);
  EXPECT_FALSE(fs::exists(d.root / "pwned"));
  EXPECT_FALSE(fs::exists(d.root / "pwned2"));
  EXPECT_FALSE(fs::exists("pwned"));
  EXPECT_FALSE(fs::exists("pwned2"));
}

TEST(Slurm, AnArrayScriptRunsOnlyItsTask) {
  ScriptDir d;
  std::vector<std::pair<size_t, JobSpec>> tasks;
  for (size_t i : {0, 2}) {
    JobSpec t;
    t.folder = (d.root / ("task-" + std::to_string(i))).string();
    fs::create_directories(t.folder);
    t.process.argv = {"sh", "-c", "echo task " + std::to_string(i)};
    tasks.emplace_back(i, t);
  }
  std::string script = renderArrayScript({}, "hone-a", d.root.string(), tasks);
  EXPECT_EQ(d.run(script, {"SLURM_ARRAY_TASK_ID=2"}), 0);
  EXPECT_EQ(read(d.root / "task-2" / "output"), "task 2\n");
  EXPECT_FALSE(fs::exists(d.root / "task-0" / "status"));
  EXPECT_EQ(d.run(script, {"SLURM_ARRAY_TASK_ID=1"}), 98); // not one of its tasks
}

// An array whose task 0 writes a status claiming a millisecond while it runs, and whose task 1 writes an
// honest one: neither is read while its task is in the queue; once they leave, the forgery is refused
// (hone saw the task running for longer) and the honest one is the result. Slurm's tools are fakes that
// read the queue from a file the test writes.
TEST(Slurm, AnArrayTasksStatusIsReadOnlyOnceItLeftTheQueueAndOnlyIfTheQueueAgrees) {
  ScriptDir d;
  fs::create_directories(d.root / "bin");
  auto tool = [&](const std::string &name, const std::string &body) {
    std::string path = (d.root / "bin" / name).string();
    ASSERT_TRUE(support::writeFileAtomically(path, "#!/bin/sh\n" + body + "\n", nullptr));
    fs::permissions(path, fs::perms::owner_all);
  };
  std::string queueFile = (d.root / "queue").string();
  tool("sbatch", "echo 77");
  tool("squeue", "cat '" + queueFile + "' 2>/dev/null; exit 0");
  tool("scontrol", "exit 1");
  tool("sacct", "exit 1");
  tool("scancel", "exit 0");
  ASSERT_TRUE(support::writeFileAtomically(queueFile, "77_0|RUNNING|None|n1\n77_1|RUNNING|None|n1\n", nullptr));
  SlurmSettings s;
  s.jobDir = (d.root / "jobs").string();
  s.binDir = (d.root / "bin").string();
  s.pollS = 0.1;
  auto ex = SlurmExecutor::make(s);
  ASSERT_TRUE(ex) << ex.error().message;
  std::vector<support::SubprocessOptions> commands(2);
  commands[0].argv = {"forge"};
  commands[1].argv = {"honest"};
  std::atomic<int> heard{0};
  std::vector<support::SubprocessResult> results;
  std::thread waiter([&] {
    results = (*ex)->runArray(commands, "t", 0, [&](size_t, const support::SubprocessResult &) { ++heard; });
  });
  struct Done { // however the test ends, the array leaves the queue and the waiter is joined
    std::thread &waiter;
    std::string queue;
    ~Done() {
      (void)support::writeFileAtomically(queue, "", nullptr);
      if (waiter.joinable())
        waiter.join();
    }
  } done{waiter, queueFile};
  fs::path jobid;
  for (int i = 0; i < 200 && jobid.empty(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    for (const auto &e : fs::recursive_directory_iterator(d.root / "jobs"))
      if (e.path().filename() == "jobid")
        jobid = e.path();
  }
  ASSERT_FALSE(jobid.empty());
  fs::path folder = jobid.parent_path();
  ASSERT_TRUE(support::writeFileAtomically((folder / "task-0" / "status").string(), "0 1000.000 1000.001\n", nullptr));
  ASSERT_TRUE(support::writeFileAtomically((folder / "task-1" / "status").string(), "0 1000 1010\n", nullptr));
  std::this_thread::sleep_for(std::chrono::seconds(3));
  EXPECT_EQ(heard.load(), 0); // both still in the queue: not read
  ASSERT_TRUE(support::writeFileAtomically(queueFile, "", nullptr));
  waiter.join();
  ASSERT_EQ(results.size(), 2u);
  EXPECT_FALSE(results[0].ok());
  EXPECT_NE(results[0].error.find("not trusted"), std::string::npos) << results[0].error;
  EXPECT_NE(results[0].error.find("77_0"), std::string::npos) << results[0].error;
  EXPECT_TRUE(results[1].ok()) << results[1].describe();
  EXPECT_DOUBLE_EQ(results[1].seconds, 10.0);
}

TEST(Slurm, TheExecutorNeedsSbatch) {
  ScriptDir d;
  SlurmSettings s;
  s.jobDir = (d.root / "jobs").string();
  s.binDir = (d.root / "no-slurm-here").string();
  auto ex = SlurmExecutor::make(s);
  ASSERT_FALSE(ex);
  EXPECT_NE(ex.error().message.find("sbatch does not run"), std::string::npos) << ex.error().message;
  s.jobDir.clear();
  EXPECT_FALSE(SlurmExecutor::make(s));
}

} // namespace
} // namespace hone::cluster
