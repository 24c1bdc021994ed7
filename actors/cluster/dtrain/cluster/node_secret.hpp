#pragma once

#include <string>

#include "dtrain/core/status.hpp"

/// The plain (loopback) cluster's rule for shipping code to a node: only
/// processes of the node's own user may. The node writes a random secret
/// to a file that only its user can read (mode 0600, in a directory of
/// mode 0700 owned by that user) and advertises the file's path
/// (node_info::secret_file); a driver on the same host and of the same
/// user reads it and presents a MAC keyed by it with the plugin
/// (plugin_mac); any other driver cannot. The secret itself never leaves
/// the host's files: whoever registered as the node (another user naming
/// this node's file) gets only a MAC bound to its own challenge and name.
namespace dtrain::actors {

/// The text every refusal under this rule starts with.
constexpr const char* same_user_refusal =
    "plugin refused: the driver could not prove it runs as the node's user";

/// A node's secret and its file. Owns the file: the destructor removes it.
/// Move-only; not thread-safe (the node creates it once, before it serves).
class node_secret {
public:
  /// Creates `dir` (mode 0700) if needed and writes a new random secret to
  /// <dir>/<name>.secret (mode 0600). Refuses a directory that belongs to
  /// another user or that others may write to or read (io_error naming it
  /// and its owner or mode).
  static result<node_secret> create(const std::string& dir, const std::string& name);

  node_secret() = default;
  node_secret(node_secret&& other) noexcept;
  node_secret& operator=(node_secret&& other) noexcept;
  node_secret(const node_secret&) = delete;
  node_secret& operator=(const node_secret&) = delete;
  ~node_secret();

  const std::string& path() const { return path_; }
  const std::string& value() const { return value_; }

private:
  std::string path_, value_;
};

/// $DTRAIN_HOME/secrets: where nodes keep their secret files.
std::string default_secret_dir();

/// A driver's read of a node's secret file; the error starts with
/// same_user_refusal and says why (permission denied: another user).
result<std::string> read_node_secret(const std::string& path);

/// What a same-user credential's MAC covers, unambiguously (each part
/// length-prefixed): the node's single-use challenge, the request (a
/// plugin's SHA-256, or spawn_subject for a replica) and the node process
/// it is meant for: its proof name
/// (node_proof_name), its secret file and its CAF node id as the driver
/// reaches it. A MAC made for one node process (a fake one that named
/// another's secret file), library or challenge holds for no other.
std::string plugin_mac_message(const std::string& challenge, const std::string& subject,
                               const std::string& node_name, const std::string& secret_file,
                               const std::string& node_id);

/// HMAC-SHA256 keyed by a node's `secret` over `message`
/// (plugin_mac_message), lowercase hex.
std::string plugin_mac(const std::string& secret, const std::string& message);

} // namespace dtrain::actors
