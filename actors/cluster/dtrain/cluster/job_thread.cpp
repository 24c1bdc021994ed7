#include "dtrain/cluster/job_thread.hpp"

#include <pthread.h>

#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>
#include <utility>

namespace dtrain::actors {

// What the thread and its owner share: the thread keeps it alive when it
// is left running after stop() gave up waiting for it.
struct job_thread::shared {
  struct entry {
    job run;
    job dropped;
  };
  mutable std::mutex mutex;
  std::condition_variable wake;  // a job queued, or stopping
  std::condition_variable idle;  // the thread ended (stop() waits on it)
  std::deque<entry> jobs;
  bool stopping = false;
  bool ended = false;
  std::thread thread;

  void loop() {
    std::unique_lock<std::mutex> lock(mutex);
    for (;;) {
      wake.wait(lock, [&] { return stopping || !jobs.empty(); });
      if (jobs.empty())
        break;  // stopping, and nothing left
      entry next = std::move(jobs.front());
      jobs.pop_front();
      lock.unlock();
      next.run();
      next = entry{};  // its captures go before the next job starts
      lock.lock();
    }
    ended = true;
    idle.notify_all();
  }
};

job_thread::job_thread(std::string name) : shared_(std::make_shared<shared>()) {
  shared_->thread = std::thread([s = shared_, name = std::move(name)] {
    pthread_setname_np(pthread_self(), name.substr(0, 15).c_str());
    s->loop();
  });
}

job_thread::~job_thread() { stop(std::chrono::seconds(5)); }

bool job_thread::post(job run, job dropped) {
  std::lock_guard<std::mutex> lock(shared_->mutex);
  if (shared_->stopping)
    return false;
  shared_->jobs.push_back({std::move(run), std::move(dropped)});
  shared_->wake.notify_one();
  return true;
}

bool job_thread::stop(std::chrono::milliseconds bound) {
  const auto deadline = std::chrono::steady_clock::now() + bound;
  std::deque<shared::entry> left;
  bool ended = false;
  {
    std::unique_lock<std::mutex> lock(shared_->mutex);
    if (shared_->stopping)
      return true;
    shared_->stopping = true;
    shared_->wake.notify_one();
    ended = shared_->idle.wait_until(lock, deadline, [&] { return shared_->ended; });
    // Whatever did not start by the deadline never will.
    left.swap(shared_->jobs);
  }
  for (auto& e : left)
    if (e.dropped)
      e.dropped();
  if (ended) {
    shared_->thread.join();
    return left.empty();
  }
  // A job stuck past the bound: the thread ends with it, holding `shared_`.
  shared_->thread.detach();
  return false;
}

size_t job_thread::drop_queued() {
  std::deque<shared::entry> left;
  {
    std::lock_guard<std::mutex> lock(shared_->mutex);
    left.swap(shared_->jobs);
  }
  for (auto& e : left)
    if (e.dropped)
      e.dropped();
  return left.size();
}

size_t job_thread::queued() const {
  std::lock_guard<std::mutex> lock(shared_->mutex);
  return shared_->jobs.size();
}

} // namespace dtrain::actors
