#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <string>

namespace dtrain::actors {

/// One thread that runs jobs one at a time, in the order they were posted:
/// where an actor sends its blocking work (a store's SQLite calls, file
/// listings, removals), so that CAF's scheduler threads (two on a 2-core
/// host) never wait on a slow disk. A job reports back to its actor with a
/// message (it must not touch the actor's state, nor deliver its response
/// promises: see experiments/service.cpp).
///
/// FIFO: a job starts after every job posted before it ended, so a
/// client's writes and its later flush keep their order.
///
/// stop() is bounded: it never waits longer than it is told, even for a
/// job stuck in a disk call; such a thread is then left to end on its own
/// (detached), so a job must own what it touches (shared_ptr captures).
/// The destructor stops with a bound of 5 s. Thread-safe.
class job_thread {
public:
  using job = std::function<void()>;

  /// `name`: the thread's name (its first 15 characters), for top -H and gdb.
  explicit job_thread(std::string name);
  ~job_thread();
  job_thread(const job_thread&) = delete;
  job_thread& operator=(const job_thread&) = delete;

  /// Queues `run` (which must not throw). `dropped`, when given, is called instead if stop() gives
  /// up on the job before it started (on stop()'s thread). False, and
  /// neither is ever called, once stop() was called.
  bool post(job run, job dropped = nullptr);

  /// Takes no new jobs; runs the queued ones until `bound` has passed,
  /// drops the rest (calling their `dropped`), and waits for the job then
  /// running up to the same deadline. True when every queued job ran and
  /// the thread was joined; false when jobs were dropped or the thread was
  /// left running. A second call returns at once (true).
  bool stop(std::chrono::milliseconds bound);

  /// Drops the jobs queued and not started yet (calling their `dropped`,
  /// on this thread); the worker takes new ones. Returns how many.
  size_t drop_queued();

  /// Jobs queued and not started yet.
  size_t queued() const;

private:
  struct shared;
  std::shared_ptr<shared> shared_;
};

} // namespace dtrain::actors
