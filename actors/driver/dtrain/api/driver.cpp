// The public handles (dtrain/dtrain.hpp) over the driver library's own
// classes: each forwards to the object it holds, and turns the wire's
// types into the public ones where they differ.
#include "dtrain/dtrain.hpp"

#include <utility>

#include "dtrain/core/check.hpp"
#include "dtrain/driver/cluster.hpp"
#include "dtrain/driver/trainer.hpp"
#include "dtrain/driver/tuner/tuner.hpp"

namespace dtrain {

struct cluster::impl {
  std::unique_ptr<actors::cluster> handle;
};

struct trainer::impl {
  std::unique_ptr<actors::trainer> handle;
};

struct tuner::impl {
  std::unique_ptr<actors::tuner> handle;
};

// ---- cluster -------------------------------------------------------------

cluster::cluster(std::unique_ptr<impl> i) : impl_(std::move(i)) {}
cluster::~cluster() = default;

result<std::unique_ptr<cluster>> cluster::connect(const cluster_options& options) {
  DTRAIN_ASSIGN_OR_RETURN(auto handle, actors::cluster::connect(actors::cluster::options(options)));
  auto i = std::make_unique<impl>();
  i->handle = std::move(handle);
  return std::unique_ptr<cluster>(new cluster(std::move(i)));
}

bool cluster::embedded() const { return impl_->handle->embedded(); }
const std::string& cluster::where() const { return impl_->handle->where(); }

// ---- trainer -------------------------------------------------------------

trainer::trainer(std::unique_ptr<impl> i) : impl_(std::move(i)) {}
trainer::~trainer() = default;

result<std::unique_ptr<trainer>> trainer::create(cluster& c, const trainer_config& config) {
  DTRAIN_ASSIGN_OR_RETURN(auto handle, actors::trainer::create(*c.impl_->handle, config));
  auto i = std::make_unique<impl>();
  i->handle = std::move(handle);
  return std::unique_ptr<trainer>(new trainer(std::move(i)));
}

result<train::epoch_metrics> trainer::train() { return impl_->handle->train(); }
result<train::epoch_metrics> trainer::validate() { return impl_->handle->validate(); }
status trainer::save(const std::string& path) { return impl_->handle->save(path); }
status trainer::restore(const std::string& path) { return impl_->handle->restore(path); }
result<std::vector<float>> trainer::get_model() { return impl_->handle->get_model(); }
result<std::vector<uint64_t>> trainer::parameter_hashes() {
  return impl_->handle->parameter_hashes();
}
status trainer::preempt() { return impl_->handle->preempt(); }
status trainer::shutdown() { return impl_->handle->shutdown(); }
int trainer::world_size() const { return impl_->handle->world_size(); }
const trainer_config& trainer::config() const { return impl_->handle->config(); }

std::vector<replica_placement> trainer::placement() const {
  std::vector<replica_placement> out;
  const auto& placed = impl_->handle->placement();
  for (size_t rank = 0; rank < placed.size(); ++rank)
    out.push_back({static_cast<int>(rank), placed[rank].node, placed[rank].info.address});
  return out;
}

// ---- tuner ---------------------------------------------------------------

tuner::tuner(cluster& c, trainer_config trial_template, tune::space space, tune_config config)
  : impl_(std::make_unique<impl>()) {
  // The library's sweep settings: the public ones, and the command line's
  // (an experiment store, resuming, redrawing a terminal) at their defaults.
  actors::tune_config settings;
  static_cast<tune::sweep_config&>(settings) = config;
  settings.experiment = std::move(config.experiment);
  settings.storage = std::move(config.storage);
  settings.out = config.out;
  settings.verbosity = config.verbosity;
  impl_->handle = std::make_unique<actors::tuner>(*c.impl_->handle, std::move(trial_template),
                                                  std::move(space), std::move(settings));
}

tuner::~tuner() = default;

result<tune::result_grid> tuner::fit() { return impl_->handle->fit(); }
void tuner::stop(const std::string& reason) { impl_->handle->stop(reason); }
const std::string& tuner::experiment_dir() const { return impl_->handle->experiment_dir(); }

} // namespace dtrain
