// A trainer's group on the cluster: placed all or nothing (down to
// min_replicas, waiting for capacity when it may come), the nodes equipped
// with the trainer's plugins, one replica spawned per slot, set up through
// the rendezvous, and stopped again with its slots given back.
#include <algorithm>
#include <chrono>
#include <mutex>
#include <string>
#include <thread>

#include "dtrain/cluster/errors.hpp"
#include "dtrain/cluster/rendezvous_actor.hpp"
#include "dtrain/core/check.hpp"
#include "dtrain/driver/trainer.hpp"
#include "dtrain/driver/trainer_ask.hpp"
#include "dtrain/security/certificates.hpp"

namespace dtrain::actors {

namespace {

using clock_type = std::chrono::steady_clock;

// The actor replicas monitor: when it goes, they go.
caf::behavior owner_impl(caf::event_based_actor*) {
  return {[](int32_t) {}};
}

// Where the replicas send their progress (on_progress with
// progress_seconds), or none.
caf::actor spawn_progress_sink(caf::actor_system& sys, const trainer_config& config) {
  if (!config.on_progress || !(config.progress_seconds > 0))
    return {};
  // Detached: the callback may block on a terminal (Ctrl-S), which must
  // not hold a scheduler thread.
  return sys.spawn<caf::detached>(
      [report = config.on_progress, all = config.progress_all_ranks]() -> caf::behavior {
        return {[=](progress_atom, const progress_msg& m) {
          if (all || m.rank == 0)
            report(m);
        }};
      });
}

// What every replica of a group with `config` is told alike.
replica_spec spec_of(const trainer_config& config) {
  replica_spec spec;
  spec.backend = config.backend;
  spec.timeout_ms = config.collective_timeout.count();
  spec.operator_name = config.operator_name;
  spec.config = config.config;
  spec.global_batch_size = config.global_batch_size;
  spec.aggregation_frequency = config.aggregation_frequency;
  spec.bucket_bytes = config.bucket_bytes;
  spec.zero_stage = config.zero_stage;
  spec.clip_grad_norm = config.clip_grad_norm;
  spec.average_training_metrics = config.average_training_metrics;
  spec.compression = config.compression;
  spec.precision = config.precision;
  spec.cpus = config.cpus_per_replica;
  spec.seed = config.seed;
  spec.progress_seconds = config.progress_seconds;
  spec.checkpoint_root = config.checkpoint_dir;
  spec.checkpoint_keep = config.checkpoint_keep;
  spec.checkpoint_every_steps = config.checkpoint_every_steps;
  spec.checkpoint_every_seconds = config.checkpoint_every_seconds;
  return spec;
}

// Tells the head that `node` did not answer (bounded; its answer does not
// matter: the next placement says whether it still counts).
void tell_unreachable(cluster& c, int node) {
  caf::scoped_actor self{c.system()};
  self->request(c.head(), std::chrono::seconds(5), unreach_atom::value, static_cast<int32_t>(node),
                c.session())
      .receive([](caf::ok_atom) {}, [](caf::error&) {});
}

} // namespace

int trainer::min_replicas() const {
  int m = config_.min_replicas > 0 ? config_.min_replicas : config_.num_replicas;
  return std::min(m, config_.num_replicas);
}

// One all-or-nothing request for n replicas (replacing what the trainer
// holds): unavailable while busy, invalid_argument when the cluster cannot
// hold n at all.
status trainer::try_place(int n) {
  caf::scoped_actor self{cluster_.system()};
  status out;
  self->request(cluster_.head(), std::chrono::seconds(10), place_atom::value, id_,
                static_cast<int32_t>(n), config_.use_gpu, owner_, cluster_.session())
      .receive([&](std::vector<assignment>& a) { placement_ = std::move(a); },
               [&](caf::error& e) { out = from_caf(e, "placing " + std::to_string(n) + " replicas"); });
  return out;
}

// Places the group: num_replicas, or as few as min_replicas when fewer fit.
// At creation a group the cluster can never hold fails at once; when
// re-forming after a failure, the missing capacity may come back (a node
// restarting), so it waits for it up to placement_timeout, saying why.
status trainer::place(bool recovering) {
  auto deadline = clock_type::now() + config_.placement_timeout;
  std::string last_reason;
  for (;;) {
    status out;
    for (int n = config_.num_replicas; n >= min_replicas(); --n) {
      out = try_place(n);
      if (out.is_ok() || (out.code() != error_code::unavailable &&
                          out.code() != error_code::invalid_argument))
        return out;
    }
    const bool can_wait = out.code() == error_code::unavailable || recovering;
    if (!can_wait)
      return out;
    if (clock_type::now() >= deadline || stopped_)
      return status(error_code::timeout, out.message() + " (waited " +
                                             std::to_string(config_.placement_timeout.count()) +
                                             " ms for capacity)");
    if (out.message() != last_reason) {
      note("waiting for capacity: " + out.message());
      last_reason = out.message();
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
  }
}

// Ships the trainer's plugins to the node process of `a` once (a node
// that restarted is another process: it gets them again).
status trainer::equip_node(const assignment& a) {
  if (plugins_.empty() || a.info.address.empty())
    return status::ok();
  const std::string key = a.info.address + " " + std::to_string(a.info.pid);
  if (equipped_nodes_.count(key) != 0)
    return status::ok();
  const auto timeout = std::chrono::milliseconds(10000);
  auto node = cluster_.node_of(a, timeout);
  if (!node)
    return node.error();
  // A plain cluster: the same-user secret; a TLS cluster: an identity
  // proof with this driver's client certificate.
  auto sent =
      ensure_plugins(cluster_.system(), *node, a, plugins_, cluster_.client_files(), timeout);
  if (!sent)
    return sent.error();
  plugins_sent_ += *sent;
  equipped_nodes_.insert(key);
  return status::ok();
}

result<replica_spec> trainer::spec_for(size_t rank, size_t world, const assignment& a) const {
  replica_spec spec = spec_of(config_);
  spec.trainer = id_;
  spec.generation = generation_;
  spec.rank = static_cast<int32_t>(rank);
  spec.world_size = static_cast<int32_t>(world);
  spec.local_rank = a.local_rank;
  spec.node_rank = a.node;
  spec.host = a.info.host_id.empty() ? a.info.host : a.info.host_id;
  if (!a.info.address.empty()) {
    DTRAIN_ASSIGN_OR_RETURN(auto hp, parse_address(a.info.address));
    spec.bind_address = hp.first;  // the node's address: reachable by its peers
  }
  spec.gpu = a.gpu;
  spec.plugins = plugin_hashes_;
  // A secret of this replica's own: the node that hosts it learns
  // nothing that opens the trainer's other replicas, or the next group's.
  spec.capability = security::random_hex(32);
  // Every rank reports to the sink; it keeps the chief's (whichever rank
  // 0 is after a live recovery) unless progress_all_ranks.
  spec.progress_sink = progress_sink_;
  return spec;
}

status trainer::spawn_all() {
  for (size_t rank = 0; rank < placement_.size(); ++rank) {
    const assignment& a = placement_[rank];
    if (status equipped = equip_node(a); !equipped) {
      // A node that does not answer is treated like one that cannot take
      // a replica; a refusal (credential, ABI, loader) is the answer.
      const auto c = equipped.code();
      if (c == error_code::timeout || c == error_code::unavailable || c == error_code::aborted)
        unreachable_node_ = a.node;
      return equipped;
    }
    DTRAIN_ASSIGN_OR_RETURN(replica_spec spec, spec_for(rank, placement_.size(), a));
    auto replica = cluster_.spawn_replica(a, spec, owner_, store_, std::chrono::seconds(10));
    if (!replica) {
      unreachable_node_ = a.node;
      return replica.error();
    }
    replicas_.push_back(std::move(*replica));
    capabilities_.push_back(std::move(spec.capability));
  }
  return status::ok();
}

status trainer::start(bool recovering) {
  auto& sys = cluster_.system();
  if (!owner_)
    owner_ = sys.spawn(owner_impl);
  if (!store_)
    store_ = spawn_store(sys);
  if (!progress_sink_)
    progress_sink_ = spawn_progress_sink(sys, config_);
  auto deadline = clock_type::now() + config_.placement_timeout;
  for (;;) {
    replicas_.clear();
    capabilities_.clear();
    unreachable_node_ = -1;
    placement_failed_ = false;
    if (status placed = place(recovering); !placed) {
      placement_failed_ = true;
      return placed;
    }
    status spawned = spawn_all();
    if (spawned)
      break;
    // A node the head still lists may be dead (it has not noticed yet):
    // tell it, give the slots back, and place again without that node.
    if (unreachable_node_ < 0 || clock_type::now() >= deadline)
      return spawned;
    note(spawned.message() + "; placing again without node " +
         std::to_string(unreachable_node_));
    stop_replicas();
    tell_unreachable(cluster_, unreachable_node_);
    release_slots();
  }
  // Setup runs the rendezvous: every replica must be asked before any answers.
  auto ready = ask_all<caf::ok_atom>(config_.collective_timeout + std::chrono::seconds(30),
                                     "setup", setup_atom::value);
  if (ready) {
    std::lock_guard<std::mutex> lock(chief_mutex_);
    chief_ = replicas_.front();
    chief_capability_ = capabilities_.front();
  }
  return ready.to_status();
}

void trainer::stop_replicas() {
  {
    std::lock_guard<std::mutex> lock(chief_mutex_);
    chief_ = nullptr;
    chief_capability_.clear();
  }
  caf::scoped_actor self{cluster_.system()};
  for (auto& r : replicas_) {
    self->monitor(r);
    caf::anon_send_exit(r, caf::exit_reason::user_shutdown);
  }
  // Wait (bounded) until they are gone, so their slots are really free.
  for (size_t i = 0; i < replicas_.size(); ++i)
    self->receive([](caf::down_msg&) {}, caf::after(std::chrono::seconds(5)) >> [] {});
  replicas_.clear();
  capabilities_.clear();
}

void trainer::release_slots() {
  caf::scoped_actor self{cluster_.system()};
  self->request(cluster_.head(), std::chrono::seconds(5), release_atom::value, id_, owner_,
                cluster_.session())
      .receive([](caf::ok_atom) {}, [](caf::error&) {});
}

} // namespace dtrain::actors
