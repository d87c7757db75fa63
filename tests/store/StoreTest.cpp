// The experiment store: schema and migrations, runs, steps in one
// transaction each, and a writer killed with SIGKILL losing nothing it committed.
#include "store/Store.h"

#include <gtest/gtest.h>

#include <csignal>
#include <filesystem>
#include <sqlite3.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>
#include <vector>

namespace hone::store {
namespace {

using nlohmann::json;

struct TempDb {
  std::string path = std::filesystem::temp_directory_path() /
                     ("hone-store-test-" + std::to_string(getpid()) + "-" + std::to_string(counter++) + ".db");
  ~TempDb() {
    for (const char *suffix : {"", "-wal", "-shm"})
      std::filesystem::remove(path + suffix);
  }
  static inline int counter = 0;
};

std::unique_ptr<Store> openOk(const std::string &path) {
  auto s = Store::open(path);
  EXPECT_TRUE(s.ok()) << s.error().message;
  return std::move(s).value();
}

StepRecord step(int64_t sequence, const std::string &artifact) {
  StepRecord s;
  s.sequence = sequence;
  s.artifact = artifact;
  s.hash = "h" + artifact;
  s.rationale = "because";
  s.status = "ok";
  s.score = static_cast<double>(sequence);
  s.metrics = {{"time_s", 1.5}};
  s.feedback.given = true;
  s.feedback.execution = "fine";
  return s;
}

TEST(Store, CreatesTheSchemaInWalModeAndReopens) {
  TempDb db;
  {
    auto s = Store::open(db.path);
    ASSERT_TRUE(s.ok()) << s.error().message;
    EXPECT_EQ((*s)->schemaVersion(), Store::latestSchemaVersion());
  }
  sqlite3 *raw = nullptr;
  ASSERT_EQ(sqlite3_open(db.path.c_str(), &raw), SQLITE_OK);
  sqlite3_stmt *st = nullptr;
  sqlite3_prepare_v2(raw, "PRAGMA journal_mode;", -1, &st, nullptr);
  ASSERT_EQ(sqlite3_step(st), SQLITE_ROW);
  EXPECT_STREQ(reinterpret_cast<const char *>(sqlite3_column_text(st, 0)), "wal");
  sqlite3_finalize(st);
  // A store written by a newer hone is refused, untouched.
  sqlite3_exec(raw, "PRAGMA user_version = 99;", nullptr, nullptr, nullptr);
  sqlite3_close(raw);
  auto newer = Store::open(db.path);
  ASSERT_FALSE(newer.ok());
  EXPECT_NE(newer.error().message.find("schema version 99"), std::string::npos) << newer.error().message;
}

TEST(Store, AnOlderStoreIsMigratedAndKeepsItsSteps) {
  TempDb db;
  int64_t id = 0;
  {
    auto s = openOk(db.path);
    id = *s->createRun(RunInfo{});
    ASSERT_TRUE(s->recordStep(id, step(0, "a")).ok());
  }
  // Make it the version-1 store an earlier hone wrote: no agent notes, no usage.
  sqlite3 *raw = nullptr;
  ASSERT_EQ(sqlite3_open(db.path.c_str(), &raw), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(raw, "DROP TABLE agent_notes; DROP TABLE run_usage; DROP TABLE run_locks; "
                         "ALTER TABLE runs DROP COLUMN domain; "
                         "PRAGMA user_version = 1;", nullptr,
                         nullptr, nullptr),
            SQLITE_OK);
  sqlite3_close(raw);
  auto s = openOk(db.path);
  EXPECT_EQ(s->schemaVersion(), Store::latestSchemaVersion());
  EXPECT_EQ(s->run(id)->domain, "mapping"); // runs before the domain column were all mappings
  auto steps = s->steps(id);
  ASSERT_EQ(steps.size(), 1u);
  EXPECT_EQ(steps[0].artifact, "a");
  EXPECT_TRUE(steps[0].notes.is_null());
  StepRecord noted = step(1, "b");
  noted.notes = {{"messages", json::array({{{"role", "user"}, {"content", "improve"}}})}};
  noted.promptTokens = 120;
  noted.completionTokens = 30;
  noted.cost = 0.25;
  ASSERT_TRUE(s->recordStep(id, noted).ok());
  steps = s->steps(id);
  ASSERT_EQ(steps.size(), 2u);
  EXPECT_EQ(steps[1].notes["messages"][0]["content"], "improve");
  EXPECT_EQ(steps[1].promptTokens, 120);
  EXPECT_EQ(steps[1].completionTokens, 30);
  EXPECT_DOUBLE_EQ(steps[1].cost, 0.25);
  EXPECT_EQ(s->runUsage(id).calls, 0);
  ASSERT_TRUE(s->setRunUsage(id, RunUsage{150, 40, 0.5, 3}).ok());
  ASSERT_TRUE(s->setRunUsage(id, RunUsage{300, 80, 1.0, 4}).ok()); // replaced, not added
  EXPECT_EQ(s->runUsage(id).promptTokens, 300);
  EXPECT_EQ(s->runUsage(id).calls, 4);
}

TEST(Store, AStepsEvidenceIsKeptTypedAndDamagedEvidenceLosesNothing) {
  TempDb db;
  auto s = openOk(db.path);
  int64_t id = *s->createRun(RunInfo{});
  StepRecord measured = step(0, "a");
  measured.profile = {{"time_s", 2.0}};
  measured.evidence.tool = "simulator";
  support::Bottleneck b;
  b.kind = "channel";
  b.subject = "copies";
  b.share = 0.5;
  b.detail = "copies are in flight half of the time";
  b.numbers = {{"bytes", {4e9, "bytes"}}};
  measured.evidence.bottlenecks = {b};
  ASSERT_TRUE(s->recordStep(id, measured).ok());
  // A row that a newer hone wrote (or that was damaged): its evidence cannot be read.
  StepRecord newer = step(1, "b");
  newer.profile = {{"time_s", 3.0}, {"evidence_version", 9}, {"bottlenecks", json::array()}};
  ASSERT_TRUE(s->recordStep(id, newer).ok());
  auto steps = s->steps(id);
  ASSERT_EQ(steps.size(), 2u);
  EXPECT_EQ(steps[0].evidence, measured.evidence);
  EXPECT_EQ(steps[0].profile, measured.profile);
  EXPECT_TRUE(steps[0].evidenceProblem.empty());
  EXPECT_FALSE(steps[1].evidence.profiled());
  EXPECT_EQ(steps[1].profile, newer.profile) << "kept whole";
  EXPECT_EQ(steps[1].evidenceProblem,
            "the evidence of step 1: evidence_version 9: written by a newer hone (this one reads up to 2)");
}

TEST(Store, ARowNestedDeeperThanHoneWritesIsSaidNotFollowed) {
  TempDb db;
  int64_t id = 0;
  {
    auto s = openOk(db.path);
    id = *s->createRun(RunInfo{});
    ASSERT_TRUE(s->recordStep(id, step(0, "a")).ok());
    ASSERT_TRUE(s->recordStep(id, step(1, "b")).ok());
  }
  // A damaged or forged row: a profile and feedback nested 200000 deep (parsed, then copied, they
  // would exhaust the stack), and a profile that is not JSON at all.
  std::string deep = std::string(200000, '[') + std::string(200000, ']');
  sqlite3 *raw = nullptr;
  ASSERT_EQ(sqlite3_open(db.path.c_str(), &raw), SQLITE_OK);
  sqlite3_stmt *update = nullptr;
  ASSERT_EQ(sqlite3_prepare_v2(raw, "UPDATE evaluations SET profile = ? WHERE sequence = ?;", -1, &update, nullptr),
            SQLITE_OK);
  for (auto [text, sequence] : {std::pair<std::string, int>{deep, 0}, {"{\"time_s\": 2", 1}}) {
    sqlite3_bind_text(update, 1, text.c_str(), static_cast<int>(text.size()), SQLITE_TRANSIENT);
    sqlite3_bind_int(update, 2, sequence);
    ASSERT_EQ(sqlite3_step(update), SQLITE_DONE);
    sqlite3_reset(update);
  }
  sqlite3_finalize(update);
  ASSERT_EQ(sqlite3_exec(raw, ("UPDATE feedback SET content = '" + deep + "';").c_str(), nullptr, nullptr, nullptr),
            SQLITE_OK);
  sqlite3_close(raw);
  auto s = openOk(db.path);
  auto steps = s->steps(id);
  ASSERT_EQ(steps.size(), 2u) << "every step is still read";
  EXPECT_TRUE(steps[0].profile.is_null());
  EXPECT_FALSE(steps[0].feedback.given);
  EXPECT_EQ(steps[0].artifact, "a");
  EXPECT_EQ(steps[0].evidenceProblem, "the profile of step 0: nested 200000 deep (at most 256 is read): not read; "
                                      "the feedback of step 0: nested 200000 deep (at most 256 is read): not read");
  EXPECT_EQ(steps[1].evidenceProblem, "the profile of step 1: not JSON: not read; the feedback of step 1: nested "
                                      "200000 deep (at most 256 is read): not read");
  EXPECT_DOUBLE_EQ(steps[1].score, 1.0);
}

TEST(Store, UnopenablePathIsAnError) {
  auto s = Store::open("/no/such/folder/hone.db");
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().message.find("/no/such/folder/hone.db"), std::string::npos);
}

TEST(Store, APipeOrAFolderIsRefusedNotWaitedOn) {
  TempDb db;
  ASSERT_EQ(::mkfifo(db.path.c_str(), 0600), 0);
  for (bool readOnly : {false, true}) {
    auto s = readOnly ? Store::openReadOnly(db.path) : Store::open(db.path); // returns: no writer is waited for
    ASSERT_FALSE(s.ok());
    EXPECT_NE(s.error().message.find("not a regular file (a pipe, a socket or a device)"), std::string::npos)
        << s.error().message;
  }
  auto dir = Store::open(std::filesystem::temp_directory_path().string());
  ASSERT_FALSE(dir.ok());
  EXPECT_NE(dir.error().message.find("(a folder)"), std::string::npos) << dir.error().message;
}

TEST(Store, TwoProcessesCreatingOneNewStoreBothGetIt) {
  // Each reads schema version 0, then migrates: the second must see the first's work under the
  // write lock, not create the tables again ("table runs already exists").
  for (int trial = 0; trial < 6; ++trial) {
    TempDb db;
    std::vector<std::string> errors(4);
    std::vector<std::thread> openers;
    for (size_t i = 0; i < errors.size(); ++i)
      openers.emplace_back([&, i] {
        auto s = Store::open(db.path);
        if (!s.ok())
          errors[i] = s.error().message;
        else if (auto r = (*s)->createRun(RunInfo{}); !r.ok())
          errors[i] = r.error().message;
      });
    for (auto &t : openers)
      t.join();
    for (const auto &e : errors)
      EXPECT_EQ(e, "") << "trial " << trial;
    EXPECT_EQ(openOk(db.path)->schemaVersion(), Store::latestSchemaVersion());
  }
}

TEST(Store, ADamagedStoreIsSaidSoNotReadAsEmpty) {
  TempDb db;
  {
    auto s = openOk(db.path);
    auto run = s->createRun(RunInfo{});
    ASSERT_TRUE(run.ok());
    for (int i = 0; i < 400; ++i)
      ASSERT_TRUE(s->recordStep(*run, step(i, std::string(600, static_cast<char>('a' + i % 26)))).ok());
  }
  sqlite3 *raw = nullptr; // fold the write-ahead log in, so that the pages are in the file
  ASSERT_EQ(sqlite3_open(db.path.c_str(), &raw), SQLITE_OK);
  sqlite3_exec(raw, "PRAGMA wal_checkpoint(TRUNCATE);", nullptr, nullptr, nullptr);
  sqlite3_close(raw);
  auto size = std::filesystem::file_size(db.path);
  ASSERT_GT(size, 8192u);
  { // overwrite pages in the middle, as a failing disk or a stray writer would
    FILE *f = std::fopen(db.path.c_str(), "r+b");
    ASSERT_NE(f, nullptr);
    std::fseek(f, static_cast<long>(size / 2), SEEK_SET);
    std::string junk(8192, '\x5a');
    std::fwrite(junk.data(), 1, junk.size(), f);
    std::fclose(f);
  }
  for (bool readOnly : {true, false}) {
    auto s = readOnly ? Store::openReadOnly(db.path) : Store::open(db.path);
    ASSERT_FALSE(s.ok()) << (readOnly ? "read-only" : "read-write");
    EXPECT_NE(s.error().message.find("the store is damaged"), std::string::npos) << s.error().message;
    EXPECT_NE(s.error().message.find(".recover"), std::string::npos) << s.error().message;
  }
}

TEST(Store, RunsAndStepsRoundTrip) {
  TempDb db;
  auto s = openOk(db.path);
  RunInfo info;
  info.app = "circuit";
  info.machine = "p100x4";
  info.agent = "guided";
  info.seed = 7;
  info.config = {{"iterations", 10}};
  int64_t id = *s->createRun(info);
  int64_t other = *s->createRun(info);
  EXPECT_NE(id, other);
  ASSERT_TRUE(s->recordStep(id, step(0, "a")).ok());
  StepRecord failed = step(1, "b");
  failed.status = "run_failed";
  failed.error = "Slice processor index out of bound";
  failed.rawOutput = std::string(kRawOutputLimit + 100, 'x') + "END";
  ASSERT_TRUE(s->recordStep(id, failed).ok());
  ASSERT_TRUE(s->recordStep(id, step(2, "a")).ok()); // the same candidate again: one candidate row
  auto steps = s->steps(id);
  ASSERT_EQ(steps.size(), 3u);
  EXPECT_EQ(steps[0].artifact, "a");
  EXPECT_EQ(steps[0].metrics["time_s"], 1.5);
  EXPECT_EQ(steps[0].feedback.execution, "fine");
  EXPECT_EQ(steps[1].error, "Slice processor index out of bound");
  EXPECT_EQ(steps[1].rawOutput.size(), kRawOutputLimit);
  EXPECT_EQ(steps[1].rawOutput.substr(kRawOutputLimit - 3), "END");
  EXPECT_EQ(steps[2].hash, "ha");
  EXPECT_TRUE(s->steps(other).empty());
  ASSERT_TRUE(s->setRunStatus(id, "finished").ok());
  EXPECT_FALSE(s->setRunStatus(12345, "finished").ok());
  auto runs = s->runs();
  ASSERT_EQ(runs.size(), 2u);
  EXPECT_EQ(runs[0].status, "finished");
  EXPECT_EQ(runs[0].seed, 7u);
  EXPECT_EQ(runs[0].config["iterations"], 10);
  EXPECT_FALSE(runs[0].createdAt.empty());
  EXPECT_FALSE(s->run(999).has_value());
}

TEST(Store, ARunIsImportedWithItsStepsFeedbackNotesAndUsage) {
  TempDb a, b;
  auto from = openOk(a.path);
  auto to = openOk(b.path);
  RunInfo info;
  info.domain = "kernel";
  info.app = "dot";
  info.agent = "random";
  info.seed = 3;
  info.status = "finished";
  info.config = {{"iterations", 2}};
  int64_t src = *from->createRun(info);
  StepRecord first = step(0, "a");
  first.notes = {{"conversation", "hi"}};
  first.profile = {{"tasks", json::array()}};
  ASSERT_TRUE(from->recordStep(src, first).ok());
  ASSERT_TRUE(from->recordStep(src, step(1, "b")).ok());
  RunUsage usage;
  usage.calls = 4;
  usage.promptTokens = 100;
  ASSERT_TRUE(from->setRunUsage(src, usage).ok());
  (void)*to->createRun(RunInfo{}); // the target has runs of its own: ids are its own
  auto id = to->importRun(*from, src);
  ASSERT_TRUE(id) << id.error().message;
  EXPECT_EQ(*id, 2);
  auto run = to->run(*id);
  ASSERT_TRUE(run);
  EXPECT_EQ(run->domain, "kernel");
  EXPECT_EQ(run->status, "finished");
  EXPECT_EQ(run->seed, 3u);
  EXPECT_EQ(run->config, info.config);
  auto steps = to->steps(*id);
  ASSERT_EQ(steps.size(), 2u);
  EXPECT_EQ(steps[0].notes["conversation"], "hi");
  EXPECT_EQ(steps[0].feedback.execution, "fine");
  EXPECT_TRUE(steps[0].profile.contains("tasks"));
  EXPECT_EQ(steps[1].artifact, "b");
  EXPECT_EQ(to->runUsage(*id).calls, 4);
  EXPECT_FALSE(to->importRun(*from, 99));
}

TEST(Store, AFailedRecordLeavesNothingBehind) {
  TempDb db;
  auto s = openOk(db.path);
  int64_t id = *s->createRun({});
  ASSERT_TRUE(s->recordStep(id, step(0, "a")).ok());
  auto dup = s->recordStep(id, step(0, "new")); // sequence 0 again
  ASSERT_FALSE(dup.ok());
  EXPECT_NE(dup.error().message.find("step 0 of run"), std::string::npos);
  auto steps = s->steps(id);
  ASSERT_EQ(steps.size(), 1u);
  ASSERT_TRUE(s->recordStep(id, step(1, "b")).ok()) << "the store stays usable";
}

TEST(Store, KillMinus9LosesNothingCommitted) {
  TempDb db;
  int64_t id = 0;
  {
    auto s = openOk(db.path);
    id = *s->createRun({});
  }
  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    auto s = Store::open(db.path);
    for (int64_t i = 0;; ++i)
      if (!(*s)->recordStep(id, step(i, "candidate " + std::to_string(i))).ok())
        _exit(1);
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  kill(child, SIGKILL);
  int status = 0;
  waitpid(child, &status, 0);
  ASSERT_TRUE(WIFSIGNALED(status));
  auto s = Store::open(db.path);
  ASSERT_TRUE(s.ok()) << s.error().message;
  auto steps = (*s)->steps(id);
  ASSERT_GT(steps.size(), 0u);
  for (size_t i = 0; i < steps.size(); ++i) {
    EXPECT_EQ(steps[i].sequence, static_cast<int64_t>(i)) << "a gap or a partial step";
    EXPECT_EQ(steps[i].feedback.execution, "fine") << "a step without its feedback";
  }
  // And the run continues where it stopped.
  EXPECT_TRUE((*s)->recordStep(id, step(static_cast<int64_t>(steps.size()), "next")).ok());
}

TEST(Store, ARunIsRunByOneProcessAtATime) {
  TempDb db;
  auto s = openOk(db.path);
  int64_t id = *s->createRun(RunInfo{});
  ASSERT_TRUE(s->lockRun(id).ok());
  ASSERT_TRUE(s->lockRun(id).ok()); // this process again
  char host[256] = {};
  ::gethostname(host, sizeof host - 1);
  auto holder = [&](int64_t pid, const std::string &on) {
    sqlite3 *raw = nullptr;
    ASSERT_EQ(sqlite3_open(db.path.c_str(), &raw), SQLITE_OK);
    std::string sql = "UPDATE run_locks SET pid = " + std::to_string(pid) + ", host = '" + on + "';";
    ASSERT_EQ(sqlite3_exec(raw, sql.c_str(), nullptr, nullptr, nullptr), SQLITE_OK);
    sqlite3_close(raw);
  };
  // Another live process on this host (our parent) holds it: refused, naming it.
  holder(::getppid(), host);
  auto refused = s->lockRun(id);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.error().message.find("is being run by process " + std::to_string(::getppid())),
            std::string::npos)
      << refused.error().message;
  // A holder that is gone (killed with SIGKILL, say) left a stale lock: taken over.
  pid_t child = ::fork();
  if (child == 0)
    ::_exit(0);
  ::waitpid(child, nullptr, 0);
  holder(child, host);
  EXPECT_TRUE(s->lockRun(id).ok());
  // Another host's holder cannot be checked from here: refused.
  holder(12345, "another-host");
  EXPECT_FALSE(s->lockRun(id).ok());
  holder(::getpid(), host);
  ASSERT_TRUE(s->unlockRun(id).ok());
  EXPECT_TRUE(s->lockRun(id).ok());
}

} // namespace
} // namespace hone::store
