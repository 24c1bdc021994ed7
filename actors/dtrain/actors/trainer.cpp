#include "dtrain/actors/trainer.hpp"

#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstring>
#include <thread>

#include "dtrain/actors/errors.hpp"
#include "dtrain/core/check.hpp"
#include "dtrain/actors/store_actor.hpp"

namespace dtrain::actors {

namespace {

using clock_type = std::chrono::steady_clock;

std::string unique_id(const std::string& name) {
  static std::atomic<int> counter{0};
  char host[64] = {};
  gethostname(host, sizeof host - 1);
  return name + "-" + host + "-" + std::to_string(getpid()) + "-" + std::to_string(counter++);
}

// The actor replicas monitor: when it goes, they go.
caf::behavior owner_impl(caf::event_based_actor*) {
  return {[](int32_t) {}};
}

} // namespace

trainer_config trainer_config_from(const config::experiment& e) {
  trainer_config t;
  t.name = e.name;
  t.operator_name = e.operator_name;
  t.config = e.hyperparameters;
  t.num_replicas = e.slots_per_trial;
  t.use_gpu = e.use_gpu;
  t.backend = e.backend;
  t.global_batch_size = e.global_batch_size;
  t.aggregation_frequency = e.aggregation_frequency;
  t.average_training_metrics = e.average_training_metrics;
  t.compression = e.gradient_compression;
  t.seed = e.seed;
  t.max_failures = e.max_failures;
  t.checkpoint_dir = e.checkpoint_dir;
  t.checkpoint_keep = e.checkpoint_keep;
  return t;
}

result<std::unique_ptr<trainer>> trainer::create(cluster& c, const trainer_config& config) {
  if (config.num_replicas < 1)
    return invalid_argument("trainer '" + config.name + "': num_replicas must be >= 1");
  if (config.operator_name.empty())
    return invalid_argument("trainer '" + config.name + "': no training operator named");
  std::unique_ptr<trainer> t(new trainer(c, config));
  t->id_ = unique_id(config.name);
  auto start = clock_type::now();
  status started = t->start();
  if (!started) {
    (void)t->shutdown();
    return started.with_context("trainer '" + config.name + "'");
  }
  t->startup_seconds_ = std::chrono::duration<double>(clock_type::now() - start).count();
  return t;
}

trainer::~trainer() { (void)shutdown(); }

status trainer::place() {
  auto& sys = cluster_.system();
  auto deadline = clock_type::now() + config_.placement_timeout;
  std::string last_reason;
  for (;;) {
    caf::scoped_actor self{sys};
    status out;
    self->request(cluster_.head(), std::chrono::seconds(10), place_atom::value, id_,
                  static_cast<int32_t>(config_.num_replicas), config_.use_gpu, owner_)
        .receive([&](std::vector<assignment>& a) { placement_ = std::move(a); },
                 [&](caf::error& e) { out = from_caf(e, "placing " + std::to_string(config_.num_replicas) + " replicas"); });
    if (out.is_ok() || out.code() != error_code::unavailable)
      return out;
    if (clock_type::now() >= deadline)
      return status(error_code::timeout, out.message() + " (gave up after " +
                                             std::to_string(config_.placement_timeout.count()) + " ms)");
    if (out.message() != last_reason) {
      std::fprintf(stderr, "dtrain: trainer %s: %s\n", config_.name.c_str(), out.message().c_str());
      last_reason = out.message();
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
  }
}

status trainer::spawn_all() {
  for (size_t rank = 0; rank < placement_.size(); ++rank) {
    const assignment& a = placement_[rank];
    replica_spec spec;
    spec.trainer = id_;
    spec.generation = generation_;
    spec.rank = static_cast<int32_t>(rank);
    spec.world_size = static_cast<int32_t>(placement_.size());
    spec.local_rank = a.local_rank;
    spec.node_rank = a.node;
    spec.host = a.info.host;
    spec.backend = config_.backend;
    spec.gpu = a.gpu;
    spec.timeout_ms = config_.collective_timeout.count();
    spec.operator_name = config_.operator_name;
    spec.config = config_.config;
    spec.global_batch_size = config_.global_batch_size;
    spec.aggregation_frequency = config_.aggregation_frequency;
    spec.average_training_metrics = config_.average_training_metrics;
    spec.compression = config_.compression;
    spec.seed = config_.seed;
    spec.progress_seconds = config_.progress_seconds;
    auto replica = cluster_.spawn_replica(a, spec, owner_, store_, std::chrono::seconds(10));
    if (!replica) {
      unreachable_node_ = a.node;
      return replica.error();
    }
    replicas_.push_back(std::move(*replica));
  }
  return status::ok();
}

status trainer::start() {
  auto& sys = cluster_.system();
  if (!owner_)
    owner_ = sys.spawn(owner_impl);
  if (!store_)
    store_ = spawn_store(sys);
  auto deadline = clock_type::now() + config_.placement_timeout;
  for (;;) {
    replicas_.clear();
    unreachable_node_ = -1;
    DTRAIN_RETURN_IF_ERROR(place());
    status spawned = spawn_all();
    if (spawned)
      break;
    // A node the head still lists may be dead (it has not noticed yet):
    // tell it, give the slots back, and place again without that node.
    if (unreachable_node_ < 0 || clock_type::now() >= deadline)
      return spawned;
    std::fprintf(stderr, "dtrain: trainer %s: %s; placing again without node %d\n",
                 config_.name.c_str(), spawned.message().c_str(), unreachable_node_);
    stop_replicas();
    caf::scoped_actor self{sys};
    self->request(cluster_.head(), std::chrono::seconds(5), unreach_atom::value,
                  static_cast<int32_t>(unreachable_node_))
        .receive([](caf::ok_atom) {}, [](caf::error&) {});
    self->request(cluster_.head(), std::chrono::seconds(5), release_atom::value, id_)
        .receive([](caf::ok_atom) {}, [](caf::error&) {});
  }
  // Setup runs the rendezvous: every replica must be asked before any answers.
  auto ready = ask_all<caf::ok_atom>(config_.collective_timeout + std::chrono::seconds(30),
                                     "setup", setup_atom::value);
  if (ready) {
    std::lock_guard<std::mutex> lock(chief_mutex_);
    chief_ = replicas_.front();
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
template <class Reply, class... Ts>
result<std::vector<Reply>> trainer::ask_all(std::chrono::milliseconds timeout,
                                            const std::string& what, Ts... args) {
  if (stopped_ || replicas_.empty())
    return status(error_code::aborted, what + ": the trainer has been shut down");
  using outcome = result<std::vector<Reply>>;
  auto promise = std::make_shared<std::promise<outcome>>();
  auto future = promise->get_future();
  auto replicas = replicas_;
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
      self->request(replicas[rank], timeout, args...)
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
}

status trainer::recover(const status& cause) {
  failures_.push_back({std::chrono::steady_clock::now(), cause.to_string()});
  std::fprintf(stderr, "dtrain: trainer %s: failure %zu of at most %d: %s\n", config_.name.c_str(),
               failures_.size(), config_.max_failures, cause.to_string().c_str());
  if (static_cast<int>(failures_.size()) > config_.max_failures)
    return cause.with_context("trainer '" + config_.name + "' gives up after " +
                              std::to_string(failures_.size()) + " failures (max_failures " +
                              std::to_string(config_.max_failures) + ")");
  stop_replicas();
  {
    caf::scoped_actor self{cluster_.system()};
    self->request(cluster_.head(), std::chrono::seconds(5), release_atom::value, id_)
        .receive([](caf::ok_atom) {}, [](caf::error&) {});
  }
  ++generation_;
  DTRAIN_RETURN_IF_ERROR(start().with_context("re-forming the group (generation " +
                                              std::to_string(generation_) + ")"));
  if (config_.checkpoint_dir.empty())
    return status::ok();  // no checkpoints: the new group starts over
  status restored = restore(config_.checkpoint_dir);
  if (restored.code() == error_code::not_found)
    return status::ok();  // nothing saved yet
  return restored;
}

result<metrics_msg> trainer::train() {
  for (;;) {
    auto all = ask_all<metrics_msg>(config_.epoch_timeout, "train", train_atom::value);
    if (!all) {
      if (stopped_)
        return all.error();
      DTRAIN_RETURN_IF_ERROR(recover(all.error()));
      continue;
    }
    metrics_msg m = all->front();
    bool due = config_.checkpoint_every > 0 && m.epoch % config_.checkpoint_every == 0;
    if (!config_.checkpoint_dir.empty() && (m.preempted || due))
      DTRAIN_RETURN_IF_ERROR(save(config_.checkpoint_dir));
    return m;
  }
}

result<metrics_msg> trainer::validate() {
  for (;;) {
    auto all = ask_all<metrics_msg>(config_.epoch_timeout, "validate", valid_atom::value);
    if (all)
      return all->front();
    if (stopped_)
      return all.error();
    DTRAIN_RETURN_IF_ERROR(recover(all.error()));
  }
}

status trainer::save(const std::string& path) {
  return ask_all<caf::ok_atom>(config_.epoch_timeout, "save to " + path, save_atom::value, path,
                               static_cast<int32_t>(config_.checkpoint_keep))
      .to_status();
}

status trainer::restore(const std::string& path) {
  return ask_all<caf::ok_atom>(config_.epoch_timeout, "restore from " + path, restore_atom::value, path).to_status();
}

result<std::vector<float>> trainer::get_model() {
  if (stopped_ || replicas_.empty())
    return status(error_code::aborted, "get_model: the trainer has been shut down");
  caf::scoped_actor self{cluster_.system()};
  result<std::vector<float>> out{status(error_code::internal, "no reply")};
  self->request(replicas_[0], config_.epoch_timeout, params_atom::value)
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
  {
    std::lock_guard<std::mutex> lock(chief_mutex_);
    chief = chief_;
  }
  if (stopped_ || !chief)
    return status(error_code::aborted, "preempt: the trainer has been shut down");
  caf::scoped_actor self{cluster_.system()};
  status out;
  self->request(chief, std::chrono::seconds(10), preempt_atom::value)
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
  if (stopped_)
    return status::ok();
  stopped_ = true;
  stop_replicas();
  if (owner_)
    caf::anon_send_exit(owner_, caf::exit_reason::user_shutdown);
  if (store_)
    caf::anon_send_exit(store_, caf::exit_reason::user_shutdown);
  status released;
  if (cluster_.head()) {
    caf::scoped_actor self{cluster_.system()};
    self->request(cluster_.head(), std::chrono::seconds(5), release_atom::value, id_)
        .receive([](caf::ok_atom) {}, [&](caf::error& e) { released = from_caf(e, "releasing slots"); });
  }
  owner_ = nullptr;
  store_ = nullptr;
  return released;
}

} // namespace dtrain::actors
