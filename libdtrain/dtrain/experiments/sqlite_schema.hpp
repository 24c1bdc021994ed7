#pragma once

#include <string>

#include "dtrain/core/status.hpp"
#include "dtrain/experiments/sqlite.hpp"

/// The experiment store's SQLite schema and its history (private to
/// store/): every version's DDL stays here, as the steps that lead from
/// one version to the next, so that a file any dtrain wrote can be brought
/// up to date.
namespace dtrain::experiments::schema {

/// The version this dtrain writes (PRAGMA user_version).
inline constexpr int current_version = 3;
/// The oldest version a read-only store reads: version 2 lacks only the
/// events table (version 3), which reads as empty there.
inline constexpr int oldest_readable_version = 2;
/// The first version with the events table.
inline constexpr int events_version = 3;

/// Reads the file at `path` without writing to it: its schema version (0
/// for an empty database), or an error naming the path when it is not an
/// SQLite database, fails PRAGMA quick_check (corrupt_data), is an SQLite
/// database of something else (invalid_argument) or has a schema newer
/// than current_version (invalid_argument naming both versions).
/// Precondition: the file exists.
result<int> inspect(const std::string& path, int busy_timeout_ms);

/// Brings the database from its version to current_version in one
/// transaction (BEGIN IMMEDIATE, so that two processes opening an old file
/// at once migrate it once: the second finds it done).
status migrate(sqlite::connection& c);

} // namespace dtrain::experiments::schema
