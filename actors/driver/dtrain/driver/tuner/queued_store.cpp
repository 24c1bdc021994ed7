#include "dtrain/driver/tuner/queued_store.hpp"

#include <condition_variable>
#include <future>
#include <mutex>
#include <utility>

namespace dtrain::actors {

// What the jobs touch (they may outlive this object on a worker left
// running): the wrapped store, reached only through use() while open, and
// the writes' errors, on the worker only.
struct queued_store::shared {
  std::mutex mutex;
  std::condition_variable calls_ended;  // `calling` fell to false
  std::shared_ptr<experiments::experiment_store> inner;  // null once closed
  bool calling = false;  // a job is in a call to `inner`
  bool closing = false;  // close() began: no call starts any more
  status kept;    // the first write error since the last flush
  int later = 0;  // and how many came after it

  // Runs `call` on the wrapped store unless close() came first: false then.
  template <class F>
  bool use(F&& call) {
    experiments::experiment_store* store = nullptr;
    {
      std::lock_guard<std::mutex> lock(mutex);
      if (closing)
        return false;
      calling = true;
      store = inner.get();  // kept alive by `inner`: close() waits for `calling`
    }
    call(*store);
    std::lock_guard<std::mutex> lock(mutex);
    calling = false;
    calls_ended.notify_all();
    return true;
  }

  void keep(const status& s) {
    if (s.is_ok())
      return;
    if (kept.is_ok())
      kept = s;
    else
      ++later;
  }
  status take() {
    status out = kept;
    if (later > 0)
      out = out.with_context(std::to_string(later) + " later write(s) failed too; the first");
    kept = status::ok();
    later = 0;
    return out;
  }
};

namespace {

status stopped() {
  return status(error_code::unavailable, "the tuner's store worker has stopped");
}

} // namespace

queued_store::queued_store(std::shared_ptr<experiments::experiment_store> inner,
                           std::shared_ptr<job_thread> worker)
  : shared_(std::make_shared<shared>()), worker_(std::move(worker)), where_(inner->where()) {
  shared_->inner = std::move(inner);
}

queued_store::~queued_store() { close(); }

void queued_store::close() {
  std::shared_ptr<experiments::experiment_store> released;
  {
    std::unique_lock<std::mutex> lock(shared_->mutex);
    shared_->closing = true;
    // Bounded by the wrapped store's own bound on one call (a
    // service_client's request timeout).
    shared_->calls_ended.wait(lock, [&] { return !shared_->calling; });
    released = std::move(shared_->inner);
  }
  // `released` goes here, on the closing thread, never on the worker.
}

bool queued_store::post(std::function<void(experiments::experiment_store&, status)> job) {
  return worker_->post([s = shared_, job = std::move(job)] {
    s->use([&](experiments::experiment_store& inner) { job(inner, s->take()); });
  });
}

status queued_store::write(std::function<status(experiments::experiment_store&)> call) {
  if (!worker_->post([s = shared_, call = std::move(call)] {
        s->use([&](experiments::experiment_store& inner) { s->keep(call(inner)); });
      }))
    return stopped();
  return status::ok();
}

template <class T>
result<T> queued_store::wait_for(std::function<result<T>(experiments::experiment_store&)> call) {
  auto done = std::make_shared<std::promise<result<T>>>();
  auto answer = done->get_future();
  auto job = [s = shared_, call = std::move(call), done] {
    if (!s->use([&](experiments::experiment_store& inner) { done->set_value(call(inner)); }))
      done->set_value(result<T>(stopped()));
  };
  if (!worker_->post(std::move(job), [done] { done->set_value(result<T>(stopped())); }))
    return stopped();
  return answer.get();
}

result<int64_t> queued_store::create_experiment(const experiments::experiment_row& e) {
  return wait_for<int64_t>([e](experiments::experiment_store& s) { return s.create_experiment(e); });
}

status queued_store::update_experiment(const experiments::experiment_row& e) {
  return write([e](experiments::experiment_store& s) { return s.update_experiment(e); });
}

result<experiments::experiment_row> queued_store::experiment(int64_t id) {
  return wait_for<experiments::experiment_row>([id](experiments::experiment_store& s) { return s.experiment(id); });
}

result<std::vector<experiments::experiment_row>> queued_store::experiments() {
  return wait_for<std::vector<experiments::experiment_row>>(
      [](experiments::experiment_store& s) { return s.experiments(); });
}

status queued_store::delete_experiment(int64_t id) {
  auto out = wait_for<bool>([id](experiments::experiment_store& s) -> result<bool> {
    status d = s.delete_experiment(id);
    return d ? result<bool>(true) : result<bool>(d);
  });
  return out ? status::ok() : out.error();
}

status queued_store::put_trial(const experiments::trial_row& t) {
  return write([t](experiments::experiment_store& s) { return s.put_trial(t); });
}

result<std::vector<experiments::trial_row>> queued_store::trials(int64_t experiment) {
  return wait_for<std::vector<experiments::trial_row>>(
      [experiment](experiments::experiment_store& s) { return s.trials(experiment); });
}

status queued_store::add_metrics(const std::vector<experiments::metric_row>& rows) {
  return write([rows](experiments::experiment_store& s) { return s.add_metrics(rows); });
}

result<std::vector<experiments::metric_row>> queued_store::metrics(int64_t experiment,
                                                             const std::string& trial) {
  return wait_for<std::vector<experiments::metric_row>>(
      [experiment, trial](experiments::experiment_store& s) { return s.metrics(experiment, trial); });
}

status queued_store::put_checkpoint(const experiments::checkpoint_row& c) {
  return write([c](experiments::experiment_store& s) { return s.put_checkpoint(c); });
}

result<std::vector<experiments::checkpoint_row>> queued_store::checkpoints(int64_t experiment,
                                                                     const std::string& trial) {
  return wait_for<std::vector<experiments::checkpoint_row>>(
      [experiment, trial](experiments::experiment_store& s) { return s.checkpoints(experiment, trial); });
}

status queued_store::add_lineage(const experiments::lineage_row& l) {
  return write([l](experiments::experiment_store& s) { return s.add_lineage(l); });
}

result<std::vector<experiments::lineage_row>> queued_store::lineage(int64_t experiment) {
  return wait_for<std::vector<experiments::lineage_row>>(
      [experiment](experiments::experiment_store& s) { return s.lineage(experiment); });
}

status queued_store::add_event(const experiments::event_row& e) {
  return write([e](experiments::experiment_store& s) { return s.add_event(e); });
}

result<std::vector<experiments::event_row>> queued_store::events(int64_t experiment,
                                                           const std::string& trial) {
  return wait_for<std::vector<experiments::event_row>>(
      [experiment, trial](experiments::experiment_store& s) { return s.events(experiment, trial); });
}

status queued_store::flush() {
  auto out = wait_for<bool>([s = shared_](experiments::experiment_store& inner) -> result<bool> {
    const status kept = s->take();
    const status flushed = inner.flush();
    if (!kept)
      return kept;
    return flushed ? result<bool>(true) : result<bool>(flushed);
  });
  return out ? status::ok() : out.error();
}

} // namespace dtrain::actors
