#pragma once

#include <atomic>
#include <memory>
#include <optional>
#include <string>

#include "dtrain/comm/communicator.hpp"
#include "dtrain/rendezvous/store.hpp"
#include "dtrain/core/status.hpp"

namespace dtrain::comm {

/// The GPU backend: collectives on float32 buffers on one CUDA device,
/// through NCCL. Built only with CUDA and NCCL (DTRAIN_HAS_NCCL); this header
/// is free of CUDA and NCCL includes.
///
/// Each rank is one process (or thread) driving one device; NCCL does not
/// allow two ranks of a group on the same device. Operations run in issue
/// order on the communicator's worker thread, which enqueues the NCCL call on
/// the communicator's own CUDA stream and polls until that stream's work is
/// done; the work handle completes then, so the results are ready to read
/// when wait() returns ok. Before each call the stream waits for all work
/// issued so far on the legacy default stream, where dtrain's kernels run, so
/// inputs written there need no synchronize; the default stream never waits
/// for NCCL in turn.
///
/// Failure: an operation still running at its deadline, an NCCL
/// asynchronous error (a peer failed, a network error) or a CUDA error aborts
/// the NCCL communicator (ncclCommAbort), ends the operation with an error
/// naming the operation, this rank and NCCL (error_code::timeout for a
/// deadline), and breaks the communicator. abort() may be called from any
/// thread, also while an operation waits, and returns at once: ncclCommAbort
/// (which blocks while NCCL tears down) runs on the communicator's
/// interrupting thread; the waiting operation then ends with
/// error_code::aborted.
///
/// Exactness: broadcast, all_gather and gather are ncclBroadcast,
/// ncclAllGather and ncclSend/ncclRecv (plus a device-to-device copy of the
/// root's own block): copies, no reduction kernel, so every bit pattern
/// arrives as sent (the communicator contract).
/// Destroying a healthy communicator finalizes and destroys the NCCL
/// communicator, waiting at most the timeout before aborting it instead.
/// Thread-safe, as every communicator.
class nccl_communicator final : public queued_communicator {
public:
  /// Forms the group: rank 0 creates an NCCL unique id and publishes it in
  /// `store` under "nccl/unique_id"; the other ranks read it from there, so
  /// give each group (and each restart) its own prefix_store. Then every rank
  /// initializes NCCL without blocking and polls its progress. The whole of
  /// create() gives up at `timeout` (error_code::timeout, the NCCL
  /// initialization aborted), which is also each operation's timeout. Makes
  /// no lasting change to the calling thread's current device. Errors:
  /// invalid_argument (rank, size, store, timeout), unavailable (no CUDA
  /// device), out_of_range (cuda_device), timeout, cuda_error (CUDA or NCCL
  /// failed, with NCCL's last error).
  static result<std::unique_ptr<nccl_communicator>> create(int rank, int size, int cuda_device,
                                                           std::shared_ptr<rendezvous::store> store,
                                                           milliseconds timeout);
  ~nccl_communicator() override;

  std::string backend() const override { return "nccl"; }
  /// Only buffers on this communicator's CUDA device.
  bool supports(device where) const override;
  int cuda_device() const { return device_; }

private:
  /// The CUDA stream, event and scratch buffer, and the NCCL communicator
  /// with the mutex that serializes its use against abort() (nccl.cpp).
  struct resources;

  nccl_communicator(int rank, int size, int cuda_device, milliseconds timeout,
                    std::unique_ptr<resources> res);

  status run(const request& r) override;
  void interrupt() override;

  /// Makes the stream wait for the default stream, then enqueues the op.
  status issue(const request& r);
  /// Polls the op to completion, to an error or to its deadline.
  status wait_for(const request& r);
  /// One look at the op: nullopt while it runs, ok when done, else the
  /// error (the NCCL communicator then aborted).
  std::optional<status> poll_once(const request& r);
  /// ncclCommAbort now (under the communicator's mutex); idempotent.
  void abort_nccl();

  int device_;
  std::unique_ptr<resources> res_;
  // Destruction while idle closes NCCL cleanly; interrupt() aborts only an
  // operation that is running (see interrupt()).
  std::atomic<bool> closing_{false};
  std::atomic<bool> running_{false};
};

} // namespace dtrain::comm
