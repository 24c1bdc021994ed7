#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>

#include "caf/all.hpp"
#include "dtrain/cluster/experiment_protocol.hpp"
#include "dtrain/cluster/session_directory.hpp"
#include "dtrain/core/status.hpp"
#include "dtrain/experiments/store.hpp"
#include "dtrain/experiments/write_errors.hpp"

namespace dtrain::experiments {

/// Opens the store the service keeps (called on the service's first
/// request, and again on the next one after it failed).
using store_opener = std::function<result<std::unique_ptr<experiments::experiment_store>>()>;

/// $DTRAIN_HOME/experiments.db: where a head (embedded or `dtrain start
/// --head`) keeps its store unless told otherwise.
std::string default_store_path();

/// open_sqlite_store(path) as a store_opener.
store_opener sqlite_opener(const std::string& path);

/// The store's side of the service, touched only by jobs on the service's
/// worker thread: the opener, the store once open, and the errors of the
/// writes the service itself refused (the store could not be opened, an
/// update_experiment was refused), by experiment and bounded, until a
/// client that wrote that experiment flushes.
struct store_side {
  store_opener open;
  std::string path;  // for messages
  std::unique_ptr<experiments::experiment_store> store;
  experiments::write_errors write_errors;
};

/// The worker thread, its store_side and the replies waiting for their
/// jobs (service.cpp).
struct service_jobs;

/// The service's state: the actor itself (to make response promises) and
/// its jobs, shared with the cleanup that stops the worker.
struct service_state {
  experiment_service::pointer self = nullptr;
  std::string path;  // for messages
  std::shared_ptr<const actors::session_directory> sessions;  // the head's (see service_impl)
  std::shared_ptr<service_jobs> jobs;
};

/// The experiment service: owns the experiment store of a cluster (the
/// head spawns it, see head_actor.hpp) and answers one message per
/// experiments::experiment_store call (protocol.hpp).
///
/// The store is opened lazily, on the first request: a database that
/// cannot be opened (corrupt, newer schema, no permission) fails that
/// request with the opener's error, which names `path`, and the next
/// request tries again; it never stops the head or its trainers. Writes
/// are one-way messages. Their errors stay with the experiment they
/// wrote: one failed write (of an experiment deleted while its run writes
/// to it, or in a store that cannot be opened) refuses nothing else, and
/// its error ("add_metrics: ...") is returned by the next flush that names
/// the experiment, the flush of the client writing it. Every flush also
/// flushes the store, whatever errors are kept, so that the store's own
/// recovery never waits for a client.
///
/// update_experiment may set an experiment's `storage` (its checkpoint
/// directory, which `dtrain experiments delete` removes) once, from "",
/// and never change it: otherwise any client could point a later delete at
/// any directory. The refusal names the experiment and the field.
///
/// Every message carries the sender's session token (protocol.hpp), which
/// `sessions` (the head's session_directory, shared with head_auth) must
/// know as a session of the sending process that proved a client
/// certificate, or as the head's own local session; on a plain cluster
/// (sessions not enabled) every message passes. A refused request gets
/// an invalid_argument reply naming the operation and the reason (no
/// session, an unknown one, or "a node certificate"); a refused one-way
/// write is dropped, with one stderr line on the head naming the process,
/// and touches nothing (its error is kept for no experiment, so a forger
/// cannot fail another client's flush).
///
/// Blocking: none on the actor. Every store call runs on a worker thread
/// the service owns (one, FIFO: a client's writes, then its flush and
/// reads, run in the order they came), so a slow disk or a locked SQLite
/// file never holds one of CAF's scheduler threads (two in a dtrain
/// process: head placement, heartbeats and reports share them). A request
/// is answered when its job is done: the worker tells the service (a local
/// message) and the service delivers the reply, since a response promise
/// is the actor's own (CAF 0.17's deliver reads the actor's execution
/// unit, which only the actor may touch). A client still bounds its wait
/// with its own timeout.
///
/// When the service ends, its cleanup stops the worker: the queued jobs
/// still run, and the store is closed after them, for up to 5 s; then the
/// rest are dropped (a dropped request fails with `unavailable`, a dropped
/// write is lost) and a job stuck past that is left to finish on its own
/// thread. Shutdown never waits longer (the cleanup runs on a scheduler
/// thread: at most those 5 s, once). Every request not answered by then
/// fails at once, not at the client's timeout.
///
/// Not a detached actor: in a head process that had answered remote
/// requests, ~actor_system then sometimes waited forever for the detached
/// actor's thread (private_thread::await_self_destroyed), a reference to it
/// being kept somewhere in the middleman. The worker is a plain thread that
/// the service's cleanup joins. Thread safety: an actor.
experiment_service::behavior_type service_impl(experiment_service::stateful_pointer<service_state> self,
                                               store_opener open, std::string path,
                                               std::shared_ptr<const actors::session_directory> sessions);

/// Spawns a service (tests; the head spawns its own).
experiment_service spawn_experiment_service(caf::actor_system& sys, store_opener open,
                                            std::string path,
                                            std::shared_ptr<const actors::session_directory> sessions);

} // namespace dtrain::experiments
