#include "store/Store.h"

#include "support/JsonText.h"
#include "support/Sqlite.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cerrno>
#include <csignal>
#include <cstring>

#include <unistd.h>

namespace hone::store {

namespace {
/// The run's word for `what` ("artifact", "score") as its configuration keeps it, else `before`. A word is
/// printed and used as a JSON key: one that is long or holds anything but letters, digits, spaces and
/// `-_().` (a store edited by hand: control characters, markup) is not taken.
std::string presented(const nlohmann::json &config, const char *what, const std::string &before) {
  auto p = config.is_object() ? config.find("presentation") : config.end();
  if (!config.is_object() || p == config.end() || !p->is_object())
    return before;
  auto w = p->find(what);
  if (w == p->end() || !w->is_string())
    return before;
  const std::string &word = w->get_ref<const std::string &>();
  bool plain = !word.empty() && word.size() <= 40 && std::all_of(word.begin(), word.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || (c != '\0' && std::strchr(" -_().", c) != nullptr);
  });
  return plain ? word : before;
}

/// Runs stored before their configuration kept their words (this store's format until 2026-12): the two
/// domains hone had then called their candidates and scores so. A fact of old stores, read here only;
/// every later run, of any domain, carries its own words.
std::pair<std::string, std::string> wordsBefore(const std::string &domain) {
  if (domain == "kernel")
    return {"variant", "speedup"};
  if (domain == "mapping")
    return {"mapper", "score (relative)"};
  return {"candidate", "score"};
}
} // namespace

std::string RunInfo::artifactName() const { return presented(config, "artifact", wordsBefore(domain).first); }
std::string RunInfo::scoreName() const { return presented(config, "score", wordsBefore(domain).second); }

std::string scoreText(double score, double baseline) {
  return baseline > 0 ? fmt::format("{:.3f}x", score) : fmt::format("{:.4g}", score);
}

using support::Error;
using support::Expected;

namespace {

// Each entry migrates from version i to i + 1. Append; never edit a shipped one.
const std::array<const char *, 5> kMigrations = {
    R"(CREATE TABLE runs (
         id INTEGER PRIMARY KEY AUTOINCREMENT,
         created_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%SZ', 'now')),
         app TEXT NOT NULL, machine TEXT NOT NULL, agent TEXT NOT NULL,
         status TEXT NOT NULL, seed INTEGER NOT NULL, config TEXT NOT NULL);
       CREATE TABLE candidates (
         id INTEGER PRIMARY KEY AUTOINCREMENT,
         run_id INTEGER NOT NULL REFERENCES runs(id),
         hash TEXT NOT NULL, parent TEXT NOT NULL, rationale TEXT NOT NULL, artifact TEXT NOT NULL,
         UNIQUE (run_id, hash));
       CREATE TABLE evaluations (
         id INTEGER PRIMARY KEY AUTOINCREMENT,
         run_id INTEGER NOT NULL REFERENCES runs(id),
         candidate_id INTEGER NOT NULL REFERENCES candidates(id),
         sequence INTEGER NOT NULL,
         status TEXT NOT NULL, score REAL NOT NULL, metrics TEXT NOT NULL, error TEXT NOT NULL,
         raw_output TEXT NOT NULL, profile TEXT NOT NULL, seconds REAL NOT NULL,
         UNIQUE (run_id, sequence));
       CREATE TABLE feedback (
         evaluation_id INTEGER PRIMARY KEY REFERENCES evaluations(id),
         content TEXT NOT NULL);)",
    // 2: what the agent noted per candidate (LLM conversations, tokens, cost) and per run.
    R"(CREATE TABLE agent_notes (
         evaluation_id INTEGER PRIMARY KEY REFERENCES evaluations(id),
         content TEXT NOT NULL,
         prompt_tokens INTEGER NOT NULL DEFAULT 0, completion_tokens INTEGER NOT NULL DEFAULT 0,
         cost REAL NOT NULL DEFAULT 0);
       CREATE TABLE run_usage (
         run_id INTEGER PRIMARY KEY REFERENCES runs(id),
         prompt_tokens INTEGER NOT NULL, completion_tokens INTEGER NOT NULL, cost REAL NOT NULL,
         calls INTEGER NOT NULL);)",
    // 3: the run's domain (mapping, kernel); runs before it were all mappings.
    R"(ALTER TABLE runs ADD COLUMN domain TEXT NOT NULL DEFAULT 'mapping';)",
    // 4: the LLM client's response cache (until now created by the client; kept if it exists).
    R"(CREATE TABLE IF NOT EXISTS llm_cache (key TEXT PRIMARY KEY, request TEXT NOT NULL, response TEXT NOT NULL,
         created_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%SZ', 'now')));)",
    // 5: which process is running a run (tune or resume), so that a second one is refused.
    R"(CREATE TABLE IF NOT EXISTS run_locks (run_id INTEGER PRIMARY KEY REFERENCES runs(id), pid INTEGER NOT NULL,
         host TEXT NOT NULL, since TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%SZ', 'now')));)",
};

