#include "support/Sqlite.h"

#include <fmt/format.h>
#include <sqlite3.h>

#include <chrono>
#include <filesystem>
#include <thread>

namespace hone::support {

namespace {
std::string quote(const std::string &sql) {
  std::string s = sql.size() > 160 ? sql.substr(0, 157) + "..." : sql;
  for (char &c : s)
    if (c == '\n')
      c = ' ';
  return s;
}
} // namespace

Expected<std::unique_ptr<Database>> Database::open(const std::string &path, Mode mode) {
  sqlite3 *db = nullptr;
  // SQLite would open a pipe and wait for a writer for ever, or read a device: a store is a file.
  std::error_code ec;
  auto st = std::filesystem::status(path, ec);
  if (path != ":memory:" && !ec && std::filesystem::exists(st) && !std::filesystem::is_regular_file(st))
    return Error{fmt::format("{}: cannot open: not a regular file ({}); a store is a file", path,
                             std::filesystem::is_directory(st) ? "a folder" : "a pipe, a socket or a device")};
  int flags = mode == Mode::ReadOnly ? SQLITE_OPEN_READONLY : SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE;
  if (sqlite3_open_v2(path.c_str(), &db, flags | SQLITE_OPEN_FULLMUTEX, nullptr) != SQLITE_OK) {
    std::string message = db ? sqlite3_errmsg(db) : "out of memory";
    sqlite3_close(db);
    return Error{fmt::format("{}: cannot open: {}", path, message)};
  }
  std::unique_ptr<Database> d(new Database(db, path));
  sqlite3_busy_timeout(db, 5000);
  if (mode == Mode::ReadWriteCreate)
    for (const char *pragma : {"PRAGMA journal_mode=WAL;", "PRAGMA synchronous=NORMAL;", "PRAGMA foreign_keys=ON;"}) {
      // Switching a new file to WAL takes an exclusive lock, for which SQLite calls no busy handler:
      // two processes creating one store meet here, and the later one waits its turn by hand.
      auto r = d->exec(pragma);
      for (int attempt = 0; !r && attempt < 250 && sqlite3_errcode(db) == SQLITE_BUSY; ++attempt) {
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
        r = d->exec(pragma);
      }
      if (!r)
        return Error{fmt::format("{}: {}", path, r.error().message)};
    }
  return d;
}

Database::~Database() { sqlite3_close(db_); }

Expected<bool> Database::exec(const std::string &sql) {
  char *message = nullptr;
  if (sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, &message) != SQLITE_OK) {
    std::string text = message ? message : sqlite3_errmsg(db_);
    sqlite3_free(message);
    return Error{fmt::format("{} (in: {})", text, quote(sql))};
  }
  return true;
}

Expected<int64_t> Database::userVersion() {
  Statement s(*this, "PRAGMA user_version;");
  auto row = s.step();
  if (!row)
    return row.error();
  return *row ? s.integer(0) : int64_t{0};
}

Expected<bool> Database::hasTable(const std::string &name) {
  Statement s(*this, "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?;");
  s.bind(1, name);
  return s.step();
}

int64_t Database::lastInsertId() const { return sqlite3_last_insert_rowid(db_); }
int64_t Database::changes() const { return sqlite3_changes(db_); }
std::string Database::lastError() const { return sqlite3_errmsg(db_); }

Statement::Statement(Database &db, std::string sql) : db_(db), sql_(std::move(sql)) {
  if (sqlite3_prepare_v2(db_.raw(), sql_.c_str(), -1, &stmt_, nullptr) != SQLITE_OK)
    prepareError_ = sqlite3_errmsg(db_.raw());
}

Statement::~Statement() { sqlite3_finalize(stmt_); }

Statement &Statement::bind(int index, const std::string &value) {
  if (stmt_ && !bindError_)
    bindError_ = sqlite3_bind_text(stmt_, index, value.c_str(), static_cast<int>(value.size()), SQLITE_TRANSIENT);
  return *this;
}
Statement &Statement::bind(int index, int64_t value) {
  if (stmt_ && !bindError_)
    bindError_ = sqlite3_bind_int64(stmt_, index, value);
  return *this;
}
Statement &Statement::bind(int index, double value) {
  if (stmt_ && !bindError_)
    bindError_ = sqlite3_bind_double(stmt_, index, value);
  return *this;
}

Error Statement::error(const std::string &what) const {
  return Error{fmt::format("{} (in: {})", what, quote(sql_))};
}

Expected<bool> Statement::step() {
  if (!stmt_)
    return error(prepareError_.empty() ? "cannot prepare the statement" : prepareError_);
  if (bindError_)
    return error(fmt::format("cannot bind a value: {}", sqlite3_errstr(bindError_)));
  int rc = sqlite3_step(stmt_);
  if (rc == SQLITE_ROW)
    return true;
  if (rc == SQLITE_DONE)
    return false;
  return error(sqlite3_errmsg(db_.raw()));
}

Expected<bool> Statement::run() {
  auto r = step();
  if (!r)
    return r;
  return true;
}

std::string Statement::text(int column) const {
  auto p = sqlite3_column_text(stmt_, column);
  return p ? std::string(reinterpret_cast<const char *>(p), static_cast<size_t>(sqlite3_column_bytes(stmt_, column)))
           : std::string();
}
int64_t Statement::integer(int column) const { return sqlite3_column_int64(stmt_, column); }
double Statement::real(int column) const { return sqlite3_column_double(stmt_, column); }
bool Statement::isNull(int column) const { return sqlite3_column_type(stmt_, column) == SQLITE_NULL; }

Transaction::Transaction(Database &db) : db_(db), begun_(db.exec("BEGIN IMMEDIATE;")) {}

Transaction::~Transaction() {
  if (begun_ && !done_)
    (void)db_.exec("ROLLBACK;");
}

Expected<bool> Transaction::commit() {
  if (!begun_)
    return begun_;
  auto r = db_.exec("COMMIT;");
  if (r)
    done_ = true;
  return r;
}

} // namespace hone::support
