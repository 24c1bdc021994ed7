#include "dtrain/core/parallel.hpp"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <mutex>
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
class worker_pool {
public:
  static worker_pool& instance() {
    static worker_pool* pool = new worker_pool();
    return *pool;
  }

  // Runs the loop in `parts` ranges, or returns false (having run nothing)
  // when another caller's loop is in flight.
  bool run(int parts, int64_t n, const std::function<void(int64_t, int64_t)>& body) {
    if (getpid() != owner_)
      return false;
    std::unique_lock<std::mutex> submit(submit_, std::try_to_lock);
    if (!submit.owns_lock())
      return false;
    grow(parts - 1);
    loop job{&body, n, parts};
    job.remaining = parts;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      current_ = &job;
      ++generation_;
    }
    wake_.notify_all();
    work(job);
    std::unique_lock<std::mutex> lock(mutex_);
    done_.wait(lock, [&] { return job.remaining == 0 && job.users == 0; });
    current_ = nullptr;
    return true;
  }

private:
  struct loop {
    const std::function<void(int64_t, int64_t)>* body;
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
      (*job.body)(job.n * part / job.parts, job.n * (part + 1) / job.parts);
      std::lock_guard<std::mutex> lock(mutex_);
      if (--job.remaining == 0)
        done_.notify_one();
    }
  }

  void grow(int workers) {
    workers = std::min(workers, max_workers);
    while (static_cast<int>(threads_.size()) < workers)
      threads_.emplace_back([this] { serve(); });
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
      work(*job);
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

void parallel_for(int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)>& body) {
  if (n <= 0)
    return;
  grain = std::max<int64_t>(grain, 1);
  const int64_t by_size = std::max<int64_t>(n / grain, 1);
  const int parts = static_cast<int>(std::min<int64_t>(blas_threads(), by_size));
  if (parts <= 1 || !worker_pool::instance().run(parts, n, body))
    body(0, n);
}

} // namespace dtrain
