#pragma once

#include <cstdint>
#include <string>

#include "dtrain/core/status.hpp"

/// Who an experiment's checkpoint directory belongs to.
///
/// Experiment ids are local to a store (1, 2, ... in each $DTRAIN_HOME), so
/// two stores that share a checkpoint root would otherwise meet in one
/// directory: one run moving, pruning, deleting or restoring another's
/// checkpoints. Each experiment therefore gets a token unique across stores
/// when it is created (new_owner_token(), also in its directory's name),
/// and its directory carries an owner marker, the file `.dtrain-owner`,
/// naming that token, the experiment's id and creation time (which two
/// stores' experiments of one id do not share: a row of another store
/// pointed at the directory does not match), its store and its name. Every
/// move, delete or restore of the directory checks the marker first
/// (check_owner()); a directory marked by someone else is left alone and
/// the error names whose it is.
///
/// The marker is plain text, one `key value` line each:
///     dtrain-owner 1
///     token 6f1c...   (32 hex digits; "legacy-" + 16 for adopted old directories)
///     experiment 12
///     created 1700000000.123456
///     store /home/u/.dtrain/experiments.db
///     name fashion-mnist
/// Functions block on small file I/O; they are thread-safe as far as the
/// file system is (two claims of one missing directory race: both write,
/// the last marker stays).
namespace dtrain::checkpoint {

struct owner {
  std::string token;       // unique across stores
  int64_t experiment = 0;  // the experiment's id in its store
  std::string created;     // its creation time, created_text()
  std::string store;       // where that store is, for messages
  std::string name;        // the experiment's name, for messages
};

/// Whether `a` and `b` are the same experiment: token, id and creation
/// time all equal (store and name are for people).
bool same_owner(const owner& a, const owner& b);

/// A creation time (unix seconds) as owner::created holds it: "%.6f".
std::string created_text(double unix_seconds);

/// The marker's file name, at the top of the experiment's directory.
inline constexpr const char* owner_file = ".dtrain-owner";

/// 32 hex digits (128 bits) from the kernel's random source (getrandom):
/// io_error when the kernel gives none.
result<std::string> new_owner_token();

/// "experiment 12 (fashion-mnist) of the store /home/u/.dtrain/experiments.db"
std::string describe(const owner& o);

/// The marker of `dir`: not_found when `dir` or its marker is missing,
/// corrupt_data naming the file when it is not a marker (no token, a bad
/// line), io_error when it cannot be read.
result<owner> read_owner(const std::string& dir);

/// Writes `o` as the marker of `dir` (created when missing), atomically
/// and durably. Errors name the file.
status write_owner(const std::string& dir, const owner& o);

/// ok when `dir`'s marker is `me`'s (same_owner()). Otherwise nothing may
/// `action` it ("delete", "run a sweep in", ...): invalid_argument naming
/// `dir` and the marker's owner when it is someone else's; not_found when
/// `dir` carries no marker (or does not exist); the marker's read error.
status check_owner(const std::string& dir, const owner& me, const std::string& action);

/// Makes `dir` the directory of `me`: ok when its marker is me's already; when `dir` is missing or carries no marker, writes
/// one (creating `dir`) and sets *adopted when `dir` already held files;
/// invalid_argument naming `dir` and the other owner when it is someone
/// else's (nothing is written then). A marker that cannot be read is its
/// error: never overwritten.
status claim(const std::string& dir, const owner& me, bool* adopted = nullptr);

/// Removes `path` (and everything under it) when it is `dir` or lies
/// inside it, and `dir` carries `me`'s marker: else the reason it was
/// left alone (check_owner()'s, or invalid_argument for a path outside
/// `dir`). A missing `path` is ok. io_error names what could not go.
status remove_owned(const std::string& dir, const owner& me, const std::string& path);

} // namespace dtrain::checkpoint
