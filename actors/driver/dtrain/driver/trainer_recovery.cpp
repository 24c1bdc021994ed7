// A trainer's group after a failure: what the failure calls for, the group
// formed again under a new generation from the newest checkpoint (fewer
// replicas when elastic), up to max_failures times; and an elastic group
// that grows back once slots are free.
#include <chrono>
#include <string>

#include "dtrain/core/check.hpp"
#include "dtrain/driver/trainer.hpp"
#include "dtrain/driver/trainer_ask.hpp"

namespace dtrain::actors {

namespace trainer_detail {

handling handling_of(const status& s) {
  switch (s.code()) {
    case error_code::aborted:
    case error_code::timeout:
    case error_code::unavailable:
    case error_code::io_error:
    case error_code::cuda_error:
    case error_code::internal:
      return handling::recover;
    case error_code::invalid_argument:
    case error_code::not_found:
    case error_code::corrupt_data:
    case error_code::shape_mismatch:
    case error_code::out_of_range:
      return handling::return_it;
    default:
      return handling::stop;
  }
}

} // namespace trainer_detail

namespace {

using clock_type = std::chrono::steady_clock;
using trainer_detail::handling;
using trainer_detail::handling_of;

} // namespace

// Tears the group down and forms it again under a new generation (as many
// replicas as fit, down to min_replicas, waiting for capacity up to
// placement_timeout), restoring the newest valid checkpoint.
status trainer::reform() {
  const int before = world_size();
  stop_replicas();
  release_slots();
  ++generation_;
  DTRAIN_RETURN_IF_ERROR(start(true).with_context("re-forming the group (generation " +
                                                  std::to_string(generation_) + ")"));
  const std::string size = std::to_string(world_size()) + " of " +
                           std::to_string(config_.num_replicas) + " replicas";
  if (world_size() < config_.num_replicas)
    note("continuing with " + size + " (min_replicas " + std::to_string(min_replicas()) + ")");
  if (world_size() < before)
    event("shrank", epoch_, "continuing with " + size + " (was " + std::to_string(before) + ")");
  else if (world_size() > before)
    event("grew", epoch_, "continuing with " + size + " (was " + std::to_string(before) + ")");
  if (config_.checkpoint_dir.empty())
    return status::ok();  // no checkpoints: the new group starts over
  status restored = ask_all<caf::ok_atom>(config_.epoch_timeout, "restore from " + config_.checkpoint_dir,
                                          restore_atom::value, config_.checkpoint_dir)
                        .to_status();
  if (restored.code() == error_code::not_found)
    return status::ok();  // nothing saved yet
  return restored;
}

status trainer::recover(status cause) {
  for (;;) {
    failures_.push_back({std::chrono::steady_clock::now(), cause.to_string()});
    const std::string count = "failure " + std::to_string(failures_.size());
    if (handling_of(cause) != handling::recover) {
      event("failure", epoch_, count + " (not retried): " + cause.to_string());
      status out = cause.with_context("trainer '" + config_.name + "' stops (not retried)");
      event("gave_up", epoch_, out.to_string());
      return out;
    }
    const std::string text =
        count + " of at most " + std::to_string(config_.max_failures) + ": " + cause.to_string();
    note(text);
    event("failure", epoch_, text);
    if (static_cast<int>(failures_.size()) > config_.max_failures) {
      status out = cause.with_context("trainer '" + config_.name + "' gives up after " +
                                      std::to_string(failures_.size()) + " failures (max_failures " +
                                      std::to_string(config_.max_failures) + ")");
      event("gave_up", epoch_, out.to_string());
      return out;
    }
    last_recovery_live_ = live();
    status reformed = live() ? recover_live(cause) : reform();
    if (reformed.is_ok())
      recovery_pending_ = true;
    else if (placement_failed_ && !stopped_)
      event("gave_up", epoch_, reformed.to_string());
    if (reformed.is_ok() || placement_failed_ || stopped_)
      return reformed;
    cause = reformed;  // the new group failed too: that is another failure
  }
}

// An elastic group below num_replicas grows back at an epoch boundary when
// the cluster has free slots again (checked at most once a second): it
// saves, re-forms with as many replicas as fit, and restores.
status trainer::maybe_grow() {
  if (live() && world_size() < config_.num_replicas) {
    // Between epochs: no pause to wait for.
    if (!reserve_growth())
      return status::ok();
    status grown = grow_live();
    return grown.is_ok() ? grown : recover(grown);
  }
  if (world_size() >= config_.num_replicas || config_.checkpoint_dir.empty())
    return status::ok();
  if (clock_type::now() - last_growth_check_ < std::chrono::seconds(1))
    return status::ok();
  last_growth_check_ = clock_type::now();
  int free = 0;
  {
    caf::scoped_actor self{cluster_.system()};
    self->request(cluster_.head(), std::chrono::seconds(5), status_atom::value, cluster_.session())
        .receive(
            [&](cluster_status& st) {
              for (size_t i = 0; i < st.nodes.size(); ++i)
                free += config_.use_gpu ? st.nodes[i].gpus - st.gpus_used[i]
                                        : st.nodes[i].cpu_slots - st.slots_used[i];
            },
            [](caf::error&) {});
  }
  if (free <= 0)
    return status::ok();
  note(std::to_string(free) + " free slots; growing from " + std::to_string(world_size()) +
       " to up to " + std::to_string(config_.num_replicas) + " replicas");
  DTRAIN_RETURN_IF_ERROR(save(config_.checkpoint_dir));
  status grown = reform();
  return grown.is_ok() ? grown : recover(grown);
}

} // namespace dtrain::actors