using support::Statement;
using support::Transaction;

/// A stored JSON text parsed; null when it does not parse or is nested deeper than hone ever writes
/// (support::kMaxJsonDepth: a damaged or forged row, which nlohmann's recursion would end hone on), and
/// then why in `problem` when given.
nlohmann::json parseJson(const std::string &text, std::string *problem = nullptr) {
  if (size_t depth = support::jsonDepth(text); depth > support::kMaxJsonDepth) {
    if (problem)
      *problem = fmt::format("nested {} deep (at most {} is read): not read", depth, support::kMaxJsonDepth);
    return nlohmann::json();
  }
  auto j = nlohmann::json::parse(text, nullptr, false);
  if (j.is_discarded() && problem && !text.empty())
    *problem = "not JSON: not read";
  return j.is_discarded() ? nlohmann::json() : j;
}

std::string excerpt(const std::string &raw) {
  return raw.size() <= kRawOutputLimit ? raw : raw.substr(raw.size() - kRawOutputLimit);
}

RunInfo readRun(const Statement &s) {
  RunInfo r;
  r.id = s.integer(0);
  r.createdAt = s.text(1);
  r.app = s.text(2);
  r.machine = s.text(3);
  r.agent = s.text(4);
  r.status = s.text(5);
  r.seed = static_cast<uint64_t>(s.integer(6));
  r.config = parseJson(s.text(7));
  r.domain = s.text(8);
  return r;
}

/// SQLite's own check of the file's pages and indexes (quick_check: linear in the file's size); a
/// damaged store would otherwise read as fewer runs and steps than it holds, or none.
Expected<bool> checkIntact(support::Database &db, const std::string &path) {
  Statement s(db, "PRAGMA quick_check(3);");
  std::vector<std::string> problems;
  for (int guard = 0; guard < 16; ++guard) {
    auto row = s.step();
    if (!row) {
      problems.push_back(row.error().message); // "database disk image is malformed"
      break;
    }
    if (!*row)
      break;
    if (s.text(0) != "ok")
      problems.push_back(s.text(0));
  }
  if (problems.empty())
    return true;
  return Error{fmt::format("{}: the store is damaged (SQLite's quick_check: {}); nothing was read from it. "
                           "Restore a copy, or recover what is left with: sqlite3 {} .recover | sqlite3 recovered.db",
                           path, fmt::join(problems, "; "), path)};
}

} // namespace

Expected<std::unique_ptr<Store>> Store::open(const std::string &path) {
  auto db = support::Database::open(path);
  if (!db)
    return Error{fmt::format("{}: cannot open the store: {}", path, db.error().message)};
  if (auto intact = checkIntact(**db, path); !intact)
    return intact.error();
  std::unique_ptr<Store> store(new Store(std::move(*db)));
  if (auto m = store->migrate(); !m)
    return Error{fmt::format("{}: {}", path, m.error().message)};
  return store;
}

Expected<std::unique_ptr<Store>> Store::openReadOnly(const std::string &path) {
  auto db = support::Database::open(path, support::Database::Mode::ReadOnly);
  if (!db)
    return Error{fmt::format("{}: cannot open the store: {}", path, db.error().message)};
  if (auto intact = checkIntact(**db, path); !intact)
    return intact.error();
  auto version = (*db)->userVersion();
  if (!version)
    return Error{fmt::format("{}: {}", path, version.error().message)};
  if (*version != latestSchemaVersion())
    return Error{fmt::format("{}: the store has schema version {}, this hone reads {}{}", path, *version,
                             latestSchemaVersion(),
                             *version <= 0 ? " (not a hone store, or an empty one)"
                             : *version < latestSchemaVersion()
                                 ? " (any command that writes, such as hone runs, migrates it)"
                                 : " (use a newer hone)")};
  std::unique_ptr<Store> store(new Store(std::move(*db)));
  store->version_ = static_cast<int>(*version);
  return store;
}

