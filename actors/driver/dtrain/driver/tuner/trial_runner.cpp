#include "dtrain/driver/tuner/trial_runner.hpp"
#include "dtrain/checkpoint/checkpoint.hpp"
#include "dtrain/serialization/capnp_checkpoint.hpp"

#include <cstdio>
#include <memory>
#include <mutex>
#include <optional>

namespace dtrain::actors {

namespace {

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

// Ok when `metrics` holds the sweep's `metric`, else why not.
status missing_metric(const std::string& metric, const std::string& operator_name,
                           const std::map<std::string, double>& metrics) {
  if (metric.empty() || metrics.count(metric) != 0)
    return status::ok();
  std::string reported;
  for (const auto& [name, value] : metrics)
    reported += (reported.empty() ? "" : ", ") + name;
  return invalid_argument("the sweep's metric '" + metric + "' is not reported by operator '" +
                          operator_name + "' (it reports " + reported + ")");
}

// The tuner's runner: run_trial on a detached actor, its observations
// as messages to the tuner.
void run_for_tuner(caf::blocking_actor* self, cluster* c, trial_launch launch, caf::actor tuner,
                   std::shared_ptr<trial_control> control) {
  const std::string id = launch.id;
  trial_observer o;
  o.up = [&](trainer&) { self->send(tuner, trial_up_atom::value, id); };
  o.event = [&](const trainer_event& e) {
    self->send(tuner, trial_event_atom::value, id, e.epoch, e.kind, e.message);
  };
  // The tuner answers at once; the bound only guards against a tuner that
  // is gone (its down message may not have reached us yet).
  bool gone = false;
  o.report = [&](const trial_epoch& ep) {
    bool go_on = false;
    self->request(tuner, std::chrono::seconds(60), trial_report_atom::value, id, ep.epoch,
                  ep.metrics, ep.checkpoints)
        .receive([&](bool answer) { go_on = answer; }, [&](caf::error&) { gone = true; });
    return go_on;
  };
  trial_outcome out = run_trial(*c, std::move(launch), *control, o);
  // The trial's outcome is its training's: a group that fails to release
  // its slots is the head's concern (it frees them when the owner goes),
  // said here rather than turning a finished trial into a failed one.
  if (!out.shutdown)
    std::fprintf(stderr, "dtrain: trial %s: shutting its group down: %s\n", id.c_str(),
                 out.shutdown.to_string().c_str());
  const std::string error = out.error ? "" : out.error.to_string();
  self->send(tuner, trial_end_atom::value, id, out.restarts, error, out.interrupted || gone);
}

} // namespace

bool trial_control::adopt(trainer* t) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (interrupted_)
    return false;
  trainer_ = t;
  return true;
}

void trial_control::release() {
  std::lock_guard<std::mutex> lock(mutex_);
  trainer_ = nullptr;
}

bool trial_control::interrupted() {
  std::lock_guard<std::mutex> lock(mutex_);
  return interrupted_;
}

void trial_control::interrupt() {
  std::lock_guard<std::mutex> lock(mutex_);
  interrupted_ = true;
  if (trainer_ != nullptr)
    (void)trainer_->preempt();
}

namespace {

// One epoch's report to the observer; false: stop training (the report's
// answer, or `error` set).
bool report_epoch(const trial_launch& launch, const trial_observer& o, int64_t epoch,
                  const metrics_msg& train, const metrics_msg& validation, size_t restarts,
                  status& error) {
  trial_epoch ep;
  ep.epoch = epoch;
  ep.train = &train;
  ep.validation = &validation;
  ep.metrics = metrics_of(train, validation, restarts);
  error = missing_metric(launch.metric, launch.config.operator_name, ep.metrics);
  for (size_t i = 0; i < launch.other_metrics.size() && error; ++i)
    error = missing_metric(launch.other_metrics[i], launch.config.operator_name, ep.metrics);
  if (!error)
    return false;
  // Listed here, on the runner's thread: the tuner's is a scheduler thread.
  if (!launch.config.checkpoint_dir.empty())
    ep.checkpoints = checkpoint::checkpoint_dirs(launch.config.checkpoint_dir);
  return !o.report || o.report(ep);
}

// Restores launch.restore_from and validates; the epoch the group stands
// at, and whether to train on (a report of the restored epoch may say no).
bool restore(trainer& t, const trial_launch& launch, const trial_observer& o, int64_t& epoch,
             status& error) {
  if (status s = t.restore(launch.restore_from); !s) {
    error = s.with_context("restoring " + launch.restore_from);
    return false;
  }
  auto v = t.validate();
  if (!v) {
    error = v.error().with_context("validating after restoring " + launch.restore_from);
    return false;
  }
  // Where the restored group stands: a checkpoint of the last epoch (an
  // exploit's source that finished meanwhile) leaves nothing to train.
  epoch = v->epoch;
  if (o.restored)
    o.restored(*v);
  if (!launch.report_restored)
    return true;
  std::optional<metrics_msg> trained;
  if (auto m = serialization::default_checkpoint_codec()->read_manifest(launch.restore_from))
    trained = epoch_from_manifest(m->metrics, epoch);
  if (!trained) {  // the caller read it just before: the file changed
    error = corrupt_data("the manifest of " + launch.restore_from + " no longer holds epoch " +
                         std::to_string(epoch) + "'s metrics, which the sweep needs to report it");
    return false;
  }
  return report_epoch(launch, o, epoch, *trained, *v, 0, error);
}

} // namespace

trial_outcome run_trial(cluster& c, trial_launch launch, trial_control& control,
                        const trial_observer& o) {
  trial_outcome out;
  if (control.interrupted()) {
    out.interrupted = true;
    return out;
  }
  // The trainer calls it on this thread, inside its calls below (after the
  // template's own, if it has one).
  launch.config.on_event = [&o, previous = launch.config.on_event](const trainer_event& e) {
    if (previous)
      previous(e);
    if (o.event)
      o.event(e);
  };
  auto created = trainer::create(c, launch.config);
  if (!created) {
    out.error = created.error();
    return out;
  }
  std::unique_ptr<trainer> t = std::move(*created);
  if (!control.adopt(t.get())) {
    out.shutdown = t->shutdown();
    out.interrupted = true;
    return out;
  }
  if (o.up)
    o.up(*t);
  int64_t epoch = 0;
  bool go_on = launch.restore_from.empty() || restore(*t, launch, o, epoch, out.error);
  while (go_on && out.error && epoch < launch.max_epochs) {
    auto m = t->train();
    if (!m) {
      out.error = m.error();
      break;
    }
    if (o.trained)
      o.trained(*m);
    if (m->preempted) {
      out.interrupted = true;
      break;
    }
    auto v = t->validate();
    if (!v) {
      out.error = v.error();
      break;
    }
    epoch = m->epoch;
    go_on = report_epoch(launch, o, epoch, *m, *v, t->failures().size(), out.error);
  }
  control.release();
  out.restarts = static_cast<int32_t>(t->failures().size());
  out.shutdown = t->shutdown();
  return out;
}

trial_launcher trainer_launcher(cluster& c) {
  return [&c](caf::actor_system& sys, const caf::actor& tuner, const trial_launch& launch) {
    auto control = std::make_shared<trial_control>();
    trial_handle h;
    h.runner = sys.spawn<caf::detached>(run_for_tuner, &c, launch, tuner, control);
    h.interrupt = [&sys, control] {
      // preempt() waits for the chief's answer: not on the caller's thread.
      sys.spawn<caf::detached>([control](caf::blocking_actor*) { control->interrupt(); });
    };
    return h;
  };
}

} // namespace dtrain::actors
