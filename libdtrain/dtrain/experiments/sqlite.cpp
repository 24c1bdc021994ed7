#include "dtrain/experiments/sqlite.hpp"

#include <cmath>
#include <limits>
#include <utility>

#include "dtrain/core/check.hpp"

namespace dtrain::experiments::sqlite {

status error(int rc, const std::string& path, const std::string& what, sqlite3* db) {
  std::string message = path + ": " + what + ": ";
  message += db != nullptr ? sqlite3_errmsg(db) : sqlite3_errstr(rc);
  switch (rc & 0xff) {  // the primary code of an extended one
  case SQLITE_NOTADB:
  case SQLITE_CORRUPT:
    return corrupt_data(message);
  case SQLITE_CANTOPEN:
  case SQLITE_IOERR:
  case SQLITE_PERM:
  case SQLITE_READONLY:
  case SQLITE_FULL:
    return io_error(message);
  case SQLITE_BUSY:
  case SQLITE_LOCKED:
    return status(error_code::timeout, message);
  case SQLITE_CONSTRAINT:
  case SQLITE_MISMATCH:
    return invalid_argument(message);
  default:
    return status(error_code::internal, message);
  }
}

// ---------------------------------------------------------------------------
// statement

statement::statement(statement&& other) noexcept
  : s_(std::exchange(other.s_, nullptr)), db_(other.db_), path_(other.path_) {}

statement& statement::operator=(statement&& other) noexcept {
  if (this != &other) {
    sqlite3_finalize(s_);
    s_ = std::exchange(other.s_, nullptr);
    db_ = other.db_;
    path_ = other.path_;
  }
  return *this;
}

statement::~statement() { sqlite3_finalize(s_); }

// Bind errors (a wrong index, no memory) are programming errors SQLite
// reports again at the next step, so they are not checked here.
statement& statement::bind(int i, int64_t v) {
  sqlite3_bind_int64(s_, i, v);
  return *this;
}

statement& statement::bind(int i, double v) {
  if (std::isnan(v))
    sqlite3_bind_null(s_, i);
  else
    sqlite3_bind_double(s_, i, v);
  return *this;
}

statement& statement::bind(int i, const std::string& v) {
  sqlite3_bind_text(s_, i, v.data(), static_cast<int>(v.size()), SQLITE_TRANSIENT);
  return *this;
}

result<bool> statement::step() {
  const int rc = sqlite3_step(s_);
  if (rc == SQLITE_ROW)
    return true;
  if (rc == SQLITE_DONE)
    return false;
  const status s = error(rc, *path_, sqlite3_sql(s_), db_);
  sqlite3_reset(s_);
  return s;
}

status statement::run() {
  auto r = step();
  reset();
  return r.to_status();
}

void statement::reset() {
  sqlite3_reset(s_);
  sqlite3_clear_bindings(s_);
}

double statement::real(int column) const {
  if (sqlite3_column_type(s_, column) == SQLITE_NULL)
    return std::numeric_limits<double>::quiet_NaN();
  return sqlite3_column_double(s_, column);
}

std::string statement::text(int column) const {
  const auto* p = reinterpret_cast<const char*>(sqlite3_column_text(s_, column));
  return p == nullptr ? std::string() : std::string(p, sqlite3_column_bytes(s_, column));
}

// ---------------------------------------------------------------------------
// connection

connection::connection(sqlite3* db, std::string path)
  : db_(db), path_(std::make_unique<std::string>(std::move(path))) {}

connection::connection(connection&& other) noexcept
  : db_(std::exchange(other.db_, nullptr)), path_(std::move(other.path_)) {}

connection& connection::operator=(connection&& other) noexcept {
  if (this != &other) {
    sqlite3_close_v2(db_);
    db_ = std::exchange(other.db_, nullptr);
    path_ = std::move(other.path_);
  }
  return *this;
}

connection::~connection() { sqlite3_close_v2(db_); }

result<connection> connection::open(const std::string& path, int flags, int busy_timeout_ms) {
  sqlite3* db = nullptr;
  const int rc = sqlite3_open_v2(path.c_str(), &db, flags, nullptr);
  connection c(db, path);  // closes db on every path out, even a failed open
  if (rc != SQLITE_OK)
    return error(rc, path, "cannot open", db);
  sqlite3_extended_result_codes(db, 1);
  sqlite3_busy_timeout(db, busy_timeout_ms);
  return c;
}

status connection::exec(const std::string& sql) {
  const int rc = sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, nullptr);
  return rc == SQLITE_OK ? status::ok() : error(rc, *path_, sql, db_);
}

result<statement> connection::prepare(const std::string& sql) {
  sqlite3_stmt* s = nullptr;
  const int rc = sqlite3_prepare_v3(db_, sql.c_str(), static_cast<int>(sql.size()),
                                    SQLITE_PREPARE_PERSISTENT, &s, nullptr);
  if (rc != SQLITE_OK)
    return error(rc, *path_, sql, db_);
  return statement(s, db_, path_.get());
}

result<int64_t> connection::integer(const std::string& sql) {
  DTRAIN_ASSIGN_OR_RETURN(statement s, prepare(sql));
  DTRAIN_ASSIGN_OR_RETURN(bool row, s.step());
  return row ? s.integer(0) : 0;
}

// ---------------------------------------------------------------------------
// transaction

result<transaction> transaction::begin(connection& c) {
  DTRAIN_RETURN_IF_ERROR(c.exec("BEGIN IMMEDIATE"));
  return transaction(c);
}

transaction::~transaction() {
  if (c_ != nullptr)
    (void)c_->exec("ROLLBACK");
}

status transaction::commit() {
  const status s = c_->exec("COMMIT");
  if (s.is_ok())
    c_ = nullptr;
  return s;
}

} // namespace dtrain::experiments::sqlite
