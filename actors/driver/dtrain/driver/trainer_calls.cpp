// The calls a driver makes on a trainer's group: an epoch of training (with
// its checkpoint), validation, save and restore, each through recovery
// when the group fails; the model, its hashes; and preemption.
#include <cstring>
#include <future>
#include <mutex>
#include <string>
#include <vector>

#include "dtrain/cluster/errors.hpp"
#include "dtrain/core/check.hpp"
#include "dtrain/driver/trainer.hpp"
#include "dtrain/driver/trainer_ask.hpp"
#include "dtrain/serialization/capnp_checkpoint.hpp"

namespace dtrain::actors {

result<metrics_msg> trainer::train() {
  DTRAIN_RETURN_IF_ERROR(maybe_grow());
  ++epoch_;
  for (;;) {
    auto replicas = replicas_;
    auto capabilities = capabilities_;
    const auto timeout = config_.epoch_timeout;
    auto all = gather<metrics_msg>(
        timeout, "train",
        [=](caf::event_based_actor* self, size_t rank) {
          return self->request(replicas[rank], timeout, train_atom::value, capabilities[rank]);
        },
        [this] { poll_growth(); });
    if (!all) {
      if (stopped_ || trainer_detail::handling_of(all.error()) ==
                          trainer_detail::handling::return_it)
        return all.error();
      DTRAIN_RETURN_IF_ERROR(recover(all.error()));
      continue;
    }
    metrics_msg m = all->front();
    if (pause_asked_) {
      // The pause poll_growth() asked for (or the epoch's end, which came
      // first): the newcomers join here, and a paused epoch goes on.
      if (status grown = grow_live(); !grown)
        DTRAIN_RETURN_IF_ERROR(recover(grown));
      if (m.preempted && !user_preempted_)
        continue;
    }
    user_preempted_ = false;
    // A recovered group ran the epoch after the checkpoint it restored.
    recovered(m.epoch, m.epoch - 1);
    epoch_ = m.epoch;
    // Step or seconds periods: the replicas save asynchronously during
    // the epoch (and publish the save in flight at its end).
    const bool asynchronous =
        config_.checkpoint_every_steps > 0 || config_.checkpoint_every_seconds > 0;
    bool due = !asynchronous && config_.checkpoint_every > 0 &&
               m.epoch % config_.checkpoint_every == 0;
    if (config_.checkpoint_dir.empty() || !(m.preempted || due))
      return m;
    for (;;) {
      auto saved = ask_all<caf::ok_atom>(config_.epoch_timeout, "save to " + config_.checkpoint_dir,
                                         save_atom::value, config_.checkpoint_dir,
                                         static_cast<int32_t>(config_.checkpoint_keep));
      if (saved || stopped_)
        return saved ? result<metrics_msg>(m) : result<metrics_msg>(saved.error());
      DTRAIN_RETURN_IF_ERROR(recover(saved.error()));
      // A live recovery kept the trained epoch: save it again. A group
      // restored from the newest checkpoint (before this epoch) runs it
      // again.
      if (!last_recovery_live_)
        break;
    }
  }
}

result<metrics_msg> trainer::validate() {
  auto all = ask_with_recovery<metrics_msg>(config_.epoch_timeout, "validate", valid_atom::value);
  if (!all)
    return all.error();
  // Validation reports the epoch the (restored) model stands at.
  recovered(all->front().epoch + 1, all->front().epoch);
  epoch_ = all->front().epoch;
  return all->front();
}

status trainer::save(const std::string& path) {
  return ask_with_recovery<caf::ok_atom>(config_.epoch_timeout, "save to " + path, save_atom::value,
                                         path, static_cast<int32_t>(config_.checkpoint_keep))
      .to_status();
}

status trainer::restore(const std::string& path) {
  DTRAIN_RETURN_IF_ERROR(ask_with_recovery<caf::ok_atom>(config_.epoch_timeout,
                                                         "restore from " + path,
                                                         restore_atom::value, path)
                             .to_status());
  // The group is at the checkpoint's epoch now: what a failure in the next
  // one is reported with (events), before train() hears it from the replicas.
  if (auto m = serialization::default_checkpoint_codec()->read_manifest(path))
    epoch_ = m->epoch;
  return status::ok();
}

result<std::vector<float>> trainer::get_model() {
  if (stopped_ || replicas_.empty())
    return status(error_code::aborted, "get_model: the trainer has been shut down");
  auto to_floats = [](const std::vector<char>& raw) {
    std::vector<float> v(raw.size() / sizeof(float));
    std::memcpy(v.data(), raw.data(), v.size() * sizeof(float));
    return v;
  };
  if (config_.zero_stage >= 3) {
    // Each replica holds its own parts only: all gather them at once.
    auto all = ask_all<std::vector<char>>(config_.epoch_timeout, "get_model", params_atom::value);
    if (!all)
      return all.error();
    return to_floats(all->front());
  }
  caf::scoped_actor self{cluster_.system()};
  result<std::vector<float>> out{status(error_code::internal, "no reply")};
  self->request(replicas_[0], config_.epoch_timeout, params_atom::value, capabilities_[0])
      .receive([&](std::vector<char>& raw) { out = to_floats(raw); },
               [&](caf::error& e) { out = from_caf(e, "get_model from replica 0"); });
  return out;
}

result<std::vector<uint64_t>> trainer::parameter_hashes() {
  return ask_all<uint64_t>(config_.epoch_timeout, "parameter hash", hash_atom::value);
}

status trainer::preempt() {
  replica_actor chief;
  std::string capability;
  {
    std::lock_guard<std::mutex> lock(chief_mutex_);
    chief = chief_;
    capability = chief_capability_;
  }
  if (stopped_ || !chief)
    return status(error_code::aborted, "preempt: the trainer has been shut down");
  user_preempted_ = true;
  caf::scoped_actor self{cluster_.system()};
  status out;
  self->request(chief, std::chrono::seconds(10), preempt_atom::value, capability)
      .receive([](caf::ok_atom) {}, [&](caf::error& e) { out = from_caf(e, "preempt (replica 0)"); });
  return out;
}

std::future<result<metrics_msg>> trainer::train_async() {
  return std::async(std::launch::async, [this] { return train(); });
}

std::future<result<metrics_msg>> trainer::validate_async() {
  return std::async(std::launch::async, [this] { return validate(); });
}

} // namespace dtrain::actors