Store::Store(std::unique_ptr<support::Database> db) : db_(std::move(db)) {}
Store::~Store() = default;

int Store::schemaVersion() const { return version_; }
int Store::latestSchemaVersion() { return static_cast<int>(kMigrations.size()); }

Expected<bool> Store::migrate() {
  auto version = db_->userVersion();
  if (!version)
    return version.error();
  if (*version < 0)
    return Error{fmt::format("the store's schema version is {}, which no hone writes: this is not a hone store, or "
                             "it is damaged",
                             *version)};
  version_ = static_cast<int>(*version);
  if (version_ > latestSchemaVersion())
    return Error{fmt::format("the store has schema version {}, newer than this hone knows ({}); use a newer hone",
                             version_, latestSchemaVersion())};
  while (version_ < latestSchemaVersion()) {
    Transaction t(*db_); // BEGIN IMMEDIATE: one writer at a time
    if (!t.begun())
      return Error{fmt::format("migrating the store to schema version {}: {}", version_ + 1, t.begun().error().message)};
    // Read again under the lock: another hone creating the same new store may have migrated it
    // between the first reading and now.
    auto now = db_->userVersion();
    if (!now)
      return now.error();
    version_ = static_cast<int>(*now);
    if (version_ >= latestSchemaVersion())
      break;
    auto r = db_->exec(
        fmt::format("{} PRAGMA user_version = {};", kMigrations[static_cast<size_t>(version_)], version_ + 1));
    if (r)
      r = t.commit();
    if (!r)
      return Error{fmt::format("migrating the store to schema version {}: {}", version_ + 1, r.error().message)};
    ++version_;
  }
  return true;
}

Expected<int64_t> Store::createRun(const RunInfo &run) {
  Statement s(*db_,
              "INSERT INTO runs (app, machine, agent, status, seed, config, domain) VALUES (?, ?, ?, ?, ?, ?, ?);");
  s.bind(1, run.app).bind(2, run.machine).bind(3, run.agent).bind(4, run.status);
  s.bind(5, static_cast<int64_t>(run.seed)).bind(6, run.config.dump()).bind(7, run.domain);
  if (auto r = s.run(); !r)
    return Error{fmt::format("cannot create a run: {}", r.error().message)};
  return db_->lastInsertId();
}

namespace {
std::string hostName() {
  char name[256] = {};
  if (::gethostname(name, sizeof name - 1) != 0)
    return "?";
  return name;
}
// Whether a process of this host is alive (EPERM: alive, someone else's).
bool alive(int64_t pid) { return pid > 0 && (::kill(static_cast<pid_t>(pid), 0) == 0 || errno == EPERM); }
} // namespace

Expected<bool> Store::lockRun(int64_t run) {
  Transaction t(*db_); // BEGIN IMMEDIATE: two processes cannot both find the run free
  if (!t.begun())
    return Error{fmt::format("cannot lock run {}: {}", run, t.begun().error().message)};
  std::string host = hostName();
  Statement q(*db_, "SELECT pid, host, since FROM run_locks WHERE run_id = ?;");
  q.bind(1, run);
  auto row = q.step();
  if (!row)
    return Error{fmt::format("cannot lock run {}: {}", run, row.error().message)};
  if (*row) {
    int64_t pid = q.integer(0);
    std::string holder = q.text(1), since = q.text(2);
    bool mine = pid == static_cast<int64_t>(::getpid()) && holder == host;
    // A holder on this host that no longer runs (killed with SIGKILL) leaves a stale lock: taken over.
    if (!mine && (holder != host || alive(pid)))
      return Error{fmt::format("run {} is being run by process {} on {} (since {}); wait for it to end or stop it "
                               "first",
                               run, pid, holder, since)};
  }
  Statement w(*db_, "INSERT OR REPLACE INTO run_locks (run_id, pid, host) VALUES (?, ?, ?);");
  w.bind(1, run).bind(2, static_cast<int64_t>(::getpid())).bind(3, host);
  if (auto r = w.run(); !r)
    return Error{fmt::format("cannot lock run {}: {}", run, r.error().message)};
  if (auto c = t.commit(); !c)
    return Error{fmt::format("cannot lock run {}: {}", run, c.error().message)};
  return true;
}

