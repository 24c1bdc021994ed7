#pragma once

#include "commands.hpp"
#include "dtrain/experiments/store.hpp"

namespace dtrain::cli {

/// `dtrain experiments delete ID [--yes] [--force]`: the experiment's rows,
/// then its checkpoint directory, and returns the exit code.
///
/// A running experiment whose driver is alive is refused (nothing
/// deleted), saying how to go on: "alive" is a live process (not a zombie)
/// of the row's owner ("host pid") on this host; a driver on another host,
/// or any running experiment when the store is read through a head
/// (`remote`), counts as alive. With --force a live driver on this host is
/// sent SIGTERM (it checkpoints, records the experiment interrupted and
/// exits) and waited for, at most 60 s (refused if it does not exit); one
/// elsewhere is not waited for (its later writes to the store fail).
///
/// The directory (`storage`) is removed only when it carries this
/// experiment's owner marker (checkpoint/ownership.hpp, runs::storage_owner):
/// never another store's experiment's directory, nor a directory the row
/// was rewritten to point at; such a directory is left in place, said on
/// stderr, and the rows are still deleted.
int delete_experiment(experiments::experiment_store& s, const experiments_options& o, bool remote);

} // namespace dtrain::cli
