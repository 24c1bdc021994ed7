#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "dtrain/comm/communicator.hpp"
#include "dtrain/rendezvous/store.hpp"

namespace dtrain::comm {

/// How a shm group lays out its segment.
struct shm_options {
  /// The preferred size of a staging slot, in floats (8 MiB). The segment
  /// holds 2 (N + 1) slots for N ranks, so 4 ranks want 80 MiB.
  int64_t slot_floats = int64_t{2} << 20;
  /// The smallest slot the creator falls back to (64 KiB; at least N) when
  /// the preferred one does not fit in /dev/shm. Pieces larger than a slot
  /// are split, so a smaller slot is slower, never wrong.
  int64_t min_slot_floats = int64_t{16} << 10;
  /// Segments are named "/PREFIX-PID-RANDOM" (tests pick their own prefix to
  /// find their own segments).
  std::string name_prefix = "dtrain";
  /// Free bytes in /dev/shm; empty: statvfs("/dev/shm"). Tests inject one.
  std::function<result<uint64_t>()> free_space;
};

/// Collectives between ranks on one host through POSIX shared memory: the
/// fast path on one machine (ranks may be threads or processes).
///
/// One segment per group, created by rank 0, named through the store
/// ("shm/name"), mapped by every rank and unlinked as soon as all have it
/// mapped (so nothing is left in /dev/shm, even after a crash). Rank 0
/// sizes it to fit: it reads the free space of /dev/shm (statvfs) and
/// halves the slot from options.slot_floats down to min_slot_floats until
/// the segment fits, then reserves its pages (fallocate), so a full
/// /dev/shm is an error at creation, never a SIGBUS later; the other ranks
/// take the slot size from the segment. When not even the smallest fits,
/// create() fails naming /dev/shm, the bytes needed and free. It holds a
/// control block (a per-rank arrival counter, each rank's pid) and two
/// halves of data, each with a staging slot per rank and a result area, used
/// alternately so that consecutive phases never overwrite data a slower
/// rank still reads; phases are separated by barriers.
///
/// all_reduce moves each piece of the buffer (at most slot_floats values) in
/// three phases: every rank publishes the parts the others own; each rank
/// reduces its own 1/N part (so the work is split N ways) in rank order,
/// into its buffer and the result area; every rank copies the other parts
/// back. Results are therefore bitwise identical on every rank, and
/// independent of timing.
///
/// Waiting spins briefly, then sleeps on a futex in the segment. A wait ends
/// at the operation's deadline (error names the ranks that did not arrive),
/// early when a missing rank's process has died (checked by pid), or at
/// abort(), which is local: peers see this rank as missing.
class shm_communicator final : public queued_communicator {
public:
  /// Returns once all `size` ranks have mapped the segment, or an error:
  /// the ranks that did not appear within `timeout` (timeout), a /dev/shm
  /// too small for the smallest slot (io_error naming both sizes), bad
  /// options (invalid_argument naming the field).
  static result<std::unique_ptr<shm_communicator>> create(int rank, int size,
                                                          std::shared_ptr<rendezvous::store> store,
                                                          milliseconds timeout,
                                                          shm_options options = {});
  /// The staging slot size rank 0 chose, in floats.
  int64_t slot_floats() const { return slot_floats_; }
  ~shm_communicator() override;

  std::string backend() const override { return "shm"; }
  bool supports(device where) const override { return where.is_cpu(); }
  /// Every rank's buffer in one segment that every rank maps: all_reduce()
  /// of a range of it reads the ranks' values where they are and writes the
  /// result into every rank's buffer, with no copy in or out (half the
  /// memory traffic of the slot path at N = 2). Where the segment cannot be
  /// made or mapped on some rank, every rank gets an ordinary tensor (the
  /// slot path); a rank that never answers is an error naming it.
  result<tensor> shared_buffer(int64_t count) override;

  struct header;  // the control block at the start of the segment

protected:
  status run(const request& r) override;
  void interrupt() override;

private:
  shm_communicator(int rank, int size, milliseconds timeout, shm_options options);
  status attach(rendezvous::store& s, milliseconds timeout);
  /// Rank 0: creates the segment `name`, choosing the slot size; returns
  /// its descriptor.
  result<int> create_segment(const std::string& name);
  /// Other ranks: opens `name` and takes its size and slot size.
  result<int> open_segment(const std::string& name);
  size_t segment_bytes(int64_t slot_floats) const;
  status barrier_wait(const request* r, std::chrono::steady_clock::time_point deadline);
  float* slot(int half, int rank) const;
  float* result_area(int half) const;
  int next_half() { return static_cast<int>(phase_++ & 1); }

  status run_all_reduce(const request& r);
  struct shared_region;
  status all_reduce_shared(const request& r, const shared_region& g, int64_t at);
  status run_broadcast(const request& r);
  status run_gather(const request& r, bool everyone);
  status run_reduce_scatter(const request& r);
  status reduce_scatter_shared(const request& r, const shared_region& g, int64_t at);

  std::shared_ptr<rendezvous::store> store_;  // the group's rendezvous, for shared_buffer()
  int shared_calls_ = 0;
  std::shared_ptr<const shared_region> shared_;  // atomic_load/atomic_store: set by the caller, read by the worker
  shm_options options_;
  int64_t slot_floats_;
  size_t bytes_ = 0;
  void* base_ = nullptr;
  header* header_ = nullptr;
  uint64_t barriers_ = 0;  // barriers this rank has entered
  uint64_t phase_ = 0;     // data phases this rank has run (picks the half)
  std::atomic<bool> interrupted_{false};
};

} // namespace dtrain::comm
