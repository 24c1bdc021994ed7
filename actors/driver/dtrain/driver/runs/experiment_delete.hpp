#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "dtrain/core/status.hpp"
#include "dtrain/experiments/store.hpp"

namespace dtrain::runs {

/// What `dtrain experiments delete ID [--yes] [--force]` asks for.
struct delete_request {
  int64_t id = 0;
  /// Delete a running experiment too (its live driver asked to stop first).
  bool force = false;
  /// The store is read through a head (its drivers may run anywhere).
  bool remote = false;
  /// Asked, once the checks passed, with a description of what would go;
  /// false: nothing is deleted; an error: nothing is deleted, and it is
  /// the call's error. Empty: yes.
  std::function<result<bool>(const std::string& what)> confirm;
  /// Where notes go ("dtrain: --force: ..."), a line each; empty: stderr.
  std::function<void(const std::string&)> note;
};

/// Deletes experiment `r.id`: its rows, then its checkpoint directory.
/// Returns what was deleted ("experiment 3 (name) with 4 trials and its
/// checkpoints under DIR"), or "" when `confirm` said no.
///
/// A running experiment whose driver is alive is refused (nothing
/// deleted), saying how to go on: "alive" is a live process (not a zombie)
/// of the row's owner ("host pid") on this host; a driver on another host,
/// or any running experiment when the store is read through a head
/// (`remote`), counts as alive. With `force` a live driver on this host is
/// sent SIGTERM (it checkpoints, records the experiment interrupted and
/// exits) and waited for, at most 60 s (refused if it does not exit); one
/// elsewhere is not waited for (its later writes to the store fail).
///
/// The directory (`storage`) is removed only when it carries this
/// experiment's owner marker (checkpoint/ownership.hpp, storage_owner):
/// never another store's experiment's directory, nor a directory the row
/// was rewritten to point at; such a directory is left in place, said as a
/// note, and the rows are still deleted.
result<std::string> delete_experiment(experiments::experiment_store& s, const delete_request& r);

} // namespace dtrain::runs