Expected<bool> Store::unlockRun(int64_t run) {
  Statement s(*db_, "DELETE FROM run_locks WHERE run_id = ? AND pid = ?;");
  s.bind(1, run).bind(2, static_cast<int64_t>(::getpid()));
  if (auto r = s.run(); !r)
    return Error{fmt::format("cannot unlock run {}: {}", run, r.error().message)};
  return true;
}

Expected<bool> Store::setRunStatus(int64_t run, const std::string &status) {
  Statement s(*db_, "UPDATE runs SET status = ? WHERE id = ?;");
  s.bind(1, status).bind(2, run);
  if (auto r = s.run(); !r)
    return Error{fmt::format("cannot update run {}: {}", run, r.error().message)};
  if (db_->changes() == 0)
    return Error{fmt::format("no run {}", run)};
  return true;
}

Expected<bool> Store::setRunConfig(int64_t run, const nlohmann::json &config) {
  Statement s(*db_, "UPDATE runs SET config = ? WHERE id = ?;");
  s.bind(1, config.dump()).bind(2, run);
  if (auto r = s.run(); !r)
    return Error{fmt::format("cannot update run {}: {}", run, r.error().message)};
  if (db_->changes() == 0)
    return Error{fmt::format("no run {}", run)};
  return true;
}

std::vector<RunInfo> Store::runs() {
  std::vector<RunInfo> out;
  Statement s(*db_, "SELECT id, created_at, app, machine, agent, status, seed, config, domain FROM runs ORDER BY id;");
  for (auto row = s.step(); row && *row; row = s.step())
    out.push_back(readRun(s));
  return out;
}

std::optional<RunInfo> Store::run(int64_t id) {
  Statement s(*db_, "SELECT id, created_at, app, machine, agent, status, seed, config, domain FROM runs WHERE id = ?;");
  s.bind(1, id);
  auto row = s.step();
  if (!row || !*row)
    return std::nullopt;
  return readRun(s);
}

Expected<bool> Store::recordStep(int64_t run, const StepRecord &step) {
  Transaction t(*db_);
  auto fail = [&](const std::string &what, const Error &e) -> Expected<bool> {
    return Error{fmt::format("recording step {} of run {}: {}: {}", step.sequence, run, what, e.message)};
  };
  if (!t.begun())
    return fail("begin", t.begun().error());
  {
    Statement s(*db_, "INSERT OR IGNORE INTO candidates (run_id, hash, parent, rationale, artifact) "
                      "VALUES (?, ?, ?, ?, ?);");
    s.bind(1, run).bind(2, step.hash).bind(3, step.parent).bind(4, step.rationale).bind(5, step.artifact);
    if (auto r = s.run(); !r)
      return fail("candidate", r.error());
  }
  int64_t candidate = 0;
  {
    Statement s(*db_, "SELECT id FROM candidates WHERE run_id = ? AND hash = ?;");
    s.bind(1, run).bind(2, step.hash);
    auto row = s.step();
    if (!row)
      return fail("candidate lookup", row.error());
    if (!*row)
      return fail("candidate lookup", Error{"the candidate just written is not there"});
    candidate = s.integer(0);
  }
  {
    Statement s(*db_, "INSERT INTO evaluations (run_id, candidate_id, sequence, status, score, metrics, error, "
                      "raw_output, profile, seconds) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?);");
    s.bind(1, run).bind(2, candidate).bind(3, step.sequence).bind(4, step.status).bind(5, step.score);
    s.bind(6, step.metrics.dump())
        .bind(7, step.error)
        .bind(8, excerpt(step.rawOutput))
        .bind(9, support::withEvidence(step.profile, step.evidence).dump());
    s.bind(10, step.seconds);
    if (auto r = s.run(); !r)
      return fail("evaluation", r.error());
  }
  const int64_t evaluation = db_->lastInsertId();
  {
    Statement s(*db_, "INSERT INTO feedback (evaluation_id, content) VALUES (?, ?);");
    s.bind(1, evaluation).bind(2, support::toJson(step.feedback).dump());
    if (auto r = s.run(); !r)
      return fail("feedback", r.error());
  }
  if (!step.notes.is_null()) {
    Statement s(*db_, "INSERT INTO agent_notes (evaluation_id, content, prompt_tokens, completion_tokens, cost) "
                      "VALUES (?, ?, ?, ?, ?);");
    s.bind(1, evaluation).bind(2, step.notes.dump()).bind(3, step.promptTokens).bind(4, step.completionTokens);
    s.bind(5, step.cost);
    if (auto r = s.run(); !r)
      return fail("agent notes", r.error());
  }
  if (auto r = t.commit(); !r)
    return fail("commit", r.error());
  return true;
}

