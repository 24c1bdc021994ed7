// Live recovery (trainer_config::recovery "live"): after a failure the
// replicas that still answer keep their state, leave the failed step's
// collectives, and form a new generation without the lost ones; newcomers
// (a node back, free slots) join at a step boundary and receive the
// group's state from a survivor. No checkpoint is read.
#include <algorithm>
#include <chrono>
#include <string>
#include <thread>

#include "dtrain/cluster/errors.hpp"
#include "dtrain/core/check.hpp"
#include "dtrain/driver/trainer.hpp"
#include "dtrain/driver/trainer_ask.hpp"

namespace dtrain::actors {

namespace {

using clock_type = std::chrono::steady_clock;

// How long a replica's front may take to say it is there (it answers at
// once, even mid-epoch: a silent one is hung or gone).
constexpr std::chrono::milliseconds probe_timeout{1000};

double seconds_since(clock_type::time_point t) {
  return std::chrono::duration<double>(clock_type::now() - t).count();
}

std::string fixed(double v, int digits) {
  char text[32];
  std::snprintf(text, sizeof text, "%.*f", digits, v);
  return text;
}

} // namespace

bool trainer::live() const { return config_.recovery != "checkpoint"; }

std::vector<bool> trainer::probe_replicas(std::chrono::milliseconds timeout) {
  auto alive = std::make_shared<std::vector<int>>(replicas_.size(), -1);  // -1 unknown
  auto promise = std::make_shared<std::promise<void>>();
  auto future = promise->get_future();
  auto replicas = replicas_;
  auto capabilities = capabilities_;
  cluster_.system().spawn([=](caf::event_based_actor* self) -> caf::behavior {
    auto left = std::make_shared<size_t>(replicas.size());
    auto decide = [=](size_t rank, bool there) {
      if ((*alive)[rank] != -1)
        return;
      (*alive)[rank] = there ? 1 : 0;
      if (--*left == 0) {
        promise->set_value();
        self->quit();
      }
    };
    self->set_down_handler([=](caf::down_msg& dm) {
      for (size_t rank = 0; rank < replicas.size(); ++rank)
        if (replicas[rank].address() == dm.source)
          decide(rank, false);
    });
    for (size_t rank = 0; rank < replicas.size(); ++rank) {
      self->monitor(replicas[rank]);
      self->request(replicas[rank], timeout, status_atom::value, capabilities[rank])
          .then([=](int32_t) { decide(rank, true); }, [=](caf::error&) { decide(rank, false); });
    }
    if (replicas.empty()) {
      promise->set_value();
      self->quit();
    }
    return {[](int32_t) {}};
  });
  std::vector<bool> out(replicas_.size(), false);
  if (future.wait_for(timeout + std::chrono::seconds(2)) != std::future_status::ready)
    return out;  // the system is stuck: nobody counts as there
  for (size_t rank = 0; rank < out.size(); ++rank)
    out[rank] = (*alive)[rank] == 1;
  return out;
}

result<std::vector<assignment>> trainer::resize_placement(const std::vector<assignment>& keep,
                                                          int extra) {
  caf::scoped_actor self{cluster_.system()};
  result<std::vector<assignment>> out{status(error_code::timeout, "resize: no answer")};
  self->request(cluster_.head(), std::chrono::seconds(10), resize_atom::value, id_, keep,
                static_cast<int32_t>(extra), config_.use_gpu, owner_, cluster_.session())
      .receive([&](std::vector<assignment>& a) { out = std::move(a); },
               [&](caf::error& e) {
                 out = from_caf(e, "re-placing with " + std::to_string(extra) + " more replicas");
               });
  return out;
}

status trainer::recover_live(const status& cause) {
  const auto noticed = failures_.back().noticed;
  const std::vector<bool> alive = probe_replicas(probe_timeout);
  std::vector<size_t> survivors;
  for (size_t rank = 0; rank < alive.size(); ++rank)
    if (alive[rank])
      survivors.push_back(rank);
    else  // hung rather than gone: it must not come back into this group
      caf::anon_send_exit(replicas_[rank], caf::exit_reason::user_shutdown);
  if (survivors.empty()) {
    note("no replica survived (" + cause.message() + "): re-forming from the newest checkpoint");
    last_recovery_live_ = false;
    return reform();
  }
  // The survivors leave the failed step's collectives (they wait on the
  // lost ranks otherwise, a hung one until the collective timeout).
  for (size_t rank : survivors)
    caf::anon_send(replicas_[rank], interrupt_atom::value, capabilities_[rank],
                   "the group re-forms without a lost replica (" + cause.message() + ")");
  std::vector<assignment> keep;
  for (size_t rank : survivors)
    keep.push_back(placement_[rank]);
  const int have = static_cast<int>(survivors.size());
  const int needed = std::max(0, min_replicas() - have);
  auto deadline = clock_type::now() + config_.placement_timeout;
  result<std::vector<assignment>> placed = keep;
  for (;;) {
    // Replacements that are free now join at once; an elastic group does
    // not wait for them (poll_growth brings them in later).
    for (int extra = config_.num_replicas - have; extra >= needed; --extra)
      if ((placed = resize_placement(keep, extra)).is_ok())
        break;
    if (placed.is_ok() || needed == 0 || clock_type::now() >= deadline || stopped_)
      break;
    std::this_thread::sleep_for(std::chrono::milliseconds(250));
  }
  if (!placed.is_ok() && needed > 0)
    return placed.error().with_context("re-forming the group: " + std::to_string(have) +
                                       " replicas survive, at least " +
                                       std::to_string(min_replicas()) + " are needed");
  // A head that cannot be asked (restarting) does not stop the survivors.
  std::vector<assignment> next = placed.is_ok() ? *placed : keep;
  const int before = world_size();
  ++generation_;
  DTRAIN_RETURN_IF_ERROR(form_live(survivors, std::move(next)));
  const std::string size = std::to_string(world_size()) + " of " +
                           std::to_string(config_.num_replicas) + " replicas";
  if (world_size() < before)
    event("shrank", epoch_, "continuing with " + size + " (was " + std::to_string(before) +
                                ") from the survivors' memory, no checkpoint read");
  live_note_ = "running again with " + size + " (generation " + std::to_string(generation_) +
               ") live from the survivors' state, " + fixed(seconds_since(noticed), 3) +
               " s after the failure; the step in flight is trained again, no checkpoint read";
  return status::ok();
}

status trainer::form_live(const std::vector<size_t>& survivors, std::vector<assignment> placement) {
  const auto start = clock_type::now();
  const size_t world = placement.size();
  std::vector<replica_actor> replicas;
  std::vector<std::string> capabilities;
  std::vector<replica_spec> specs;
  for (size_t rank = 0; rank < world; ++rank) {
    DTRAIN_ASSIGN_OR_RETURN(replica_spec spec, spec_for(rank, world, placement[rank]));
    if (rank < survivors.size()) {
      spec.capability = capabilities_[survivors[rank]];
      replicas.push_back(replicas_[survivors[rank]]);
    } else {
      if (status equipped = equip_node(placement[rank]); !equipped)
        return equipped;
      auto replica =
          cluster_.spawn_replica(placement[rank], spec, owner_, store_, std::chrono::seconds(10));
      if (!replica)
        return replica.error().with_context("a replacement for rank " + std::to_string(rank));
      replicas.push_back(std::move(*replica));
    }
    capabilities.push_back(spec.capability);
    specs.push_back(std::move(spec));
  }
  replicas_ = replicas;
  capabilities_ = capabilities;
  placement_ = std::move(placement);
  const size_t kept = survivors.size();
  // Survivors build the new generation's communicator, newcomers set up;
  // all rendezvous together, so every one is asked before any answers.
  auto formed = gather<caf::ok_atom>(
      config_.collective_timeout + std::chrono::seconds(30),
      "forming generation " + std::to_string(generation_),
      [=](caf::event_based_actor* self, size_t rank) {
        return rank < kept
                   ? self->request(replicas[rank], config_.collective_timeout + std::chrono::seconds(30),
                                   reform_atom::value, capabilities[rank], specs[rank])
                   : self->request(replicas[rank], config_.collective_timeout + std::chrono::seconds(30),
                                   setup_atom::value, capabilities[rank]);
      });
  DTRAIN_RETURN_IF_ERROR(formed.to_status());
  auto synced = ask_all<std::vector<int64_t>>(config_.collective_timeout, "state transfer",
                                               sync_atom::value);
  DTRAIN_RETURN_IF_ERROR(synced.to_status());
  {
    std::lock_guard<std::mutex> lock(chief_mutex_);
    chief_ = replicas_.front();
    chief_capability_ = capabilities_.front();
  }
  const std::vector<int64_t>& s = synced->front();
  if (world > kept || (s.size() == 3 && s[1] > 0))
    event("transfer", epoch_,
          std::to_string(world - kept) + " replicas joined; " +
              (s[1] > 0 ? "rank " + std::to_string(s[0]) + " sent " +
                              fixed(static_cast<double>(s[1]) / (1 << 20), 1) + " MiB of state in " +
                              fixed(static_cast<double>(s[2]) / 1e6, 3) + " s"
                        : std::string("no state to move")) +
              "; generation " + std::to_string(generation_) + " formed in " +
              fixed(seconds_since(start), 3) + " s");
  if (user_preempted_)  // the old chief's request went with its group
    (void)preempt();
  return status::ok();
}

bool trainer::reserve_growth() {
  if (!live() || world_size() >= config_.num_replicas || !pending_growth_.empty())
    return false;
  if (clock_type::now() - last_growth_check_ < std::chrono::seconds(1))
    return false;
  last_growth_check_ = clock_type::now();
  auto placed = resize_placement(placement_, config_.num_replicas - world_size());
  for (int extra = config_.num_replicas - world_size() - 1; !placed && extra > 0; --extra)
    placed = resize_placement(placement_, extra);
  if (!placed)
    return false;  // no free slots yet
  pending_growth_ = std::move(*placed);
  note(std::to_string(pending_growth_.size() - placement_.size()) +
       " slots free; the group grows at its next step boundary");
  return true;
}

void trainer::poll_growth() {
  if (!reserve_growth())
    return;
  // The pause: the chief stops the epoch at its next check, the same step
  // on every replica (replica.hpp); train() forms the grown group there.
  replica_actor chief;
  std::string capability;
  {
    std::lock_guard<std::mutex> lock(chief_mutex_);
    chief = chief_;
    capability = chief_capability_;
  }
  if (chief)
    caf::anon_send(chief, preempt_atom::value, capability);
}

status trainer::grow_live() {
  std::vector<assignment> next = std::move(pending_growth_);
  pending_growth_.clear();
  const int before = world_size();
  std::vector<size_t> everyone(replicas_.size());
  for (size_t rank = 0; rank < everyone.size(); ++rank)
    everyone[rank] = rank;
  ++generation_;
  DTRAIN_RETURN_IF_ERROR(form_live(everyone, std::move(next)));
  event("grew", epoch_, "continuing with " + std::to_string(world_size()) + " of " +
                            std::to_string(config_.num_replicas) + " replicas (was " +
                            std::to_string(before) + "), the newcomers given the group's state");
  return status::ok();
}

} // namespace dtrain::actors
