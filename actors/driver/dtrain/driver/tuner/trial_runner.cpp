#include "dtrain/driver/tuner/trial_runner.hpp"
#include "dtrain/checkpoint/checkpoint.hpp"
#include "dtrain/serialization/capnp_checkpoint.hpp"

#include <cstdio>
#include <memory>
#include <mutex>
#include <optional>

namespace dtrain::actors {

namespace {

// Shared by a runner and whoever interrupts it: the trainer is published
// here while it trains, and interrupt() preempts it under the lock, so the
// runner cannot destroy it in between.
class trial_control {
public:
  // False when the trial was interrupted before its trainer was ready.
  bool adopt(trainer* t) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (interrupted_)
      return false;
    trainer_ = t;
    return true;
  }
  void release() {
    std::lock_guard<std::mutex> lock(mutex_);
    trainer_ = nullptr;
  }
  bool interrupted() {
    std::lock_guard<std::mutex> lock(mutex_);
    return interrupted_;
  }
  // Blocks up to the trainer's preempt timeout: call it off actor threads.
  void interrupt() {
    std::lock_guard<std::mutex> lock(mutex_);
    interrupted_ = true;
    if (trainer_ != nullptr)
      (void)trainer_->preempt();
  }

private:
  std::mutex mutex_;
  trainer* trainer_ = nullptr;
  bool interrupted_ = false;
};

std::map<std::string, double> metrics_of(const metrics_msg& train, const metrics_msg& validation,
                                         size_t restarts) {
  // lr: the rate the epoch trained with, so the record shows what a PBT
  // exploit's new hyperparameters did.
  std::map<std::string, double> out{{"loss", train.loss},
                                    {"accuracy", train.accuracy},
                                    {"validation_loss", validation.loss},
                                    {"validation_accuracy", validation.accuracy},
                                    {"lr", static_cast<double>(train.lr)}};
  // The operator's own metrics; the replica refuses names that would
  // collide with the ones above.
  for (const auto& [name, value] : speed_metrics(train, restarts))
    out[name] = value;
  for (const auto& [name, value] : train.extra)
    out[name] = value;
  for (const auto& [name, value] : validation.extra)
    out["validation_" + name] = value;
  return out;
}

// Empty when `metrics` holds the sweep's `metric`, else why not.
std::string missing_metric(const std::string& metric, const std::string& operator_name,
                           const std::map<std::string, double>& metrics) {
  if (metric.empty() || metrics.count(metric) != 0)
    return "";
  std::string reported;
  for (const auto& [name, value] : metrics)
    reported += (reported.empty() ? "" : ", ") + name;
  return "the sweep's metric '" + metric + "' is not reported by operator '" + operator_name +
         "' (it reports " + reported + ")";
}

// The life of one trial, on its own thread: create the group, train and
// validate epoch by epoch, report each to the tuner and wait for its word,
// shut the group down (freeing its slots), say so.
void run_trial(caf::blocking_actor* self, cluster* c, trial_launch launch, caf::actor tuner,
               std::shared_ptr<trial_control> control) {
  auto end = [&](int32_t restarts, const std::string& error, bool interrupted) {
    self->send(tuner, trial_end_atom::value, launch.id, restarts, error, interrupted);
  };
  if (control->interrupted())
    return end(0, "", true);
  // The trainer calls it on this thread, inside its calls below.
  // (after the sweep's own, if its trial template has one).
  launch.config.on_event = [self, &launch, &tuner,
                            previous = launch.config.on_event](const trainer_event& e) {
    if (previous)
      previous(e);
    self->send(tuner, trial_event_atom::value, launch.id, e.epoch, e.kind, e.message);
  };
  auto created = trainer::create(*c, launch.config);
  if (!created)
    return end(0, created.error().to_string(), false);
  std::unique_ptr<trainer> t = std::move(*created);
  if (!control->adopt(t.get())) {
    (void)t->shutdown();
    return end(0, "", true);
  }
  self->send(tuner, trial_up_atom::value, launch.id);
  std::string error;
  bool interrupted = false;
  int64_t epoch = 0;
  // One epoch's report; the tuner's answer says whether to train on. It
  // answers at once; the bound only guards against a tuner that is gone
  // (its down message may not have reached us yet).
  auto report = [&](std::map<std::string, double> metrics) {
    error = missing_metric(launch.metric, launch.config.operator_name, metrics);
    if (!error.empty())
      return false;
    bool go_on = false;
    // Listed here, on the runner's thread: the tuner's is a scheduler thread.
    auto checkpoints = launch.config.checkpoint_dir.empty()
                           ? std::map<int64_t, std::string>()
                           : checkpoint::checkpoint_dirs(launch.config.checkpoint_dir);
    self->request(tuner, std::chrono::seconds(60), trial_report_atom::value, launch.id, epoch,
                  std::move(metrics), std::move(checkpoints))
        .receive([&](bool answer) { go_on = answer; },
                 [&](caf::error&) { interrupted = true; });
    return go_on;
  };
  bool go_on = true;
  if (!launch.restore_from.empty()) {
    if (status s = t->restore(launch.restore_from); !s) {
      error = s.with_context("restoring " + launch.restore_from).to_string();
    } else if (auto v = t->validate(); !v) {
      error = v.error().with_context("validating after restoring " + launch.restore_from).to_string();
    } else {
      // Where the restored group stands: a checkpoint of the last epoch (an
      // exploit's source that finished meanwhile) leaves nothing to train.
      epoch = v->epoch;
      std::optional<metrics_msg> trained;
      if (launch.report_restored)
        if (auto m = serialization::default_checkpoint_codec()->read_manifest(launch.restore_from))
          trained = epoch_from_manifest(m->metrics, epoch);
      if (trained)
        go_on = report(metrics_of(*trained, *v, 0));
      else if (launch.report_restored)  // the tuner read it just before: the file changed
        error = "the manifest of " + launch.restore_from + " no longer holds epoch " +
                std::to_string(epoch) + "'s metrics, which the sweep needs to report it";
    }
  }
  while (go_on && error.empty() && epoch < launch.max_epochs) {
    auto m = t->train();
    if (!m) {
      error = m.error().to_string();
      break;
    }
    if (m->preempted) {
      interrupted = true;
      break;
    }
    auto v = t->validate();
    if (!v) {
      error = v.error().to_string();
      break;
    }
    epoch = m->epoch;
    go_on = report(metrics_of(*m, *v, t->failures().size()));
  }
  control->release();
  auto restarts = static_cast<int32_t>(t->failures().size());
  // The trial's outcome is its training's: a group that fails to release
  // its slots is the head's concern (it frees them when the owner goes),
  // said here rather than turning a finished trial into a failed one.
  if (status down = t->shutdown(); !down)
    std::fprintf(stderr, "dtrain: trial %s: shutting its group down: %s\n", launch.id.c_str(),
                 down.to_string().c_str());
  end(restarts, error, interrupted);
}

} // namespace

trial_launcher trainer_launcher(cluster& c) {
  return [&c](caf::actor_system& sys, const caf::actor& tuner, const trial_launch& launch) {
    auto control = std::make_shared<trial_control>();
    trial_handle h;
    h.runner = sys.spawn<caf::detached>(run_trial, &c, launch, tuner, control);
    h.interrupt = [&sys, control] {
      // preempt() waits for the chief's answer: not on the caller's thread.
      sys.spawn<caf::detached>([control](caf::blocking_actor*) { control->interrupt(); });
    };
    return h;
  };
}

} // namespace dtrain::actors
