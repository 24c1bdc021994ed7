#pragma once

#include <memory>
#include <string>
#include <vector>

#include "dtrain/core/status.hpp"
#include "dtrain/train/operator.hpp"

/// Loading plugins (plugin.hpp): content-addressed, once per process and
/// hash, with the ABI checked before any of the library's code runs.
namespace dtrain::plugin {

/// This process's ABI tag (DTRAIN_ABI_TAG as compiled into libdtrain).
std::string abi_tag();

/// The ABI tag embedded in a library file, read from its bytes without
/// loading it. not_found when the file has no DTRAIN_PLUGIN marker (not a
/// dtrain plugin); io_error naming the file when it cannot be read.
result<std::string> read_abi_tag(const std::string& path);

struct loaded_plugin {
  std::string hash;                    // SHA-256 of the file, hex
  std::string path;                    // the file that was loaded
  std::vector<std::string> operators;  // the names its init registered
};

/// The content hash plugins are known by: SHA-256, lowercase hex.
std::string content_hash(const void* data, size_t size);

/// Loads the library at `path`: hashes it, returns the earlier result when
/// a library of the same hash is loaded already, checks its ABI tag against
/// abi_tag() (invalid_argument naming both versions), dlopen()s it
/// (RTLD_NOW | RTLD_LOCAL: a missing symbol is an error carrying dlerror()'s
/// message, never a crash later) and calls its dtrain_plugin_init_v1 with a
/// registrar that records its operators under its hash. Thread-safe.
result<loaded_plugin> load_plugin(const std::string& path);

/// $DTRAIN_HOME/plugins: where a node keeps the libraries it was sent.
std::string default_plugin_dir();

/// A library received over the wire: checks that `bytes` hash to `hash`
/// (corrupt_data otherwise) and carry this process's ABI tag (as
/// load_plugin; nothing is written otherwise), writes them atomically to <dir>/<hash>.so
/// (mode 0700 directory; an existing file of that name is reused after its
/// hash is checked) and loads it with load_plugin.
result<loaded_plugin> install_plugin(const std::string& dir, const std::string& hash,
                                     const std::vector<char>& bytes);

/// The plugin loaded under `hash`, if any.
result<loaded_plugin> find_plugin(const std::string& hash);

/// A new operator named `name`: from the plugins `hashes` (in order, each
/// must be loaded; not_found naming the hash otherwise), else from the
/// process-wide registry (train::make_operator). The not_found error lists
/// the names each plugin offers.
result<std::unique_ptr<train::training_operator>> make_operator(
    const std::string& name, const std::vector<std::string>& hashes);

} // namespace dtrain::plugin
