#pragma once

#include <atomic>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "dtrain/core/status.hpp"

/// The cluster directory of `dtrain start/stop`: pid files and logs of the
/// processes started on this host ($DTRAIN_HOME, default ~/.dtrain).
namespace dtrain::cli {

std::string cluster_dir();

/// Records this process under `role` ("head-4711", "node-4711-2") so that
/// `dtrain stop` finds it: its pid and its start time (/proc/PID/stat field
/// 22), and for a head the HOST:PORT it is reached at, so that commands
/// find it without --address (local_head_address). The file is removed by
/// remove_pid_file().
status write_pid_file(const std::string& role, const std::string& address = "");
void remove_pid_file(const std::string& role);

/// The cluster a command without --address means, as `ray status` finds
/// one: $DTRAIN_ADDRESS when set, else the address of the head started on
/// this host (a head-*.pid file in cluster_dir() whose process still is
/// that dtrain head), else "" (none runs). Two live heads are ambiguous: an
/// invalid_argument naming both and asking for --address.
result<std::string> local_head_address();

/// `given` when not empty, else local_head_address(); none running is
/// not_found saying where it looked and what to give instead (`dtrain
/// status`, `dtrain logs`).
result<std::string> cluster_address(const std::string& given);

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

} // namespace dtrain::cli
