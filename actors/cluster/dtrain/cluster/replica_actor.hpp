#pragma once

#include "caf/all.hpp"
#include "dtrain/cluster/messages.hpp"

namespace dtrain::actors {

/// A replica as the trainer sees it: a small event-based front that the
/// node actor spawns for a trainer (node_actor.hpp: spawn, in a node process
/// or the embedded cluster's own; never by CAF remote spawn), and a
/// detached worker behind it that owns the replica_runner
/// and does the blocking work (rendezvous, epochs, collectives) on its own
/// thread, never on CAF's scheduler threads. The front delegates every
/// request to the worker.
///
/// Every message carries the replica's capability (replica_spec::
/// capability, drawn by its trainer for this replica alone) first: any peer
/// connected to the process can address an actor (CAF 0.17 ties no message
/// to a connection, ids are sequential), so a message with another string (compared
/// in constant time) does nothing and gets invalid_argument naming the
/// operation and "not this replica's owner".
///
/// Lifetime: the front monitors its owner (the trainer's actor). When the
/// owner goes away (driver killed, connection lost), or the front is told
/// to exit, it aborts the worker's communicator (so a collective in
/// progress ends at once instead of at its timeout) and takes the worker
/// down with it. Every front and worker is recorded in the process's hosted
/// set, so that a node shutting down can end them all first.
///
/// Live recovery (the trainer's, trainer_live.cpp): status is answered by
/// the front at once (the replica's rank), even while its worker is in an
/// epoch; interrupt aborts the worker's communicator without ending the
/// replica (the epoch in flight fails, the state of its last committed
/// step stays); reform(spec) builds a communicator of spec's generation,
/// rank and world size (spec must carry this replica's capability and
/// trainer) and moves the runner into that group (replica_runner::reform);
/// sync runs replica_runner::synchronize_state.
replica_actor::behavior_type replica_front(replica_actor::pointer self, replica_spec spec,
                                           caf::actor owner, rendezvous_actor store);

/// Ends every replica hosted by this process (node shutdown, driver exit);
/// returns how many were still running.
int stop_hosted_replicas();

/// Replicas currently hosted by this process.
int hosted_replica_count();

/// Replica workers (the threads doing the work) still alive in this process.
int live_replica_workers();

} // namespace dtrain::actors
