#pragma once

#include <atomic>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "dtrain/core/status.hpp"

/// The registry of the processes started on this host: one pid file per
/// head or node in cluster_dir() ($DTRAIN_HOME, default ~/.dtrain), beside
/// their logs, which `dtrain stop` stops and through which commands find
/// the local head. A pid file is three lines: "PID START_TIME" (START_TIME
/// is /proc/PID/stat field 22: with the pid it names one process for the
/// life of the host), the HOST:PORT a head is reached at (empty for a
/// node), and the program the process runs (/proc/PID/exe). A record is
/// live while that pid still runs that program, started at that time; a
/// file missing the program line (an older dtrain's) is compared with the
/// reader's own program. Every process that records itself here (`dtrain
/// start`, or a user's program calling run_head/run_node) is stopped by
/// `dtrain stop`. Files are written whole or not at all; the functions
/// here are safe to call from any thread but the signal ones share one
/// process-wide flag.
namespace dtrain::roles {

std::string cluster_dir();

/// Records this process under `role` ("head-4711", "node-4711") in
/// cluster_dir(), with a head's HOST:PORT as `address`. The file is removed
/// by remove_pid_file(). Errors: the directory or file cannot be written.
status write_pid_file(const std::string& role, const std::string& address = "");
void remove_pid_file(const std::string& role);

/// The HOST:PORT of the head started on this host: the address in the one
/// head-*.pid file of `dir` (default cluster_dir()); "" when there is none.
/// Errors, each naming the file at fault: a record that cannot be read or
/// holds no address (corrupt_data), one whose process no longer is the head
/// that wrote it (unavailable, saying why and that `dtrain stop` clears
/// stale records), and two live heads (invalid_argument naming both and asking
/// for --address). This is the last source resolve_cluster_address
/// (dtrain/driver/cluster_address.hpp) consults.
result<std::string> local_head_address(const std::string& dir);
result<std::string> local_head_address();

/// Sends SIGTERM to every recorded process, waits up to `grace_ms` for each
/// to exit, then SIGKILLs the rest; returns how many were stopped. Only a
/// process that is still the one that wrote its file is signalled: the same
/// start time, running the same program as this one. A file naming anything
/// else (a stale file whose pid was reused) is removed with a message on
/// stderr, and nothing is signalled.
int stop_recorded_processes(int grace_ms);

/// Detaches into the background: the parent returns false after the child
/// has written `ready_file` (or 10 s), the child returns true with stdout
/// and stderr going to `log_file`. The directories of both files are made
/// and the log opened before the fork: io_error naming the path that
/// cannot be (a parent that is a regular file, no permission).
result<bool> daemonize(const std::string& log_file, const std::string& ready_file);

/// True once SIGINT or SIGTERM arrived (install_signal_handlers first).
void install_signal_handlers();
bool stop_requested();
/// Back to the default actions (a second Ctrl-C then ends the process).
void restore_default_signals();

/// While it lives: installs the handlers and, when SIGINT or SIGTERM
/// arrives, runs `on_signal` once on a thread of its own, then restores
/// the default actions (so a second signal ends the process). The
/// destructor stops watching and joins that thread (it waits for a running
/// `on_signal` to return).
class signal_watch {
public:
  explicit signal_watch(std::function<void()> on_signal);
  ~signal_watch();
  signal_watch(const signal_watch&) = delete;
  signal_watch& operator=(const signal_watch&) = delete;

private:
  std::atomic<bool> finished_{false};
  std::thread thread_;
};

} // namespace dtrain::roles
