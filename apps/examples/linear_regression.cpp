// A driver program: the Catalyst tutorial's linear regression, trained by
// two replicas data-parallel, in the shape of Ray's trainer.
//
//   build/bin/dtrain-example-linear-regression                    # embedded cluster
//   build/bin/dtrain-example-linear-regression 127.0.0.1:PORT     # a running cluster
//
// Copy it: create a cluster, describe the trainer, call train() per epoch.
#include <cstdio>

#include "dtrain/dtrain.hpp"

int main(int argc, char** argv) {
  dtrain::cluster_options where;
  if (argc > 1)
    where.address = argv[1];
  auto cluster = dtrain::cluster::connect(where);
  if (!cluster) {
    std::fprintf(stderr, "error: %s\n", cluster.error().to_string().c_str());
    return 1;
  }

  dtrain::trainer_config config;
  config.name = "linear-regression";
  config.operator_name = "linear_regression";  // a registered training operator
  config.config = {{"lr", "0.001"}, {"optimizer", "adam"}, {"milestones", "3,6"}};
  config.num_replicas = 2;
  config.global_batch_size = 32;  // 16 per replica
  auto trainer = dtrain::trainer::create(**cluster, config);
  if (!trainer) {
    std::fprintf(stderr, "error: %s\n", trainer.error().to_string().c_str());
    return 1;
  }
  for (int epoch = 0; epoch < 8; ++epoch) {
    auto m = (*trainer)->train();
    if (!m) {
      std::fprintf(stderr, "error: %s\n", m.error().to_string().c_str());
      return 1;
    }
    std::printf("epoch %lld: mse %.5f (%lld samples, %.0f samples/s)\n",
                static_cast<long long>(m->epoch), m->loss, static_cast<long long>(m->samples),
                m->samples_per_second);
  }
  auto model = (*trainer)->get_model();
  if (model)
    std::printf("model: %zu parameters; bias %.4f\n", model->size(), model->back());
  return (*trainer)->shutdown().is_ok() ? 0 : 1;
}
