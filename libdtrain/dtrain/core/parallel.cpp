#include "dtrain/core/parallel.hpp"

#include <pthread.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <mutex>
#include <system_error>
#include <thread>
#include <vector>

#include "dtrain/core/threads.hpp"

namespace dtrain {

namespace {

// One loop at a time, split into `parts` ranges that the caller and the
// workers claim from the loop's atomic counter. Workers sleep on a
// condition variable between loops; one that wakes after its loop is over
// finds no loop and sleeps again, and the caller waits until no worker
// still holds the loop (which lives on the caller's stack). The pool is
// never destroyed (its threads would otherwise have to be joined during
// static destruction, while another static's destructor may still run a
// loop); a forked child, which has none of its parent's workers, runs
// every loop inline.
// Set while this thread runs ranges of a loop: a parallel_for inside a
// body runs inline (the pool is taken by the loop around it).
thread_local bool in_loop = false;

class worker_pool {
public:
  static worker_pool& instance() {
    static worker_pool* pool = new worker_pool();
    return *pool;
  }

  // Runs the loop in `parts` ranges, or returns false (having run nothing)
  // when another caller's loop is in flight.
  bool run(int parts, int64_t n, void* context, void (*fn)(void*, int64_t, int64_t)) {
    if (getpid() != owner_ || in_loop)
      return false;
    std::unique_lock<std::mutex> submit(submit_, std::try_to_lock);
    if (!submit.owns_lock())
      return false;
    // Fewer ranges when threads cannot be made (a process or cgroup limit):
    // the loop still runs, on the threads there are.
    parts = std::min(parts, grow(parts - 1) + 1);
    if (parts <= 1)
      return false;
    loop job{context, fn, n, parts};
    job.remaining = parts;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      current_ = &job;
      ++generation_;
    }
    for (int i = 1; i < parts; ++i)
      wake_.notify_one();
    in_loop = true;
    work(job);
    in_loop = false;
    std::unique_lock<std::mutex> lock(mutex_);
    done_.wait(lock, [&] { return job.remaining == 0 && job.users == 0; });
    current_ = nullptr;
    return true;
  }

private:
  struct loop {
    void* context;
    void (*fn)(void*, int64_t, int64_t);
    int64_t n;
    int parts;
    std::atomic<int> next{0};
    int remaining = 0;  // ranges not yet done (under mutex_)
    int users = 0;      // workers inside work() for this loop (under mutex_)
  };

  worker_pool() : owner_(getpid()) {}

  // Claims and runs ranges of `job` until none is left.
  void work(loop& job) {
    for (;;) {
      const int part = job.next.fetch_add(1, std::memory_order_relaxed);
      if (part >= job.parts)
        return;
      job.fn(job.context, job.n * part / job.parts, job.n * (part + 1) / job.parts);
      std::lock_guard<std::mutex> lock(mutex_);
      if (--job.remaining == 0)
        done_.notify_one();
    }
  }

  // Starts workers up to `workers`; returns how many there are.
  int grow(int workers) {
    workers = std::min(workers, max_workers);
    try {
      while (static_cast<int>(threads_.size()) < workers)
        threads_.emplace_back([this] {
          pthread_setname_np(pthread_self(), "dtrain-par");  // top -H, /proc/PID/task/*/comm
          serve();
        });
    } catch (const std::system_error&) {
      // No more threads for now; the next loop tries again.
    }
    return static_cast<int>(threads_.size());
  }

  void serve() {
    uint64_t seen = 0;
    for (;;) {
      loop* job = nullptr;
      {
        std::unique_lock<std::mutex> lock(mutex_);
        wake_.wait(lock, [&] { return generation_ != seen; });
        seen = generation_;
        job = current_;
        if (job == nullptr)
          continue;
        ++job->users;
      }
      in_loop = true;
      work(*job);
      in_loop = false;
      std::lock_guard<std::mutex> lock(mutex_);
      if (--job->users == 0 && job->remaining == 0)
        done_.notify_one();
    }
  }

  static constexpr int max_workers = 63;
  const pid_t owner_;
  std::mutex submit_;  // held by the caller whose loop is in flight
  std::mutex mutex_;
  std::condition_variable wake_, done_;
  std::vector<std::thread> threads_;  // touched only under submit_
  uint64_t generation_ = 0;
  loop* current_ = nullptr;
};

} // namespace

void parallel_for_ranges(int64_t n, int64_t grain, void* context,
                         void (*fn)(void*, int64_t, int64_t)) {
  if (n <= 0)
    return;
  grain = std::max<int64_t>(grain, 1);
  const int64_t by_size = std::max<int64_t>(n / grain, 1);
  const int parts = static_cast<int>(std::min<int64_t>(blas_threads(), by_size));
  if (parts <= 1 || !worker_pool::instance().run(parts, n, context, fn))
    fn(context, 0, n);
}

} // namespace dtrain
