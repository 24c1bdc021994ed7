#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "dtrain/rendezvous/store.hpp"
#include "dtrain/core/status.hpp"
#include "dtrain/tensor/tensor.hpp"

namespace dtrain::comm {

using rendezvous::bytes;
using rendezvous::to_bytes;
using rendezvous::to_string;
using milliseconds = std::chrono::milliseconds;

enum class reduce_op { sum, average, min, max };
const char* to_string(reduce_op op);

/// The handle of an asynchronous collective (c10d's Work). Thread-safe.
///
/// Every work carries a finite deadline: the operation's own (the
/// communicator's timeout after it was issued) plus wait_grace, the time a
/// backend may need past its deadline to give up and report (closing
/// sockets, aborting NCCL). wait() blocks until the operation has finished
/// on this rank and returns its status, or returns error_code::timeout at
/// that deadline; wait(timeout) gives up after `timeout` instead (zero
/// polls). A wait that times out leaves the operation running: it still
/// owns its buffers (the tensors it holds keep them alive) until completed()
/// says otherwise, and it still ends by its own deadline, breaking the
/// communicator if it failed. No wait can block for ever.
class work {
public:
  /// How long past the operation's deadline wait() keeps waiting.
  static constexpr milliseconds wait_grace{2000};

  /// `what` names the operation in errors ("all_reduce #3 on rank 0 of 2
  /// (shm)"); `deadline` is the time the operation ends by at the latest.
  work(std::string what, std::chrono::steady_clock::time_point deadline);
  work(const work&) = delete;
  work& operator=(const work&) = delete;

  /// Until the operation ends, or its deadline plus wait_grace.
  status wait();
  /// Until the operation ends, or `timeout` (at most until wait() would).
  status wait(milliseconds timeout);
  bool completed() const;

  /// For implementations: records the outcome and wakes waiters (once).
  void finish(status outcome);

private:
  status wait_until(std::chrono::steady_clock::time_point until, milliseconds waited);

  const std::string what_;
  const std::chrono::steady_clock::time_point deadline_;
  mutable std::mutex mutex_;
  std::condition_variable cv_;
  bool done_ = false;
  status outcome_;
};

using work_ptr = std::shared_ptr<work>;

/// A group of `size` ranks that run collectives on float32 buffers together.
///
/// Every operation is asynchronous: it is queued and run in issue order by
/// the communicator's own thread, and returns a work handle; every rank must
/// issue the same operations in the same order. Buffers are tensors on the
/// host or (for backends that support it) a CUDA device; the caller keeps
/// them alive and untouched until the work completes. Results are written in
/// place (all_reduce, broadcast) or into the output tensor.
///
/// Exactness: broadcast, all_gather and gather copy bits. Every backend
/// delivers each element bit for bit as its sender held it, for any 32-bit
/// pattern: -0, denormals, infinities, quiet and signalling NaNs with their
/// payloads; no float arithmetic ever touches them. So they may carry
/// arbitrary bytes packed into float tensors (metadata, checksums).
/// all_reduce and reduce_scatter are float arithmetic and carry numbers.
///
/// Failure: each operation has a deadline (the communicator's timeout).
/// When it expires, or on abort(), or when a peer fails, the operation ends
/// with an error that names the operation, this rank and the peer it was
/// waiting for, and the communicator becomes broken: every later operation
/// fails at once with error_code::aborted and the first cause. A broken
/// communicator cannot be repaired; form a new one under a new store prefix.
///
/// Shapes: all_gather output = size * input numel; gather output likewise
/// (read only at root); reduce_scatter input = size * output numel, rank r
/// receiving the reduction of chunk r. Thread-safe: any thread may issue
/// operations or abort().
class communicator {
public:
  virtual ~communicator() = default;

  virtual int rank() const = 0;
  virtual int size() const = 0;
  /// "shm", "gloo", "hierarchical", "nccl".
  virtual std::string backend() const = 0;
  /// Whether buffers on `where` are accepted.
  virtual bool supports(device where) const = 0;

  virtual work_ptr all_reduce(tensor buffer, reduce_op op) = 0;
  virtual work_ptr broadcast(tensor buffer, int root) = 0;
  virtual work_ptr all_gather(tensor input, tensor output) = 0;
  virtual work_ptr gather(tensor input, tensor output, int root) = 0;
  virtual work_ptr reduce_scatter(tensor input, tensor output, reduce_op op) = 0;
  virtual work_ptr barrier() = 0;

