// A driver program: an MLP on Fashion-MNIST trained by N replicas, with
// validation after each epoch and a checkpoint at the end.
//
//   build/bin/dtrain-example-fashion-mnist [REPLICAS] [EPOCHS] [HOST:PORT]
//
// Without an address it starts an embedded cluster in this process.
#include <cstdio>
#include <cstdlib>

#include "dtrain/dtrain.hpp"

int main(int argc, char** argv) {
  int replicas = argc > 1 ? std::atoi(argv[1]) : 2;
  int epochs = argc > 2 ? std::atoi(argv[2]) : 5;
  dtrain::cluster_options where;
  if (argc > 3)
    where.address = argv[3];
  where.local_slots = replicas;
  auto cluster = dtrain::cluster::connect(where);
  if (!cluster) {
    std::fprintf(stderr, "error: %s\n", cluster.error().to_string().c_str());
    return 1;
  }

  dtrain::trainer_config config;
  config.name = "fashion-mnist";
  config.operator_name = "mlp_classifier";
  config.config = {{"hidden", "256,128,100"}, {"lr", "0.001"}, {"epochs", std::to_string(epochs)}};
  config.num_replicas = replicas;
  config.global_batch_size = 128;
  auto trainer = dtrain::trainer::create(**cluster, config);
  if (!trainer) {
    std::fprintf(stderr, "error: %s\n", trainer.error().to_string().c_str());
    return 1;
  }
  for (int epoch = 0; epoch < epochs; ++epoch) {
    auto m = (*trainer)->train();
    auto v = m ? (*trainer)->validate() : dtrain::result<dtrain::train::epoch_metrics>(m.error());
    if (!v) {
      std::fprintf(stderr, "error: %s\n", v.error().to_string().c_str());
      return 1;
    }
    std::printf("epoch %d: train loss %.4f acc %.4f | test acc %.4f | %.0f samples/s\n",
                epoch + 1, m->loss, m->accuracy, v->accuracy, m->samples_per_second);
  }
  if (auto s = (*trainer)->save("/tmp/dtrain-fashion-mnist.ckpt"); !s)
    std::fprintf(stderr, "warning: %s\n", s.to_string().c_str());
  return (*trainer)->shutdown().is_ok() ? 0 : 1;
}
