#include "dtrain/driver/trainer.hpp"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstring>
#include <thread>

#include "dtrain/cluster/errors.hpp"
#include "dtrain/core/check.hpp"
#include "dtrain/core/net.hpp"
#include "dtrain/security/certificates.hpp"
#include "dtrain/serialization/capnp_checkpoint.hpp"
#include "dtrain/tensor/precision.hpp"
#include "dtrain/cluster/rendezvous_actor.hpp"

namespace dtrain::actors {

namespace {

using clock_type = std::chrono::steady_clock;

// The actor replicas monitor: when it goes, they go.
caf::behavior owner_impl(caf::event_based_actor*) {
  return {[](int32_t) {}};
}

} // namespace

std::string make_trainer_id(const std::string& name, const std::string& host, int64_t pid) {
  static std::atomic<int> counter{0};
  return name + "-" + host + "-" + std::to_string(pid) + "-" + security::random_hex(8) + "-" +
         std::to_string(counter++);
}

trainer_config trainer_config_from(const experiments::experiment& e) {
  trainer_config t;
  t.name = e.name;
  t.operator_name = e.operator_name;
  t.plugins = e.plugins;
  t.config = e.hyperparameters;
  t.num_replicas = e.slots_per_trial;
  t.min_replicas = e.min_slots_per_trial;
  t.cpus_per_replica = e.cpus_per_replica;
  t.use_gpu = e.use_gpu;
  t.backend = e.backend;
  t.global_batch_size = e.global_batch_size;
  t.aggregation_frequency = e.aggregation_frequency;
  t.average_training_metrics = e.average_training_metrics;
  t.compression = e.gradient_compression;
  t.precision = e.precision;
  t.bucket_bytes = static_cast<int64_t>(e.bucket_cap_mb * (1 << 20));
  t.seed = e.seed;
  t.max_failures = e.max_failures;
  t.checkpoint_dir = e.checkpoint_dir;
  t.checkpoint_keep = e.checkpoint_keep;
  return t;
}

result<std::unique_ptr<trainer>> trainer::create(cluster& c, const trainer_config& config) {
  if (config.num_replicas < 1)
    return invalid_argument("trainer '" + config.name + "': num_replicas must be >= 1");
  if (config.cpus_per_replica < 0)
    return invalid_argument("trainer '" + config.name + "': cpus_per_replica must be >= 0, got " +
                            std::to_string(config.cpus_per_replica));
  if (config.bucket_bytes < 0 || (config.bucket_bytes > 0 && config.bucket_bytes < 4))
    return invalid_argument("trainer '" + config.name + "': bucket_bytes must be 0 (the default) " +
                            "or at least 4 (one float), got " + std::to_string(config.bucket_bytes));
  if (config.operator_name.empty())
    return invalid_argument("trainer '" + config.name + "': no training operator named");
  if (auto p = parse_precision(config.precision); !p.is_ok())
    return invalid_argument("trainer '" + config.name + "': precision: " + p.error().message());
  std::unique_ptr<trainer> t(new trainer(c, config));
  t->id_ = make_trainer_id(config.name, net::host_name(), getpid());
  auto plugins = prepare_plugins(config.plugins);
  if (!plugins)
    return plugins.error().with_context("trainer '" + config.name + "'");
  t->plugins_ = std::move(*plugins);
  for (const auto& p : t->plugins_)
    t->plugin_hashes_.push_back(p.hash);
  auto start = clock_type::now();
  status started = t->start(false);
  if (!started) {
    (void)t->shutdown();
    return started.with_context("trainer '" + config.name + "'");
  }
  t->startup_seconds_ = std::chrono::duration<double>(clock_type::now() - start).count();
  return t;
}

trainer::~trainer() { (void)shutdown(); }

void trainer::note(const std::string& text) const {
  const std::string line = "dtrain: trainer " + config_.name + ": " + text;
  if (config_.on_note) {
    config_.on_note(line);
    return;
  }
  std::fprintf(stderr, "%s\n", line.c_str());
}

void trainer::event(const char* kind, int64_t epoch, const std::string& message) const {
  if (config_.on_event)
    config_.on_event(trainer_event{kind, epoch, message});
}

void trainer::recovered(int64_t epoch, int64_t restored_epoch) {
  if (!recovery_pending_)
    return;
  recovery_pending_ = false;
  event("recovered", epoch,
        "running again with " + std::to_string(world_size()) + " of " +
            std::to_string(config_.num_replicas) + " replicas (generation " +
            std::to_string(generation_) + ") " +
            (restored_epoch > 0 ? "from the checkpoint of epoch " + std::to_string(restored_epoch)
                                : std::string("from the start")));
}

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
    replica_spec spec;
    spec.trainer = id_;
    spec.generation = generation_;
    spec.rank = static_cast<int32_t>(rank);
    spec.world_size = static_cast<int32_t>(placement_.size());
    spec.local_rank = a.local_rank;
    spec.node_rank = a.node;
    spec.host = a.info.host_id.empty() ? a.info.host : a.info.host_id;
    if (!a.info.address.empty()) {
      DTRAIN_ASSIGN_OR_RETURN(auto hp, parse_address(a.info.address));
      spec.bind_address = hp.first;  // the node's address: reachable by its peers
    }
    spec.backend = config_.backend;
    spec.gpu = a.gpu;
    spec.timeout_ms = config_.collective_timeout.count();
    spec.operator_name = config_.operator_name;
    spec.plugins = plugin_hashes_;
    spec.config = config_.config;
    spec.global_batch_size = config_.global_batch_size;
    spec.aggregation_frequency = config_.aggregation_frequency;
    spec.bucket_bytes = config_.bucket_bytes;
    spec.average_training_metrics = config_.average_training_metrics;
    spec.compression = config_.compression;
    spec.precision = config_.precision;
    spec.cpus = config_.cpus_per_replica;
    spec.seed = config_.seed;
    spec.progress_seconds = config_.progress_seconds;
    // A secret of this replica's own: the node that hosts it learns
    // nothing that opens the trainer's other replicas, or the next group's.
    spec.capability = security::random_hex(32);
    if (progress_sink_ && (rank == 0 || config_.progress_all_ranks))
      spec.progress_sink = progress_sink_;
    else if (progress_sink_)
      spec.progress_seconds = 0;  // the chief's progress stands for the group
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
  if (!progress_sink_ && config_.on_progress && config_.progress_seconds > 0)
    // Detached: the callback may block on a terminal (Ctrl-S), which must
    // not hold a scheduler thread.
    progress_sink_ = sys.spawn<caf::detached>([report = config_.on_progress]() -> caf::behavior {
      return {[=](progress_atom, const progress_msg& m) { report(m); }};
    });
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
    caf::scoped_actor self{sys};
    self->request(cluster_.head(), std::chrono::seconds(5), unreach_atom::value,
                  static_cast<int32_t>(unreachable_node_), cluster_.session())
        .receive([](caf::ok_atom) {}, [](caf::error&) {});
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

namespace {

template <class Reply>
struct gathering {
  std::vector<Reply> replies;
  std::vector<bool> have;
  size_t left = 0;
  bool done = false;
};

} // namespace

// Asks every replica at once from a collector actor that also monitors
// them: a replica that dies fails the whole request at once (CAF would
// leave it waiting for its timeout), naming the replica, its node and why.
// Replica i gets `atom`, its own capability, then `args`.
template <class Reply, class Atom, class... Ts>
result<std::vector<Reply>> trainer::ask_all(std::chrono::milliseconds timeout,
                                            const std::string& what, Atom atom, Ts... args) {
  if (stopped_)
    return status(error_code::aborted, what + ": the trainer has been shut down");
  if (replicas_.empty())
    return status(error_code::aborted,
                  what + ": the trainer has no replicas (re-forming its group failed" +
                      (failures_.empty() ? std::string(")") : "; last failure: " + failures_.back().cause + ")"));
  using outcome = result<std::vector<Reply>>;
  auto promise = std::make_shared<std::promise<outcome>>();
  auto future = promise->get_future();
  auto replicas = replicas_;
  auto capabilities = capabilities_;
  auto placement = placement_;
  auto who = [placement](size_t rank) {
    return "replica " + std::to_string(rank) + " (node " + std::to_string(placement[rank].node) +
           ", " + placement[rank].info.host + ")";
  };
  cluster_.system().spawn([=](caf::event_based_actor* self) -> caf::behavior {
    auto st = std::make_shared<gathering<Reply>>();
    st->replies.resize(replicas.size());
    st->have.assign(replicas.size(), false);
    st->left = replicas.size();
    auto finish = [=](outcome o) {
      if (st->done)
        return;
      st->done = true;
      promise->set_value(std::move(o));
      self->quit();
    };
    self->set_down_handler([=](caf::down_msg& dm) {
      for (size_t rank = 0; rank < replicas.size(); ++rank)
        if (replicas[rank].address() == dm.source && !st->have[rank])
          finish(status(error_code::aborted, what + ": " + who(rank) + " is gone (" +
                                                 caf::to_string(dm.reason) + ")"));
    });
    for (size_t rank = 0; rank < replicas.size(); ++rank) {
      self->monitor(replicas[rank]);
      self->request(replicas[rank], timeout, atom, capabilities[rank], args...)
          .then(
              [=](Reply& reply) {
                st->replies[rank] = std::move(reply);
                st->have[rank] = true;
                if (--st->left == 0)
                  finish(std::move(st->replies));
              },
              [=](caf::error& e) { finish(from_caf(e, what + " on " + who(rank))); });
    }
    return {[](int32_t) {}};
  });
  if (future.wait_for(timeout + std::chrono::seconds(5)) != std::future_status::ready)
    return status(error_code::timeout, what + ": no answer within " +
                                           std::to_string(timeout.count()) + " ms");
  return future.get();
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

namespace {

// What a failed request to the group calls for.
enum class handling {
  recover,    // the group failed (a replica or node gone, a hung peer, a
              // collective or request timeout): form a new one
  return_it,  // the request cannot be done (a path without a checkpoint, a
              // corrupt one): the caller's error, the group is fine
  stop,       // it would come back the same (a non-finite loss, a model that
              // does not fit): the trainer stops with this cause
};

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
    status reformed = reform();
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

// ask_all, and after a failure of the group, recovery and the same request
// again (on the new group), until it succeeds or recovery gives up. A bad
// request (a path without a checkpoint, a corrupt one) is the caller's
// error, not a failure of the group: it is returned as it is.
template <class Reply, class Atom, class... Ts>
result<std::vector<Reply>> trainer::ask_with_recovery(std::chrono::milliseconds timeout,
                                                      const std::string& what, Atom atom,
                                                      Ts... args) {
  for (;;) {
    auto all = ask_all<Reply>(timeout, what, atom, args...);
    if (all || stopped_ || handling_of(all.error()) == handling::return_it)
      return all;
    DTRAIN_RETURN_IF_ERROR(recover(all.error()));
  }
}

result<metrics_msg> trainer::train() {
  DTRAIN_RETURN_IF_ERROR(maybe_grow());
  ++epoch_;
  for (;;) {
    auto all = ask_with_recovery<metrics_msg>(config_.epoch_timeout, "train", train_atom::value);
    if (!all)
      return all.error();
    metrics_msg m = all->front();
    // A recovered group ran the epoch after the checkpoint it restored.
    recovered(m.epoch, m.epoch - 1);
    epoch_ = m.epoch;
    bool due = config_.checkpoint_every > 0 && m.epoch % config_.checkpoint_every == 0;
    if (config_.checkpoint_dir.empty() || !(m.preempted || due))
      return m;
    auto saved = ask_all<caf::ok_atom>(config_.epoch_timeout, "save to " + config_.checkpoint_dir,
                                       save_atom::value, config_.checkpoint_dir,
                                       static_cast<int32_t>(config_.checkpoint_keep));
    if (saved || stopped_)
      return saved ? result<metrics_msg>(m) : result<metrics_msg>(saved.error());
    // The new group restores the newest checkpoint, before this epoch:
    // the epoch runs again.
    DTRAIN_RETURN_IF_ERROR(recover(saved.error()));
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
  caf::scoped_actor self{cluster_.system()};
  result<std::vector<float>> out{status(error_code::internal, "no reply")};
  self->request(replicas_[0], config_.epoch_timeout, params_atom::value, capabilities_[0])
      .receive(
          [&](std::vector<char>& raw) {
            std::vector<float> v(raw.size() / sizeof(float));
            std::memcpy(v.data(), raw.data(), v.size() * sizeof(float));
            out = std::move(v);
          },
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

status trainer::shutdown() {
  if (stopped_.exchange(true))
    return status::ok();
  stop_replicas();
  if (owner_)
    caf::anon_send_exit(owner_, caf::exit_reason::user_shutdown);
  if (store_)
    caf::anon_send_exit(store_, caf::exit_reason::user_shutdown);
  if (progress_sink_)
    caf::anon_send_exit(progress_sink_, caf::exit_reason::user_shutdown);
  status released;
  if (cluster_.head()) {
    caf::scoped_actor self{cluster_.system()};
    self->request(cluster_.head(), std::chrono::seconds(5), release_atom::value, id_, owner_,
                  cluster_.session())
        .receive([](caf::ok_atom) {}, [&](caf::error& e) { released = from_caf(e, "releasing slots"); });
  }
  owner_ = nullptr;
  store_ = nullptr;
  progress_sink_ = nullptr;
  return released;
}

std::map<std::string, double> speed_metrics(const metrics_msg& m, size_t restarts) {
  return {{"samples_per_second", m.samples_per_second},
          {"step_seconds", m.steps > 0 ? m.seconds / static_cast<double>(m.steps) : 0.0},
          {"allreduce_seconds", m.allreduce_seconds},
          {"restarts", static_cast<double>(restarts)}};
}

} // namespace dtrain::actors
