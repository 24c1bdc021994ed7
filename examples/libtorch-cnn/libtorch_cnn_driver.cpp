// The driver: trains the plugin's "libtorch_cnn" operator (a libtorch CNN on
// Fashion-MNIST) data-parallel on a dtrain cluster, printing each epoch's
// metrics and the final validation accuracy; or, with --tune N, runs a
// sweep of N trials over the learning rate and prints the best.
//
//   libtorch_cnn_driver [--address HOST:PORT] [--plugin PATH] [--epochs N]
//                       [--replicas N] [--lr X] [--optimizer sgd|adam]
//                       [--train-samples N] [--validation-samples N]
//                       [--data-dir DIR] [--tune N]
//
// Without --address (and $DTRAIN_ADDRESS unset) the cluster is embedded in
// this process. The trainer loads the plugin here and ships it to the nodes
// its replicas are placed on; each node needs libtorch installed (the
// plugin links libdtrain_libtorch and libtorch) and the data set in
// --data-dir (the same path on every host). On a TLS cluster the driver
// presents the client certificate in $DTRAIN_HOME/tls.
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>

#include "dtrain/dtrain.hpp"

namespace {

struct arguments {
  std::string address;
  std::string plugin = LIBTORCH_CNN_OPERATORS_PATH;  // the plugin built beside this program
  int epochs = 3;
  int replicas = 2;
  int tune_trials = 0;  // 0: train once, no sweep
  std::map<std::string, std::string> hyperparameters;
};

bool parse(int argc, char** argv, arguments& a) {
  for (int i = 1; i < argc; ++i) {
    std::string flag = argv[i];
    if (i + 1 >= argc)
      return false;
    const char* value = argv[++i];
    if (flag == "--address")
      a.address = value;
    else if (flag == "--plugin")
      a.plugin = value;
    else if (flag == "--epochs")
      a.epochs = std::atoi(value);
    else if (flag == "--replicas")
      a.replicas = std::atoi(value);
    else if (flag == "--tune")
      a.tune_trials = std::atoi(value);
    else if (flag == "--lr")
      a.hyperparameters["lr"] = value;
    else if (flag == "--optimizer")
      a.hyperparameters["optimizer"] = value;
    else if (flag == "--train-samples")
      a.hyperparameters["train_samples"] = value;
    else if (flag == "--validation-samples")
      a.hyperparameters["validation_samples"] = value;
    else if (flag == "--data-dir")
      a.hyperparameters["data_dir"] = value;
    else
      return false;
  }
  return a.epochs > 0 && a.replicas > 0 && a.tune_trials >= 0;
}

int fail(const dtrain::status& s) {
  std::fprintf(stderr, "error: %s\n", s.to_string().c_str());
  return 1;
}

dtrain::trainer_config trainer_settings(const arguments& args) {
  dtrain::trainer_config config;
  config.name = "libtorch-cnn";
  config.plugins = {args.plugin};  // where "libtorch_cnn" comes from
  config.operator_name = "libtorch_cnn";
  config.config = args.hyperparameters;
  config.num_replicas = args.replicas;
  config.global_batch_size = 64;
  config.seed = 7;
  return config;
}

// Trains once: every epoch's training and validation metrics.
int train(dtrain::cluster& cluster, const arguments& args) {
  auto trainer = dtrain::trainer::create(cluster, trainer_settings(args));
  if (!trainer)
    return fail(trainer.error());
  std::printf("cluster %s, %d replicas of libtorch_cnn from %s\n", cluster.where().c_str(),
              (*trainer)->world_size(), args.plugin.c_str());
  double accuracy = 0;
  for (int epoch = 0; epoch < args.epochs; ++epoch) {
    auto train = (*trainer)->train();
    if (!train)
      return fail(train.error());
    auto valid = (*trainer)->validate();
    if (!valid)
      return fail(valid.error());
    std::printf("epoch %lld: train loss %.4f accuracy %.3f, validation loss %.4f accuracy %.3f "
                "(%.1f s)\n",
                static_cast<long long>(train->epoch), train->loss, train->accuracy, valid->loss,
                valid->accuracy, train->seconds + valid->seconds);
    std::fflush(stdout);
    accuracy = valid->accuracy;
  }
  std::printf("final validation accuracy %.3f\n", accuracy);
  auto stopped = (*trainer)->shutdown();
  return stopped.is_ok() ? 0 : fail(stopped);
}

// A sweep: `tune_trials` trials of one replica each drawn over the learning
// rate (the other hyperparameters as given), two at a time, each trained
// for --epochs epochs; FIFO, so every trial runs to its end.
int sweep(dtrain::cluster& cluster, const arguments& args) {
  namespace tune = dtrain::tune;
  auto trial = trainer_settings(args);
  trial.num_replicas = 1;
  tune::space space;
  space.add("lr", tune::loguniform(1e-3, 5e-2));

  dtrain::tune_config config;
  config.experiment = "libtorch-cnn-lr";
  config.metric = "validation_accuracy";
  config.direction = tune::mode::max;
  config.num_samples = args.tune_trials;
  config.max_concurrent_trials = 2;
  config.max_epochs = args.epochs;
  config.scheduler = "fifo";
  config.seed = 7;
  config.verbosity = 1;  // each trial's start and end, then a table of all
  std::printf("cluster %s, a sweep of %d trials of libtorch_cnn over lr from %s\n",
              cluster.where().c_str(), args.tune_trials, args.plugin.c_str());
  std::fflush(stdout);

  dtrain::tuner tuner(cluster, trial, space, config);
  auto grid = tuner.fit();
  if (!grid)
    return fail(grid.error());
  auto best = grid->best();
  if (!best)
    return fail(best.error());
  std::printf("best: %s = %.4f with %s\n", config.metric.c_str(),
              (*best)->best(config.metric, config.direction),
              tune::describe((*best)->configuration).c_str());
  return 0;
}

} // namespace

int main(int argc, char** argv) {
  arguments args;
  if (!parse(argc, argv, args)) {
    std::fprintf(stderr,
                 "usage: %s [--address HOST:PORT] [--plugin PATH] [--epochs N] [--replicas N]\n"
                 "          [--lr X] [--optimizer sgd|adam] [--train-samples N]\n"
                 "          [--validation-samples N] [--data-dir DIR] [--tune N]\n",
                 argv[0]);
    return 2;
  }
  dtrain::cluster_options where;
  where.address = args.address;
  auto cluster = dtrain::cluster::connect(where);
  if (!cluster)
    return fail(cluster.error());
  return args.tune_trials > 0 ? sweep(**cluster, args) : train(**cluster, args);
}
