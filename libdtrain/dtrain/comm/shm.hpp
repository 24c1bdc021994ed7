#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "dtrain/comm/communicator.hpp"
#include "dtrain/comm/store.hpp"

namespace dtrain::comm {

/// Collectives between ranks on one host through POSIX shared memory: the
/// fast path on one machine (ranks may be threads or processes).
///
/// One segment per group, created by rank 0, named through the store
/// ("shm/name"), mapped by every rank and unlinked as soon as all have it
/// mapped (so nothing is left in /dev/shm, even after a crash). It holds a
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
  /// slot_floats: the size of a staging slot (pieces larger are split).
  /// Returns once all `size` ranks have mapped the segment, or an error
  /// naming the ranks that did not appear within `timeout`.
  static result<std::unique_ptr<shm_communicator>> create(int rank, int size,
                                                          std::shared_ptr<store> store,
                                                          milliseconds timeout,
                                                          int64_t slot_floats = 2 << 20);
  ~shm_communicator() override;

  std::string backend() const override { return "shm"; }
  bool supports(device where) const override { return where.is_cpu(); }

  struct header;  // the control block at the start of the segment

protected:
  status run(const request& r) override;
  void interrupt() override;

private:
  shm_communicator(int rank, int size, milliseconds timeout, int64_t slot_floats);
  status attach(store& s, milliseconds timeout);
  status barrier_wait(const request* r, std::chrono::steady_clock::time_point deadline);
  float* slot(int half, int rank) const;
  float* result_area(int half) const;
  int next_half() { return static_cast<int>(phase_++ & 1); }

  status run_all_reduce(const request& r);
  status run_broadcast(const request& r);
  status run_gather(const request& r, bool everyone);
  status run_reduce_scatter(const request& r);

  int64_t slot_floats_;
  size_t bytes_ = 0;
  void* base_ = nullptr;
  header* header_ = nullptr;
  uint64_t barriers_ = 0;  // barriers this rank has entered
  uint64_t phase_ = 0;     // data phases this rank has run (picks the half)
  std::atomic<bool> interrupted_{false};
};

} // namespace dtrain::comm
