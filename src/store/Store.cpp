#include "store/Store.h"

#include <fmt/format.h>
#include <sqlite3.h>

#include <array>

namespace hone::store {

using support::Error;
using support::Expected;

namespace {

// Each entry migrates from version i to i + 1. Append; never edit a shipped one.
const std::array<const char *, 3> kMigrations = {
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
};

class Statement {
public:
  Statement(sqlite3 *db, const char *sql) { ok_ = sqlite3_prepare_v2(db, sql, -1, &stmt_, nullptr) == SQLITE_OK; }
  ~Statement() { sqlite3_finalize(stmt_); }
  Statement(const Statement &) = delete;
  Statement &operator=(const Statement &) = delete;
  bool ok() const { return ok_; }
  Statement &bind(int i, const std::string &v) {
    sqlite3_bind_text(stmt_, i, v.c_str(), static_cast<int>(v.size()), SQLITE_TRANSIENT);
    return *this;
  }
  Statement &bind(int i, int64_t v) {
    sqlite3_bind_int64(stmt_, i, v);
    return *this;
  }
  Statement &bind(int i, double v) {
    sqlite3_bind_double(stmt_, i, v);
    return *this;
  }
  int step() { return sqlite3_step(stmt_); }
  std::string text(int col) const {
    auto p = sqlite3_column_text(stmt_, col);
    return p ? std::string(reinterpret_cast<const char *>(p), static_cast<size_t>(sqlite3_column_bytes(stmt_, col)))
             : std::string();
  }
  int64_t integer(int col) const { return sqlite3_column_int64(stmt_, col); }
  double real(int col) const { return sqlite3_column_double(stmt_, col); }

private:
  sqlite3_stmt *stmt_ = nullptr;
  bool ok_ = false;
};

nlohmann::json parseJson(const std::string &text) {
  auto j = nlohmann::json::parse(text, nullptr, false);
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

} // namespace

Expected<std::unique_ptr<Store>> Store::open(const std::string &path) {
  sqlite3 *db = nullptr;
  if (sqlite3_open(path.c_str(), &db) != SQLITE_OK) {
    std::string message = db ? sqlite3_errmsg(db) : "out of memory";
    sqlite3_close(db);
    return Error{fmt::format("{}: cannot open the store: {}", path, message)};
  }
  sqlite3_busy_timeout(db, 5000);
  std::unique_ptr<Store> store(new Store(db));
  for (const char *pragma : {"PRAGMA journal_mode=WAL;", "PRAGMA synchronous=NORMAL;", "PRAGMA foreign_keys=ON;"})
    if (auto r = store->exec(pragma); !r)
      return Error{fmt::format("{}: {}", path, r.error().message)};
  if (auto m = store->migrate(); !m)
    return Error{fmt::format("{}: {}", path, m.error().message)};
  return store;
}

Store::~Store() { sqlite3_close(db_); }

int Store::schemaVersion() const { return version_; }
int Store::latestSchemaVersion() { return static_cast<int>(kMigrations.size()); }

Expected<bool> Store::exec(const std::string &sql) {
  char *message = nullptr;
  if (sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, &message) != SQLITE_OK) {
    std::string text = message ? message : sqlite3_errmsg(db_);
    sqlite3_free(message);
    return Error{text};
  }
  return true;
}

Expected<bool> Store::migrate() {
  {
    Statement s(db_, "PRAGMA user_version;");
    if (s.ok() && s.step() == SQLITE_ROW)
      version_ = static_cast<int>(s.integer(0));
  }
  if (version_ > latestSchemaVersion())
    return Error{fmt::format("the store has schema version {}, newer than this hone knows ({}); use a newer hone",
                             version_, latestSchemaVersion())};
  while (version_ < latestSchemaVersion()) {
    std::string sql = fmt::format("BEGIN IMMEDIATE; {} PRAGMA user_version = {}; COMMIT;",
                                  kMigrations[static_cast<size_t>(version_)], version_ + 1);
    if (auto r = exec(sql); !r) {
      (void)exec("ROLLBACK;");
      return Error{fmt::format("migrating the store to schema version {}: {}", version_ + 1, r.error().message)};
    }
    ++version_;
  }
  return true;
}

Expected<int64_t> Store::createRun(const RunInfo &run) {
  Statement s(db_,
              "INSERT INTO runs (app, machine, agent, status, seed, config, domain) VALUES (?, ?, ?, ?, ?, ?, ?);");
  s.bind(1, run.app).bind(2, run.machine).bind(3, run.agent).bind(4, run.status);
  s.bind(5, static_cast<int64_t>(run.seed)).bind(6, run.config.dump()).bind(7, run.domain);
  if (s.step() != SQLITE_DONE)
    return Error{fmt::format("cannot create a run: {}", sqlite3_errmsg(db_))};
  return static_cast<int64_t>(sqlite3_last_insert_rowid(db_));
}

Expected<bool> Store::setRunStatus(int64_t run, const std::string &status) {
  Statement s(db_, "UPDATE runs SET status = ? WHERE id = ?;");
  s.bind(1, status).bind(2, run);
  if (s.step() != SQLITE_DONE)
    return Error{fmt::format("cannot update run {}: {}", run, sqlite3_errmsg(db_))};
  if (sqlite3_changes(db_) == 0)
    return Error{fmt::format("no run {}", run)};
  return true;
}

std::vector<RunInfo> Store::runs() {
  std::vector<RunInfo> out;
  Statement s(db_, "SELECT id, created_at, app, machine, agent, status, seed, config, domain FROM runs ORDER BY id;");
  while (s.step() == SQLITE_ROW)
    out.push_back(readRun(s));
  return out;
}

std::optional<RunInfo> Store::run(int64_t id) {
  Statement s(db_, "SELECT id, created_at, app, machine, agent, status, seed, config, domain FROM runs WHERE id = ?;");
  s.bind(1, id);
  if (s.step() != SQLITE_ROW)
    return std::nullopt;
  return readRun(s);
}

Expected<bool> Store::recordStep(int64_t run, const StepRecord &step) {
  if (auto r = exec("BEGIN IMMEDIATE;"); !r)
    return r;
  auto fail = [&](const std::string &what) -> Expected<bool> {
    std::string message = fmt::format("recording step {} of run {}: {}: {}", step.sequence, run, what,
                                      sqlite3_errmsg(db_));
    (void)exec("ROLLBACK;");
    return Error{message};
  };
  {
    Statement s(db_, "INSERT OR IGNORE INTO candidates (run_id, hash, parent, rationale, artifact) "
                     "VALUES (?, ?, ?, ?, ?);");
    s.bind(1, run).bind(2, step.hash).bind(3, step.parent).bind(4, step.rationale).bind(5, step.artifact);
    if (s.step() != SQLITE_DONE)
      return fail("candidate");
  }
  int64_t candidate = 0;
  {
    Statement s(db_, "SELECT id FROM candidates WHERE run_id = ? AND hash = ?;");
    s.bind(1, run).bind(2, step.hash);
    if (s.step() != SQLITE_ROW)
      return fail("candidate lookup");
    candidate = s.integer(0);
  }
  {
    Statement s(db_, "INSERT INTO evaluations (run_id, candidate_id, sequence, status, score, metrics, error, "
                     "raw_output, profile, seconds) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?);");
    s.bind(1, run).bind(2, candidate).bind(3, step.sequence).bind(4, step.status).bind(5, step.score);
    s.bind(6, step.metrics.dump()).bind(7, step.error).bind(8, excerpt(step.rawOutput)).bind(9, step.profile.dump());
    s.bind(10, step.seconds);
    if (s.step() != SQLITE_DONE)
      return fail("evaluation");
  }
  const auto evaluation = static_cast<int64_t>(sqlite3_last_insert_rowid(db_));
  {
    Statement s(db_, "INSERT INTO feedback (evaluation_id, content) VALUES (?, ?);");
    s.bind(1, evaluation).bind(2, step.feedback.dump());
    if (s.step() != SQLITE_DONE)
      return fail("feedback");
  }
  if (!step.notes.is_null()) {
    Statement s(db_, "INSERT INTO agent_notes (evaluation_id, content, prompt_tokens, completion_tokens, cost) "
                     "VALUES (?, ?, ?, ?, ?);");
    s.bind(1, evaluation).bind(2, step.notes.dump()).bind(3, step.promptTokens).bind(4, step.completionTokens);
    s.bind(5, step.cost);
    if (s.step() != SQLITE_DONE)
      return fail("agent notes");
  }
  if (auto r = exec("COMMIT;"); !r)
    return fail("commit");
  return true;
}

std::vector<StepRecord> Store::steps(int64_t run) {
  std::vector<StepRecord> out;
  Statement s(db_, "SELECT e.sequence, c.artifact, c.hash, c.parent, c.rationale, e.status, e.score, e.metrics, "
                   "e.error, e.raw_output, e.profile, e.seconds, f.content, n.content, n.prompt_tokens, "
                   "n.completion_tokens, n.cost FROM evaluations e "
                   "JOIN candidates c ON c.id = e.candidate_id LEFT JOIN feedback f ON f.evaluation_id = e.id "
                   "LEFT JOIN agent_notes n ON n.evaluation_id = e.id WHERE e.run_id = ? ORDER BY e.sequence;");
  s.bind(1, run);
  while (s.step() == SQLITE_ROW) {
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
    r.profile = parseJson(s.text(10));
    r.seconds = s.real(11);
    r.feedback = parseJson(s.text(12));
    r.notes = parseJson(s.text(13)); // null when the agent noted nothing
    r.promptTokens = s.integer(14);
    r.completionTokens = s.integer(15);
    r.cost = s.real(16);
    out.push_back(std::move(r));
  }
  return out;
}

Expected<bool> Store::setRunUsage(int64_t run, const RunUsage &usage) {
  Statement s(db_, "INSERT OR REPLACE INTO run_usage (run_id, prompt_tokens, completion_tokens, cost, calls) "
                   "VALUES (?, ?, ?, ?, ?);");
  s.bind(1, run).bind(2, usage.promptTokens).bind(3, usage.completionTokens).bind(4, usage.cost).bind(5, usage.calls);
  if (s.step() != SQLITE_DONE)
    return Error{fmt::format("cannot save the usage of run {}: {}", run, sqlite3_errmsg(db_))};
  return true;
}

RunUsage Store::runUsage(int64_t run) {
  RunUsage u;
  Statement s(db_, "SELECT prompt_tokens, completion_tokens, cost, calls FROM run_usage WHERE run_id = ?;");
  s.bind(1, run);
  if (s.step() == SQLITE_ROW) {
    u.promptTokens = s.integer(0);
    u.completionTokens = s.integer(1);
    u.cost = s.real(2);
    u.calls = s.integer(3);
  }
  return u;
}

} // namespace hone::store
