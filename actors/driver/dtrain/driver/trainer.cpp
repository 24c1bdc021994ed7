// A trainer's handle: its id, its configuration from an experiment, its
// creation and shutdown, and the notes and events it tells its driver
// (trainer_ask.hpp says where the rest lives).
#include "dtrain/driver/trainer.hpp"

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>

#include "dtrain/cluster/errors.hpp"
#include "dtrain/core/net.hpp"
#include "dtrain/security/certificates.hpp"
#include "dtrain/tensor/precision.hpp"
#include "dtrain/zero/shard_layout.hpp"

namespace dtrain::actors {

namespace {

using clock_type = std::chrono::steady_clock;

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
  t.zero_stage = e.zero_stage;
  t.clip_grad_norm = e.clip_grad_norm;
  t.seed = e.seed;
  t.max_failures = e.max_failures;
  t.recovery = e.recovery;
  t.checkpoint_dir = e.checkpoint_dir;
  t.checkpoint_keep = e.checkpoint_keep;
  if (e.checkpoint_every_epochs > 0)
    t.checkpoint_every = e.checkpoint_every_epochs;
  t.checkpoint_every_steps = e.checkpoint_every_steps;
  t.checkpoint_every_seconds = e.checkpoint_every_seconds;
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
  if (config.recovery != "live" && config.recovery != "checkpoint")
    return invalid_argument("trainer '" + config.name + "': recovery '" + config.recovery +
                            "' is not one of live, checkpoint");
  if (status s = zero::check_stage(config.zero_stage, "zero_stage"); !s)
    return s.with_context("trainer '" + config.name + "'");
  if (!(config.clip_grad_norm >= 0) || !std::isfinite(config.clip_grad_norm))
    return invalid_argument("trainer '" + config.name + "': clip_grad_norm must be finite and " +
                            ">= 0 (0: off), got " + std::to_string(config.clip_grad_norm));
  if (config.checkpoint_every_steps < 0 || !(config.checkpoint_every_seconds >= 0))
    return invalid_argument("trainer '" + config.name + "': checkpoint_every_steps and " +
                            "checkpoint_every_seconds must be >= 0 (0: off), got " +
                            std::to_string(config.checkpoint_every_steps) + " and " +
                            std::to_string(config.checkpoint_every_seconds));
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
  if (!live_note_.empty()) {  // trainer_live.cpp says how it went on
    event("recovered", epoch, live_note_);
    live_note_.clear();
    return;
  }
  event("recovered", epoch,
        "running again with " + std::to_string(world_size()) + " of " +
            std::to_string(config_.num_replicas) + " replicas (generation " +
            std::to_string(generation_) + ") " +
            (restored_epoch > 0 ? "from the checkpoint of epoch " + std::to_string(restored_epoch)
                                : std::string("from the start")));
}

status trainer::shutdown() {
  if (stopped_.exchange(true))
    return status::ok();
  drop_newcomers(false);  // the release below gives every slot back
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
