#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "dtrain/core/status.hpp"

namespace dtrain::rendezvous {

using bytes = std::vector<char>;
using milliseconds = std::chrono::milliseconds;

/// A small key-value store for rendezvous: ranks publish and find each
/// other's addresses, ids and counters through it (as c10d's Store and
/// Gloo's rendezvous store).
///
/// Semantics: set() overwrites; get() waits until the key exists; add()
/// atomically adds to a 64-bit counter (a missing key counts as 0) and
/// returns the new value; wait() waits until all keys exist. Every call
/// takes a timeout (set and add: for a store that must take a lock or reach
/// a server; the two-argument forms use default_timeout) and returns
/// error_code::timeout naming the key(s) when it expires. Implementations are thread-safe; values
/// are opaque bytes (counters are decimal text, so get() of a counter reads
/// "3").
class store {
public:
  virtual ~store() = default;

  static constexpr milliseconds default_timeout{30000};

  virtual status set(const std::string& key, const bytes& value, milliseconds timeout) = 0;
  virtual result<bytes> get(const std::string& key, milliseconds timeout) = 0;
  virtual result<int64_t> add(const std::string& key, int64_t delta, milliseconds timeout) = 0;
  status set(const std::string& key, const bytes& value) {
    return set(key, value, default_timeout);
  }
  result<int64_t> add(const std::string& key, int64_t delta) {
    return add(key, delta, default_timeout);
  }
  virtual status wait(const std::vector<std::string>& keys, milliseconds timeout) = 0;
  /// True when the key exists now; never waits.
  virtual result<bool> check(const std::string& key) = 0;
};

/// A store in this process's memory: for ranks that are threads of one
/// process (tests, single-host examples).
class memory_store final : public store {
public:
  memory_store();
  ~memory_store() override;

  using store::add;
  using store::set;
  status set(const std::string& key, const bytes& value, milliseconds timeout) override;
  result<bytes> get(const std::string& key, milliseconds timeout) override;
  result<int64_t> add(const std::string& key, int64_t delta, milliseconds timeout) override;
  status wait(const std::vector<std::string>& keys, milliseconds timeout) override;
  result<bool> check(const std::string& key) override;

private:
  struct state;
  std::unique_ptr<state> state_;
};

/// A store in a directory, one file per key, written atomically (temporary
/// file, then rename), so that separate processes on one host, or on hosts
/// sharing a file system, can rendezvous. add() serializes through an
/// exclusive lock (flock) on a lock file. Waiting polls with backoff (first
/// poll after 1 ms, then up to every 20 ms). Keys may hold any characters;
/// they are encoded into file names. The directory is created if missing.
/// Thread-safe, and any number of file_store objects in any processes may
/// share one directory. add() excludes other add() calls, not set(): a set()
/// racing an add() on the same key may be lost. Nothing deletes the files:
/// give each job or restart generation its own directory or prefix.
/// IO failures return io_error naming the path and the OS's reason.
class file_store final : public store {
public:
  /// Fails with io_error naming the directory if it cannot be created.
  static result<std::unique_ptr<file_store>> open(const std::string& directory);

  using store::add;
  using store::set;
  status set(const std::string& key, const bytes& value, milliseconds timeout) override;
  result<bytes> get(const std::string& key, milliseconds timeout) override;
  result<int64_t> add(const std::string& key, int64_t delta, milliseconds timeout) override;
  status wait(const std::vector<std::string>& keys, milliseconds timeout) override;
  result<bool> check(const std::string& key) override;

  const std::string& directory() const { return dir_; }

private:
  explicit file_store(std::string dir) : dir_(std::move(dir)) {}
  /// The file that holds `key`: the directory plus the encoded key.
  std::string path_of(const std::string& key) const;
  /// Writes `value` to a temporary file in the directory, then renames it
  /// over `path`, so that readers see the old value or the new one, whole.
  status write_atomically(const std::string& path, const bytes& value) const;
  std::string dir_;
};

/// Puts "PREFIX/" before every key of an underlying store, so that groups
/// and restart generations sharing one store never see each other's keys.
/// Shares ownership of the underlying store.
class prefix_store final : public store {
public:
  prefix_store(std::string prefix, std::shared_ptr<store> base)
    : prefix_(std::move(prefix) + "/"), base_(std::move(base)) {}

  using store::add;
  using store::set;
  status set(const std::string& key, const bytes& value, milliseconds timeout) override;
  result<bytes> get(const std::string& key, milliseconds timeout) override;
  result<int64_t> add(const std::string& key, int64_t delta, milliseconds timeout) override;
  status wait(const std::vector<std::string>& keys, milliseconds timeout) override;
  result<bool> check(const std::string& key) override;

  const std::string& prefix() const { return prefix_; }

private:
  std::string prefix_;
  std::shared_ptr<store> base_;
};

/// "hello" as bytes and back, for tests and small values.
bytes to_bytes(const std::string& text);
std::string to_string(const bytes& value);

/// Helpers shared by the store implementations; not part of the API.
namespace detail {

/// The counter `current` (null when the key is missing, counting as 0) plus
/// `delta`. invalid_argument naming the key if `current` is not decimal
/// text; out_of_range naming the key if the sum overflows 64 bits.
result<int64_t> add_to_counter(const std::string& key, const bytes* current, int64_t delta);

/// error_code::timeout: "timed out after N ms waiting for key(s) 'a', 'b'".
status missing_keys_error(const std::vector<std::string>& missing, milliseconds timeout);

} // namespace detail

} // namespace dtrain::rendezvous