  /// A zeroed host buffer of `count` floats that all_reduce() reduces
  /// without copying in or out when given ranges of it (the shared memory
  /// backend maps every rank's buffer into every rank); elsewhere an
  /// ordinary tensor. Collective: every rank calls it with the same count,
  /// in the same order among its calls of it, while none of its operations
  /// is queued. Each call replaces the previous buffer for that purpose
  /// (the old one stays valid memory while tensors hold it).
  virtual result<tensor> shared_buffer(int64_t count) { return tensor::try_zeros({count}); }

  /// Fails every queued and running operation (aborted) and breaks the
  /// communicator. Safe from any thread, also while an operation waits.
  /// Never blocks the caller: it records the cause, fails the queued
  /// operations and wakes their waiters at once; whatever may block (closing
  /// sockets, publishing the cause in the store, ncclCommAbort) runs on a
  /// thread of the communicator, so an actor's scheduler thread may call it.
  /// The running operation ends shortly after (its work then completes with
  /// error_code::aborted). Only the first call acts; later ones are no-ops.
  virtual void abort(const std::string& why) = 0;
  virtual bool broken() const = 0;
  /// The error that broke the communicator, or ok.
  virtual status broken_reason() const = 0;
};

/// The shared machinery of the CPU backends: argument checks, a FIFO of
/// operations run one at a time on a worker thread, deadlines, and the
/// broken state. A backend implements run() synchronously, returning at the
/// request's deadline at the latest, and interrupt() to make a running
/// run() return early after abort(). abort() runs interrupt() on a thread
/// of its own (joined by shutdown()), so interrupt() may block.
class queued_communicator : public communicator {
public:
  queued_communicator(int rank, int size, milliseconds timeout);
  ~queued_communicator() override;

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  milliseconds timeout() const { return timeout_; }

  work_ptr all_reduce(tensor buffer, reduce_op op) override;
  work_ptr broadcast(tensor buffer, int root) override;
  work_ptr all_gather(tensor input, tensor output) override;
  work_ptr gather(tensor input, tensor output, int root) override;
  work_ptr reduce_scatter(tensor input, tensor output, reduce_op op) override;
  work_ptr barrier() override;

  void abort(const std::string& why) override;
  bool broken() const override;
  status broken_reason() const override;

protected:
  enum class op_kind { all_reduce, broadcast, all_gather, gather, reduce_scatter, barrier };
  static const char* to_string(op_kind kind);

  struct request {
    op_kind kind = op_kind::barrier;
    tensor input;    // all_reduce/broadcast: the buffer; others: the input
    tensor output;   // all_gather, gather, reduce_scatter
    reduce_op op = reduce_op::sum;
    int root = 0;
    std::chrono::steady_clock::time_point deadline;
    uint64_t sequence = 0;  // the how-manyth operation of this communicator
  };

  /// Runs one operation to completion or to its deadline. Called on the
  /// worker thread only, one request at a time.
  virtual status run(const request& r) = 0;
  /// Makes a run() in progress return soon (abort); called on the
  /// interrupting thread after abort(), and by shutdown(). May block. The
  /// default does nothing (run() then ends at its deadline).
  virtual void interrupt() {}

  /// Stops the worker; backends call it first in their destructors, so that
  /// run() never executes on a half-destroyed object.
  void shutdown();
  /// Waits until the interrupt() started by an abort() has returned (no-op
  /// without one); for destructors that must let it finish before they
  /// change what interrupt() reads.
  void await_interrupt();

  /// "all_reduce #12 on rank 1 of 4 (shm)": the start of every error.
  std::string describe(const request& r) const;

private:
  work_ptr submit(request r);
  work_ptr fail_now(const status& why);
  void worker_loop();

  int rank_;
  int size_;
  milliseconds timeout_;
  uint64_t issued_ = 0;

  mutable std::mutex mutex_;
  std::condition_variable cv_;
  std::deque<std::pair<request, work_ptr>> queue_;
  bool stopping_ = false;
  status broken_;
  bool interrupting_ = false;  // abort() has started interrupter_
  std::thread worker_;
  std::thread interrupter_;    // runs interrupt() after abort()
};

} // namespace dtrain::comm
