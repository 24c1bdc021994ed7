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

// A sharded group (ZeRO) cannot: the lost replica's shard of the optimizer
// state is nowhere else.
bool trainer::live() const { return config_.recovery != "checkpoint" && config_.zero_stage == 0; }

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
  // Only the replacements the group cannot go on without are waited for
  // here; the others are prepared in the background (poll_growth) and
  // join at a step boundary.
  const int needed = std::max(0, min_replicas() - have);
  // Newcomers prepared for the old group start over (the resize below
  // gives their slots back).
  drop_newcomers(false);
  auto deadline = clock_type::now() + config_.placement_timeout;
  result<std::vector<assignment>> placed = keep;
  for (;;) {
    placed = resize_placement(keep, needed);
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
  std::vector<member> members;
  for (size_t i = 0; i < next.size(); ++i)
    if (i < survivors.size())
      members.push_back({next[i], replicas_[survivors[i]], capabilities_[survivors[i]]});
    else
      members.push_back({next[i], {}, {}});
  const int before = world_size();
  ++generation_;
  DTRAIN_RETURN_IF_ERROR(form_live(std::move(members)));
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

status trainer::form_live(std::vector<member> members) {
  const auto start = clock_type::now();
  const size_t world = members.size();
  std::vector<replica_spec> specs;
  std::vector<bool> moves;  // set up already: reform, else setup
  for (size_t rank = 0; rank < world; ++rank) {
    member& m = members[rank];
    DTRAIN_ASSIGN_OR_RETURN(replica_spec spec, spec_for(rank, world, m.where));
    moves.push_back(static_cast<bool>(m.actor));
    if (m.actor) {
      spec.capability = m.capability;
    } else {
      if (status equipped = equip_node(m.where); !equipped)
        return equipped;
      auto replica =
          cluster_.spawn_replica(m.where, spec, owner_, store_, std::chrono::seconds(10));
      if (!replica)
        return replica.error().with_context("a replacement for rank " + std::to_string(rank));
      m.actor = std::move(*replica);
      m.capability = spec.capability;
    }
    specs.push_back(std::move(spec));
  }
  replicas_.clear();
  capabilities_.clear();
  placement_.clear();
  for (member& m : members) {
    replicas_.push_back(m.actor);
    capabilities_.push_back(m.capability);
    placement_.push_back(m.where);
  }
  auto replicas = replicas_;
  auto capabilities = capabilities_;
  const auto timeout = config_.collective_timeout + std::chrono::seconds(30);
  // Those set up move into the new generation, the others set up in it;
  // all rendezvous together, so every one is asked before any answers.
  auto formed = gather<caf::ok_atom>(
      timeout, "forming generation " + std::to_string(generation_),
      [=](caf::event_based_actor* self, size_t rank) {
        return moves[rank] ? self->request(replicas[rank], timeout, reform_atom::value,
                                           capabilities[rank], specs[rank])
                           : self->request(replicas[rank], timeout, setup_atom::value,
                                           capabilities[rank]);
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
  if (s.size() == 3 && s[1] > 0)
    event("transfer", epoch_,
          "rank " + std::to_string(s[0]) + " sent " +
              fixed(static_cast<double>(s[1]) / (1 << 20), 1) + " MiB of state in " +
              fixed(static_cast<double>(s[2]) / 1e6, 3) + " s; generation " +
              std::to_string(generation_) + " (" + std::to_string(world) +
              " replicas) formed in " + fixed(seconds_since(start), 3) + " s");
  if (user_preempted_)  // the old chief's request went with its group
    (void)preempt();
  return status::ok();
}

void trainer::prepare_newcomers(const std::vector<assignment>& placed) {
  const auto timeout = config_.collective_timeout + std::chrono::seconds(30);
  for (size_t i = placement_.size(); i < placed.size(); ++i) {
    // Alone in a group of its own (a negative generation no real group
    // uses): it loads its data and builds its model while the group
    // trains, then moves into the group's next generation like a survivor.
    auto spec = spec_for(0, 1, placed[i]);
    if (!spec)
      continue;
    spec->generation = --solo_generation_;
    if (!equip_node(placed[i]))
      continue;
    auto replica = cluster_.spawn_replica(placed[i], *spec, owner_, store_, std::chrono::seconds(10));
    if (!replica)
      continue;
    auto ready = std::make_shared<std::future<status>>(std::async(
        std::launch::async, [&sys = cluster_.system(), r = *replica, c = spec->capability, timeout] {
          caf::scoped_actor self{sys};
          status out(error_code::timeout, "a newcomer's setup: no answer");
          self->request(r, timeout, setup_atom::value, c)
              .receive([&](caf::ok_atom) { out = status::ok(); },
                       [&](caf::error& e) { out = from_caf(e, "a newcomer's setup"); });
          return out;
        }));
    joining_.push_back({member{placed[i], *replica, spec->capability}, std::move(ready)});
  }
  if (joining_.empty())  // none could start: give the slots back
    (void)resize_placement(placement_, 0);
}

void trainer::drop_newcomers(bool give_back) {
  for (auto& n : joining_)
    caf::anon_send_exit(n.m.actor, caf::exit_reason::user_shutdown);
  if (give_back && !joining_.empty())
    (void)resize_placement(placement_, 0);
  joining_.clear();
  pause_asked_ = false;
}

void trainer::reserve_growth() {
  if (!live() || world_size() >= config_.num_replicas || !joining_.empty())
    return;
  if (clock_type::now() - last_growth_check_ < std::chrono::seconds(1))
    return;
  last_growth_check_ = clock_type::now();
  auto placed = resize_placement(placement_, config_.num_replicas - world_size());
  for (int extra = config_.num_replicas - world_size() - 1; !placed && extra > 0; --extra)
    placed = resize_placement(placement_, extra);
  if (!placed)
    return;  // no free slots yet
  note(std::to_string(placed->size() - placement_.size()) +
       " slots free: newcomers set up, then join at a step boundary");
  prepare_newcomers(*placed);
}

bool trainer::newcomers_ready() {
  if (joining_.empty())
    return false;
  for (auto& n : joining_)
    if (n.ready->wait_for(std::chrono::seconds(0)) != std::future_status::ready)
      return false;
  bool failed = false;
  for (auto& n : joining_)
    if (status s = n.ready->get(); !s) {
      note("a newcomer failed to set up (" + s.message() + "); trying again later");
      failed = true;
    }
  if (failed)
    drop_newcomers();
  return !failed;
}

void trainer::poll_growth() {
  reserve_growth();
  if (pause_asked_ || !newcomers_ready())
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
  pause_asked_ = true;
}

status trainer::grow_live() {
  const int before = world_size();
  std::vector<member> members;
  for (size_t rank = 0; rank < replicas_.size(); ++rank)
    members.push_back({placement_[rank], replicas_[rank], capabilities_[rank]});
  for (auto& n : joining_)
    members.push_back(n.m);
  joining_.clear();
  pause_asked_ = false;
  ++generation_;
  DTRAIN_RETURN_IF_ERROR(form_live(std::move(members)));
  event("grew", epoch_, "continuing with " + std::to_string(world_size()) + " of " +
                            std::to_string(config_.num_replicas) + " replicas (was " +
                            std::to_string(before) + "), the newcomers given the group's state");
  return status::ok();
}

} // namespace dtrain::actors
