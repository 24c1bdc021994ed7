// A driver program that tunes an MLP on Fashion-MNIST: random search over
// the learning rate, the hidden widths and the optimizer, with ASHA
// stopping the weak trials early, two trials at a time.
//
//   build/bin/dtrain-example-tune [TRIALS] [EPOCHS] [HOST:PORT]
//
// Without an address it starts an embedded cluster in this process.
#include <cstdio>
#include <cstdlib>

#include "dtrain/dtrain.hpp"

namespace tune = dtrain::tune;

int main(int argc, char** argv) {
  int trials = argc > 1 ? std::atoi(argv[1]) : 8;
  int epochs = argc > 2 ? std::atoi(argv[2]) : 6;
  dtrain::cluster_options where;
  if (argc > 3)
    where.address = argv[3];
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
  config.scheduler = "asha";
  config.asha.grace_period = 2;
  config.asha.reduction_factor = 3;
  config.seed = 7;

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
  std::printf("best: %s = %.4f with %s\n", config.metric.c_str(),
              (*best)->best(config.metric, config.direction),
              tune::describe((*best)->configuration).c_str());
  return 0;
}
