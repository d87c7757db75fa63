// The SQLite layer: errors quote the statement, transactions roll back unless
// committed (also when an exception leaves the scope), read-only opens refuse writes.
#include "support/Sqlite.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <stdexcept>
#include <unistd.h>

using namespace hone::support;

namespace {
struct TempPath {
  std::string path =
      (std::filesystem::temp_directory_path() / ("hone-sqlite-" + std::to_string(::getpid()) + ".db")).string();
  ~TempPath() {
    for (const char *suffix : {"", "-wal", "-shm"})
      std::filesystem::remove(path + suffix);
  }
};
int64_t count(Database &db) {
  Statement s(db, "SELECT count(*) FROM t;");
  auto row = s.step();
  return row && *row ? s.integer(0) : -1;
}
} // namespace

TEST(Sqlite, ErrorsQuoteTheStatement) {
  TempPath p;
  auto db = Database::open(p.path);
  ASSERT_TRUE(db) << db.error().message;
  Statement bad(**db, "SELEC 1;");
  auto r = bad.step();
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("(in: SELEC 1;)"), std::string::npos) << r.error().message;
  auto e = (*db)->exec("INSERT INTO nowhere VALUES (1);");
  ASSERT_FALSE(e);
  EXPECT_NE(e.error().message.find("no such table: nowhere"), std::string::npos) << e.error().message;
  EXPECT_NE(e.error().message.find("INSERT INTO nowhere"), std::string::npos);
  ASSERT_TRUE((*db)->exec("CREATE TABLE t (x INTEGER NOT NULL UNIQUE);"));
  Statement ins(**db, "INSERT INTO t VALUES (?);");
  ins.bind(1, int64_t{1});
  ASSERT_TRUE(ins.run());
  Statement dup(**db, "INSERT INTO t VALUES (?);");
  dup.bind(1, int64_t{1});
  auto d = dup.run();
  ASSERT_FALSE(d);
  EXPECT_NE(d.error().message.find("UNIQUE"), std::string::npos) << d.error().message;
  EXPECT_TRUE(*(*db)->hasTable("t"));
  EXPECT_FALSE(*(*db)->hasTable("u"));
  EXPECT_EQ(*(*db)->userVersion(), 0);
}

TEST(Sqlite, TransactionsRollBackUnlessCommitted) {
  TempPath p;
  auto db = Database::open(p.path);
  ASSERT_TRUE(db);
  ASSERT_TRUE((*db)->exec("CREATE TABLE t (x INTEGER);"));
  {
    Transaction t(**db);
    ASSERT_TRUE(t.begun());
    ASSERT_TRUE((*db)->exec("INSERT INTO t VALUES (1);"));
  } // not committed
  EXPECT_EQ(count(**db), 0);
  try {
    Transaction t(**db);
    ASSERT_TRUE((*db)->exec("INSERT INTO t VALUES (2);"));
    Statement open(**db, "SELECT x FROM t;");
    ASSERT_TRUE(open.step());
    throw std::runtime_error("leaves the scope"); // the statement is finalized, then the transaction rolls back
  } catch (const std::runtime_error &) {
  }
  EXPECT_EQ(count(**db), 0);
  {
    Transaction t(**db);
    ASSERT_TRUE((*db)->exec("INSERT INTO t VALUES (3);"));
    ASSERT_TRUE(t.commit());
  }
  EXPECT_EQ(count(**db), 1);
  auto ro = Database::open(p.path, Database::Mode::ReadOnly);
  ASSERT_TRUE(ro);
  EXPECT_FALSE((*ro)->exec("INSERT INTO t VALUES (4);"));
  EXPECT_FALSE(Database::open("/nonexistent-dir/x.db"));
}
