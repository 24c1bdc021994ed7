#pragma once

#include <sqlite3.h>

#include <cstdint>
#include <memory>
#include <string>

#include "dtrain/core/status.hpp"

/// A thin RAII layer over SQLite's C API for the experiment store (private
/// to store/): a connection and its prepared statements, SQLite's result
/// codes turned into statuses that name the database's path. Not
/// thread-safe: one thread at a time per connection and its statements.
namespace dtrain::experiments::sqlite {

/// SQLite's result code `rc` as a status: "PATH: what: SQLite's message".
/// corrupt_data for a file that is not a database or is damaged, io_error
/// for refused or failed I/O (also a read-only file), timeout for a lock
/// held past busy_timeout, invalid_argument for a violated constraint.
status error(int rc, const std::string& path, const std::string& what, sqlite3* db = nullptr);

/// A prepared statement; parameters are numbered from 1, columns from 0.
/// Doubles: NaN is stored as NULL (SQLite cannot hold NaN) and NULL reads
/// back as NaN, so the columns holding doubles allow NULL for that alone.
class statement {
public:
  statement() = default;
  statement(sqlite3_stmt* s, sqlite3* db, const std::string* path) : s_(s), db_(db), path_(path) {}
  statement(statement&& other) noexcept;
  statement& operator=(statement&& other) noexcept;
  statement(const statement&) = delete;
  statement& operator=(const statement&) = delete;
  ~statement();

  statement& bind(int i, int64_t v);
  statement& bind(int i, int v) { return bind(i, static_cast<int64_t>(v)); }
  statement& bind(int i, bool v) { return bind(i, static_cast<int64_t>(v)); }
  statement& bind(int i, double v);
  statement& bind(int i, const std::string& v);

  /// One step: true with a row to read, false when done; an error names
  /// the statement's SQL.
  result<bool> step();
  /// Runs it to the end (for statements without rows) and resets it.
  status run();
  /// Ready to bind and run again (bindings cleared).
  void reset();

  int64_t integer(int column) const { return sqlite3_column_int64(s_, column); }
  bool boolean(int column) const { return integer(column) != 0; }
  double real(int column) const;
  std::string text(int column) const;

private:
  sqlite3_stmt* s_ = nullptr;
  sqlite3* db_ = nullptr;
  const std::string* path_ = nullptr;
};

/// An open connection. Closing waits for nothing: every statement must be
/// destroyed first (sqlite3_close_v2 defers the close until they are).
class connection {
public:
  /// sqlite3_open_v2 with `flags` (SQLITE_OPEN_*), extended result codes on;
  /// sets busy_timeout. Opening reads nothing: a file that is not a
  /// database fails at the first statement.
  static result<connection> open(const std::string& path, int flags, int busy_timeout_ms);

  connection(connection&& other) noexcept;
  connection& operator=(connection&& other) noexcept;
  connection(const connection&) = delete;
  connection& operator=(const connection&) = delete;
  ~connection();

  /// Runs one or more ';'-separated statements that return no rows we need.
  status exec(const std::string& sql);
  result<statement> prepare(const std::string& sql);
  /// The first column of the first row of `sql` as an integer.
  result<int64_t> integer(const std::string& sql);
  int64_t last_insert_id() const { return sqlite3_last_insert_rowid(db_); }
  int64_t changes() const { return sqlite3_changes64(db_); }
  const std::string& path() const { return *path_; }

private:
  connection(sqlite3* db, std::string path);

  sqlite3* db_ = nullptr;
  // On the heap so that statements keep a stable pointer to it across moves.
  std::unique_ptr<std::string> path_;
};

/// BEGIN IMMEDIATE (the write lock at once, waiting up to busy_timeout)
/// ... commit(); destroying it uncommitted rolls back.
class transaction {
public:
  static result<transaction> begin(connection& c);
  transaction(transaction&& other) noexcept : c_(other.c_) { other.c_ = nullptr; }
  transaction& operator=(transaction&&) = delete;
  ~transaction();
  status commit();

private:
  explicit transaction(connection& c) : c_(&c) {}
  connection* c_;
};

} // namespace dtrain::experiments::sqlite
