#pragma once

#include <memory>
#include <string>

#include "dtrain/comm/communicator.hpp"
#include "dtrain/rendezvous/store.hpp"
#include "dtrain/core/status.hpp"

namespace dtrain::comm {

/// A communicator over Gloo's TCP transport: one full mesh of sockets
/// between `size` ranks on one host or many, for float32 buffers in host
/// memory (supports(cpu) only; CUDA buffers are refused at issue time).
///
/// Only Gloo's options-based collectives (gloo::allreduce, broadcast,
/// allgather, gather, barrier) run on the mesh, never the legacy algorithm
/// classes, which pin socket send buffers and slow every later call.
/// reduce_scatter has no options-based form in this Gloo: it is an
/// all-reduce of a scratch copy of the input, of which this rank keeps
/// chunk `rank`. average is a sum scaled by 1/size. A group of one runs
/// every operation locally. Buffers of zero elements are no-ops that still
/// succeed on every rank.
///
/// Rendezvous: create() publishes this rank's addresses under "gloo/RANK"
/// in `store` (give each group its own prefix_store) and connects to every
/// peer; it returns within `timeout` (plus the time to finish a connection
/// already begun), with error_code::timeout naming the ranks that never
/// published their keys.
///
/// Deadlines: a watchdog thread ends the running operation when its
/// deadline passes (the communicator's timeout after it was issued);
/// Gloo's own per-wait timeout is a backstop set slightly later. Failures
/// are reported, not thrown: a Gloo exception becomes a status naming the
/// operation, this rank and, where a peer published why it failed, that
/// peer ("rank 2 reported: ...").
///
/// Breaking the mesh: Gloo has no abort of its own. On abort(), a passed
/// deadline or any failed operation, this rank publishes the reason under
/// "gloo/failed/RANK" in the store, then puts every connection of the mesh
/// into the error state and closes it (Gloo's own reaction to a timed-out
/// wait, tcp::Context::signalException). An operation running here ends at
/// once (aborted after abort(), timeout at the deadline); peers see their
/// connections close, so their running or next operation fails at once
/// (io_error) and names this rank and its reason, and a failure spreads
/// through the whole group instead of leaving ranks to their deadlines.
/// abort() on an idle communicator breaks the mesh as well. The mesh
/// cannot be repaired; form a new group under a new store prefix.
///
/// Thread safety as for communicator. The destructor stops the worker
/// (failing queued operations), ends a running one, and closes the mesh.
class gloo_communicator final : public queued_communicator {
public:
  /// Joins the group as `rank` of `size`, binding its sockets to
  /// `bind_address` (an IPv4 address or a name; "" or "auto": see
  /// net::resolve_bind_address()). Gloo listens there and publishes that address
  /// through the store, so peers connect to it: it must be one they can
  /// reach. Fails with invalid_argument naming the field, timeout naming the
  /// missing ranks, or io_error (an address that does not resolve or does
  /// not belong to this machine, named with the reason; a refused
  /// connection; a store failure).
  static result<std::unique_ptr<gloo_communicator>> create(
      int rank, int size, std::shared_ptr<rendezvous::store> store, milliseconds timeout,
      const std::string& bind_address = "127.0.0.1");

  ~gloo_communicator() override;

  std::string backend() const override { return "gloo"; }
  bool supports(device where) const override { return where.is_cpu(); }

protected:
  status run(const request& r) override;
  void interrupt() override;

private:
  struct state;
  gloo_communicator(int rank, int size, milliseconds timeout, std::unique_ptr<state> s);

  /// Runs one collective through Gloo; throws what Gloo throws.
  void run_collective(const request& r, milliseconds budget);
  /// Runs one operation of a group of one (no peers, no Gloo).
  void run_local(const request& r);
  /// The status of a run() that Gloo ended with `what`.
  status failure(const request& r, const std::string& what);
  /// Publishes why this rank gives up, then fails the whole mesh; later
  /// runs fail with `code`. Only the first call acts. Called with
  /// state_->mutex held.
  void break_mesh_locked(error_code code, const std::string& why);
  void watchdog_loop();
  /// "; rank 2 reported: ..." for each peer that published a failure.
  std::string peer_reports();

  std::unique_ptr<state> state_;
};

} // namespace dtrain::comm