std::vector<StepRecord> Store::steps(int64_t run) {
  std::vector<StepRecord> out;
  Statement s(*db_, "SELECT e.sequence, c.artifact, c.hash, c.parent, c.rationale, e.status, e.score, e.metrics, "
                   "e.error, e.raw_output, e.profile, e.seconds, f.content, n.content, n.prompt_tokens, "
                   "n.completion_tokens, n.cost FROM evaluations e "
                   "JOIN candidates c ON c.id = e.candidate_id LEFT JOIN feedback f ON f.evaluation_id = e.id "
                   "LEFT JOIN agent_notes n ON n.evaluation_id = e.id WHERE e.run_id = ? ORDER BY e.sequence;");
  s.bind(1, run);
  for (auto row = s.step(); row && *row; row = s.step()) {
    StepRecord r;
    r.sequence = s.integer(0);
    r.artifact = s.text(1);
    r.hash = s.text(2);
    r.parent = s.text(3);
    r.rationale = s.text(4);
    r.status = s.text(5);
    r.score = s.real(6);
    r.metrics = parseJson(s.text(7));
    r.error = s.text(8);
    r.rawOutput = s.text(9);
    std::string profileProblem;
    r.profile = parseJson(s.text(10), &profileProblem);
    if (!profileProblem.empty())
      r.evidenceProblem = fmt::format("the profile of step {}: {}", r.sequence, profileProblem);
    else if (auto split = support::readEvidence(r.profile)) {
      r.profile = std::move(split->profile);
      r.evidence = std::move(split->evidence);
    } else {
      r.evidenceProblem = fmt::format("the evidence of step {}: {}", r.sequence, split.error().message);
    }
    r.seconds = s.real(11);
    std::string feedbackProblem;
    std::vector<std::string> leftOut; // findings that do not read: the others are kept
    auto feedback = support::readFeedback(parseJson(s.text(12), &feedbackProblem), &leftOut);
    if (feedback)
      r.feedback = std::move(*feedback);
    else
      feedbackProblem = feedback.error().message;
    if (!leftOut.empty())
      feedbackProblem = fmt::format("{} left out", fmt::join(leftOut, "; "));
    if (!feedbackProblem.empty())
      r.evidenceProblem += fmt::format("{}the feedback of step {}: {}", r.evidenceProblem.empty() ? "" : "; ",
                                       r.sequence, feedbackProblem);
    r.notes = parseJson(s.text(13)); // null when the agent noted nothing
    r.promptTokens = s.integer(14);
    r.completionTokens = s.integer(15);
    r.cost = s.real(16);
    out.push_back(std::move(r));
  }
  return out;
}

Expected<bool> Store::setRunUsage(int64_t run, const RunUsage &usage) {
  Statement s(*db_, "INSERT OR REPLACE INTO run_usage (run_id, prompt_tokens, completion_tokens, cost, calls) "
                    "VALUES (?, ?, ?, ?, ?);");
  s.bind(1, run).bind(2, usage.promptTokens).bind(3, usage.completionTokens).bind(4, usage.cost).bind(5, usage.calls);
  if (auto r = s.run(); !r)
    return Error{fmt::format("cannot save the usage of run {}: {}", run, r.error().message)};
  return true;
}

RunUsage Store::runUsage(int64_t run) {
  RunUsage u;
  Statement s(*db_, "SELECT prompt_tokens, completion_tokens, cost, calls FROM run_usage WHERE run_id = ?;");
  s.bind(1, run);
  if (auto row = s.step(); row && *row) {
    u.promptTokens = s.integer(0);
    u.completionTokens = s.integer(1);
    u.cost = s.real(2);
    u.calls = s.integer(3);
  }
  return u;
}

Expected<int64_t> Store::importRun(Store &from, int64_t run) {
  auto info = from.run(run);
  if (!info)
    return Error{fmt::format("run {} is not in the store", run)};
  auto id = createRun(*info);
  if (!id)
    return id.error();
  for (const StepRecord &step : from.steps(run))
    if (auto r = recordStep(*id, step); !r)
      return Error{fmt::format("run {}, step {}: {}", run, step.sequence, r.error().message)};
  if (auto r = setRunUsage(*id, from.runUsage(run)); !r)
    return r.error();
  return *id;
}

} // namespace hone::store
