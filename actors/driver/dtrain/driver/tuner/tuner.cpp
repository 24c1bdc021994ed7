// The tuner's handle: it checks a sweep's settings, sizes it to the
// cluster, owns its checkpoint directory, opens its records, and runs its
// actor (sweep_actor.cpp) until the sweep ends (sweep_state.hpp says
// where each part of a sweep lives).
#include "dtrain/driver/tuner/tuner.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <mutex>

#include "dtrain/checkpoint/ownership.hpp"
#include "dtrain/cluster/errors.hpp"
#include "dtrain/cluster/job_thread.hpp"
#include "dtrain/core/check.hpp"
#include "dtrain/driver/tuner/sweep_state.hpp"

namespace dtrain::actors {

using sweep_detail::close_jobs;
using sweep_detail::open_records;
using sweep_detail::sweep;
using sweep_detail::tuner_actor;

namespace {

std::string timestamp() {
  std::time_t now = std::time(nullptr);
  std::tm tm{};
  localtime_r(&now, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y%m%d-%H%M%S", &tm);
  return buf;
}

// The sweep's settings and search space make sense (checked before
// anything else of the sweep is made).
status check_settings(const tune_config& config, const tune::space& space) {
  DTRAIN_RETURN_IF_ERROR(tune::validate(config).with_context("tune"));
  DTRAIN_RETURN_IF_ERROR(space.validate().with_context("search space"));
  if (config.searcher != "tpe")
    if (auto trials = tune::variant_trial_count(space, config.num_samples); !trials)
      return trials.error().with_context("tune");
  return status::ok();
}

// The sweep's opening lines (verbosity > 0): what a resume continues, how
// many trials at most, at once, with how many epochs, and where their
// checkpoints go.
void print_start(const sweep& sw) {
  const tune_config& config = sw.config;
  if (config.verbosity <= 0)
    return;
  if (config.resume) {
    int ended = 0;
    for (const auto& t : sw.resumed.trials)
      ended += sw.resumed.unfinished.count(t.id) == 0;
    std::fprintf(config.out,
                 "resuming experiment %lld: %zu trials so far, %d ended, %zu to continue\n",
                 static_cast<long long>(config.experiment_id), sw.resumed.trials.size(), ended,
                 sw.resumed.unfinished.size());
  }
  std::fprintf(config.out, "sweep %s: %lld trials at most, %d at a time, %lld epochs each; %s\n",
               config.experiment.c_str(), static_cast<long long>(sw.searcher->total()), sw.limit,
               static_cast<long long>(config.max_epochs), sw.scheduler->describe().c_str());
  if (!sw.experiment_dir.empty())
    std::fprintf(config.out, "checkpoints under %s/<trial>\n", sw.experiment_dir.c_str());
  std::fflush(config.out);
}

} // namespace

tuner::tuner(cluster& c, trainer_config trial_template, tune::space space, tune_config config)
  : cluster_(c), template_(std::move(trial_template)), space_(std::move(space)),
    config_(std::move(config)), launcher_(trainer_launcher(c)) {}

tuner::~tuner() { stop("the tuner was destroyed"); }

// The trials that fit at once: the cluster's slots (CPU, or GPUs for a GPU
// template) divided by the slots one trial takes, capped by
// max_concurrent_trials. A trial larger than the whole cluster can never
// run: that fails the sweep before it starts.
status tuner::check_capacity(int& limit) {
  caf::scoped_actor self{cluster_.system()};
  status out;
  cluster_status st;
  self->request(cluster_.head(), std::chrono::seconds(10), status_atom::value, cluster_.session())
      .receive([&](cluster_status& s) { st = std::move(s); },
               [&](caf::error& e) { out = from_caf(e, "asking the head for its slots"); });
  if (!out)
    return out;
  int total = 0;
  std::string per_node;
  for (size_t i = 0; i < st.nodes.size(); ++i) {
    int n = template_.use_gpu ? st.nodes[i].gpus : st.nodes[i].cpu_slots;
    total += n;
    per_node += (per_node.empty() ? "" : ", ") + std::string("node ") + std::to_string(i) + " (" +
                st.nodes[i].host + "): " + std::to_string(n);
  }
  const char* unit = template_.use_gpu ? "GPUs" : "CPU slots";
  int need = template_.min_replicas > 0 ? template_.min_replicas : template_.num_replicas;
  if (need > total)
    return invalid_argument("a trial needs " + std::to_string(need) + " " + unit +
                            " but the cluster has " + std::to_string(total) +
                            (per_node.empty() ? std::string(" (no nodes)") : " (" + per_node + ")") +
                            ": no trial can ever run; add nodes or lower resources.slots_per_trial");
  limit = std::max(1, total / std::max(1, template_.num_replicas));
  if (config_.max_concurrent_trials > 0)
    limit = std::min(limit, config_.max_concurrent_trials);
  return status::ok();
}

result<tune::result_grid> tuner::fit() {
  DTRAIN_RETURN_IF_ERROR(check_settings(config_, space_));
  auto sw = std::make_shared<sweep>();
  sw->config = config_;
  sw->trial_template = template_;
  sw->trial_template.progress_seconds = 0;  // the table reports, not the replicas
  sw->varying = space_.varying();
  if (!searcher_)
    searcher_ = tune::make_searcher(space_, config_);
  if (!scheduler_) {
    if (config_.hyperband.study_name.empty())  // Optuna's study_name (tune/hyperband.hpp)
      config_.hyperband.study_name = config_.experiment;
    DTRAIN_ASSIGN_OR_RETURN(scheduler_, tune::make_scheduler(config_, space_));
  }
  sw->searcher = std::move(searcher_);
  sw->scheduler = std::move(scheduler_);
  sw->stoppers = tune::make_stoppers(config_);
  for (auto& s : extra_stoppers_)
    sw->stoppers.push_back(std::move(s));
  extra_stoppers_.clear();
  sw->launch = launcher_;
  DTRAIN_RETURN_IF_ERROR(check_capacity(sw->limit));
  const bool recorded = config_.store != nullptr && config_.experiment_id > 0;
  DTRAIN_RETURN_IF_ERROR(own_directory(recorded, sw->owner));
  sw->worker = std::make_shared<job_thread>("dtrain-tuner-io");
  sw->experiment_dir = experiment_dir_;
  if (config_.scheduler == "pbt" && experiment_dir_.empty())
    return invalid_argument("tune: scheduler pbt copies checkpoints between trials: set a "
                            "checkpoint directory (checkpoint_storage.host_path)");
  if (config_.resume && !recorded)
    return invalid_argument("tune: resume needs the experiment store and the experiment's id");
  if (recorded) {
    DTRAIN_RETURN_IF_ERROR(open_records(*sw));
  }
  print_start(*sw);
  auto done = sw->done.get_future();
  {
    std::lock_guard<std::mutex> lock(actor_mutex_);
    actor_ = cluster_.system().spawn(tuner_actor, sw);
    if (!stop_reason_.empty())
      caf::anon_send(actor_, stop_atom::value, stop_reason_);
    else
      caf::anon_send(actor_, caf::ok_atom::value);
  }
  result<tune::result_grid> grid = done.get();
  close_jobs(*sw);
  std::lock_guard<std::mutex> lock(actor_mutex_);
  actor_ = nullptr;
  stop_reason_.clear();  // a stop() that came after the sweep ended is for no one
  return grid;
}

status tuner::own_directory(bool recorded, checkpoint::owner& me) {
  experiment_dir_.clear();
  if (!config_.experiment_dir.empty()) {
    experiment_dir_ = config_.experiment_dir;
    me = config_.owner;
    return checkpoint::check_owner(experiment_dir_, me, "run a sweep in");
  }
  std::string storage = config_.storage.empty() ? template_.checkpoint_dir : config_.storage;
  if (storage.empty())
    return status::ok();
  DTRAIN_ASSIGN_OR_RETURN(me.token, checkpoint::new_owner_token());
  experiment_dir_ = storage + "/" +
                    (recorded ? std::to_string(config_.experiment_id)
                              : config_.experiment + "-" + timestamp()) +
                    "-" + me.token;
  me.experiment = config_.experiment_id;
  me.created = checkpoint::created_text(
      std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count());
  me.store = config_.store ? config_.store->where() : "";
  me.name = config_.experiment;
  return checkpoint::claim(experiment_dir_, me);
}

void tuner::stop(const std::string& reason) {
  std::lock_guard<std::mutex> lock(actor_mutex_);
  if (actor_)
    caf::anon_send(actor_, stop_atom::value, reason);
  else if (stop_reason_.empty())
    stop_reason_ = reason;
}

} // namespace dtrain::actors
