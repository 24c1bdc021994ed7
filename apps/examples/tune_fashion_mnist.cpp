// A driver program that tunes an MLP on Fashion-MNIST: random search over
// the learning rate, the hidden widths and the optimizer, with ASHA (or
// Hyperband) stopping the weak trials early, two trials at a time.
//
//   build/bin/dtrain-example-tune [TRIALS] [EPOCHS] [HOST:PORT|-] [asha|hyperband] [SEED]
//
// Without an address (or with -) it starts an embedded cluster in this
// process. ASHA's rungs are at 1, 3, 9, ... epochs (reduction factor 3);
// Hyperband's brackets start at 1, 3, 9, ... (min_resource 1, the same
// factor, max_resource EPOCHS). The last line says how many epochs the
// trials ran in all and the best accuracy.
#include <cstdio>
#include <cstdlib>

#include "dtrain/dtrain.hpp"

namespace tune = dtrain::tune;

int main(int argc, char** argv) {
  int trials = argc > 1 ? std::atoi(argv[1]) : 8;
  int epochs = argc > 2 ? std::atoi(argv[2]) : 6;
  dtrain::cluster_options where;
  if (argc > 3 && std::string(argv[3]) != "-")
    where.address = argv[3];
  const std::string scheduler = argc > 4 ? argv[4] : "asha";
  const uint64_t seed = argc > 5 ? std::strtoull(argv[5], nullptr, 10) : 7;
  auto cluster = dtrain::cluster::connect(where);
  if (!cluster) {
    std::fprintf(stderr, "error: %s\n", cluster.error().to_string().c_str());
    return 1;
  }

  // Each trial: one replica, the template's values unless the space says otherwise.
  dtrain::trainer_config trial;
  trial.operator_name = "mlp_classifier";
  trial.config = {{"schedule", "cosine"}, {"epochs", std::to_string(epochs)}};
  trial.num_replicas = 1;
  trial.global_batch_size = 128;

  tune::space space;
  space.add("lr", tune::loguniform(1e-4, 3e-2))
      .add("hidden", tune::choice({std::string("256,128,100"), std::string("512,256"),
                                   std::string("128,64"), std::string("64")}))
      .add("optimizer", tune::choice({std::string("adam"), std::string("sgd")}))
      .add("dropout", tune::quniform(0.0, 0.3, 0.1));

  dtrain::tune_config config;
  config.experiment = "tune-fashion-mnist";
  config.metric = "validation_accuracy";
  config.direction = tune::mode::max;
  config.num_samples = trials;
  config.max_concurrent_trials = 2;
  config.max_epochs = epochs;
  config.scheduler = scheduler;
  config.asha.grace_period = 1;
  config.asha.reduction_factor = 3;
  config.hyperband.min_resource = 1;
  config.hyperband.reduction_factor = 3;
  config.seed = seed;

  dtrain::tuner tuner(**cluster, trial, space, config);
  auto grid = tuner.fit();
  if (!grid) {
    std::fprintf(stderr, "error: %s\n", grid.error().to_string().c_str());
    return 1;
  }
  auto best = grid->best();
  if (!best) {
    std::fprintf(stderr, "error: %s\n", best.error().to_string().c_str());
    return 1;
  }
  int64_t ran = 0;
  for (const auto& t : grid->trials)
    ran += static_cast<int64_t>(t.history.size());
  std::printf("best: %s = %.4f with %s\n", config.metric.c_str(),
              (*best)->best(config.metric, config.direction),
              tune::describe((*best)->configuration).c_str());
  std::printf("%s seed %llu: %zu trials, %lld of %lld epochs run, best %s %.4f\n",
              scheduler.c_str(), static_cast<unsigned long long>(seed), grid->trials.size(),
              static_cast<long long>(ran), static_cast<long long>(trials) * epochs,
              config.metric.c_str(), (*best)->best(config.metric, config.direction));
  return 0;
}
