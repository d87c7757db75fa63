// The one SQLite layer every hone module uses (the store, the LLM response
// cache): a connection, prepared statements whose errors quote the SQL that
// failed, and a transaction guard that rolls back unless committed. Every
// failure is an Error value; nothing is ignored.
#pragma once

#include "support/Expected.h"

#include <cstdint>
#include <memory>
#include <string>

struct sqlite3;
struct sqlite3_stmt;

namespace hone::support {

class Database {
public:
  enum class Mode { ReadWriteCreate, ReadOnly };
  /// Opens `path` (WAL, foreign keys on, a 5 s busy timeout when writable).
  static Expected<std::unique_ptr<Database>> open(const std::string &path, Mode mode = Mode::ReadWriteCreate);
  ~Database();
  Database(const Database &) = delete;
  Database &operator=(const Database &) = delete;

  /// Runs one or more statements; the error quotes the SQL.
  Expected<bool> exec(const std::string &sql);
  /// PRAGMA user_version.
  Expected<int64_t> userVersion();
  Expected<bool> hasTable(const std::string &name);
  int64_t lastInsertId() const;
  /// Rows changed by the last statement.
  int64_t changes() const;
  std::string lastError() const;
  const std::string &path() const { return path_; }
  sqlite3 *raw() const { return db_; }

private:
  Database(sqlite3 *db, std::string path) : db_(db), path_(std::move(path)) {}
  sqlite3 *db_;
  std::string path_;
};

/// A prepared statement. Binding is chained; step() says whether a row came, or why not.
class Statement {
public:
  Statement(Database &db, std::string sql);
  ~Statement();
  Statement(const Statement &) = delete;
  Statement &operator=(const Statement &) = delete;

  Statement &bind(int index, const std::string &value);
  Statement &bind(int index, int64_t value);
  Statement &bind(int index, double value);
  /// true: a row is ready; false: done. Errors (a failed prepare, bind or step) quote the SQL.
  Expected<bool> step();
  /// Runs a statement that returns no rows.
  Expected<bool> run();
  std::string text(int column) const;
  int64_t integer(int column) const;
  double real(int column) const;
  bool isNull(int column) const;

private:
  Error error(const std::string &what) const;
  Database &db_;
  std::string sql_;
  sqlite3_stmt *stmt_ = nullptr;
  std::string prepareError_;
  int bindError_ = 0;
};

/// BEGIN IMMEDIATE on construction; ROLLBACK on destruction unless commit() succeeded.
class Transaction {
public:
  explicit Transaction(Database &db);
  ~Transaction();
  Transaction(const Transaction &) = delete;
  Transaction &operator=(const Transaction &) = delete;
  /// Whether BEGIN succeeded (the error otherwise).
  const Expected<bool> &begun() const { return begun_; }
  Expected<bool> commit();

private:
  Database &db_;
  Expected<bool> begun_;
  bool done_ = false;
};

} // namespace hone::support
