// The driver: trains the plugin's "spiral_mlp" operator data-parallel on a
// dtrain cluster and prints each epoch's metrics and, after every epoch,
// every replica's parameter hash and node (equal hashes: the replicas hold
// bitwise the same model).
//
//   my_driver [--address HOST:PORT] [--plugin PATH] [--epochs N] [--replicas N]
//
// Without --address (and $DTRAIN_ADDRESS unset) the cluster is embedded in
// this process. The trainer loads the plugin here and ships it to the
// nodes its replicas are placed on: nothing has to be copied to them. On a
// TLS cluster the driver presents the client certificate in
// $DTRAIN_HOME/tls (client.pem, client-key.pem, ca.pem: `dtrain cert
// create --client`), or the files named by cluster_options::tls.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "dtrain/dtrain.hpp"

namespace {

struct arguments {
  std::string address;
  std::string plugin = MY_OPERATORS_PATH;  // the plugin built beside this program
  int epochs = 5;
  int replicas = 2;
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
    else
      return false;
  }
  return a.epochs > 0 && a.replicas > 0;
}

int fail(const dtrain::status& s) {
  std::fprintf(stderr, "error: %s\n", s.to_string().c_str());
  return 1;
}

} // namespace

int main(int argc, char** argv) {
  arguments args;
  if (!parse(argc, argv, args)) {
    std::fprintf(stderr, "usage: %s [--address HOST:PORT] [--plugin PATH] [--epochs N] "
                         "[--replicas N]\n", argv[0]);
    return 2;
  }
  dtrain::cluster_options where;
  where.address = args.address;
  auto cluster = dtrain::cluster::connect(where);
  if (!cluster)
    return fail(cluster.error());

  dtrain::trainer_config config;
  config.name = "spiral";
  config.plugins = {args.plugin};        // where "spiral_mlp" comes from
  config.operator_name = "spiral_mlp";
  config.config = {{"arms", "3"}, {"hidden", "64"}, {"lr", "0.01"}};
  config.num_replicas = args.replicas;
  config.global_batch_size = 64;
  config.seed = 7;
  auto trainer = dtrain::trainer::create(**cluster, config);
  if (!trainer)
    return fail(trainer.error());
  std::printf("cluster %s, %d replicas of spiral_mlp from %s\n", (*cluster)->where().c_str(),
              (*trainer)->world_size(), args.plugin.c_str());

  for (int epoch = 0; epoch < args.epochs; ++epoch) {
    auto train = (*trainer)->train();
    if (!train)
      return fail(train.error());
    auto valid = (*trainer)->validate();
    if (!valid)
      return fail(valid.error());
    std::printf("epoch %lld: train loss %.4f accuracy %.3f, validation loss %.4f accuracy %.3f\n",
                static_cast<long long>(train->epoch), train->loss, train->accuracy, valid->loss,
                valid->accuracy);
    // Every replica's parameters, hashed where they live: equal hashes
    // after every epoch mean the replicas hold bitwise the same model.
    auto hashes = (*trainer)->parameter_hashes();
    if (!hashes)
      return fail(hashes.error());
    auto placed = (*trainer)->placement();
    for (size_t rank = 0; rank < hashes->size(); ++rank)
      std::printf("replica %zu: parameters hash %016llx (node %d, %s)\n", rank,
                  static_cast<unsigned long long>((*hashes)[rank]),
                  rank < placed.size() ? placed[rank].node : -1,
                  rank < placed.size() && !placed[rank].address.empty()
                      ? placed[rank].address.c_str()
                      : "this process");
  }
  auto stopped = (*trainer)->shutdown();
  return stopped.is_ok() ? 0 : fail(stopped);
}
