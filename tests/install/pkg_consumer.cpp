// A driver program built with nothing but `pkg-config --cflags --libs
// dtrain` (no CAF on its include path or link line): it trains the
// built-in linear regression for one epoch with one replica on an embedded
// cluster, through the public API alone.
#include <cstdio>

#include "dtrain/build_config.hpp"
#include "dtrain/dtrain.hpp"

int main() {
  dtrain::cluster_options where;
  where.embedded = true;
  where.local_slots = 1;
  auto cluster = dtrain::cluster::connect(where);
  if (!cluster) {
    std::fprintf(stderr, "error: %s\n", cluster.error().to_string().c_str());
    return 1;
  }
  dtrain::trainer_config config;
  config.name = "pkg-consumer";
  config.operator_name = "linear_regression";
  config.global_batch_size = 32;
  auto trainer = dtrain::trainer::create(**cluster, config);
  if (!trainer) {
    std::fprintf(stderr, "error: %s\n", trainer.error().to_string().c_str());
    return 1;
  }
  auto m = (*trainer)->train();
  if (!m) {
    std::fprintf(stderr, "error: %s\n", m.error().to_string().c_str());
    return 1;
  }
  std::printf("dtrain %s: cluster %s, epoch %lld, %lld samples, loss %.4f\n", DTRAIN_VERSION,
              (*cluster)->where().c_str(), static_cast<long long>(m->epoch),
              static_cast<long long>(m->samples), m->loss);
  bool ok = (*trainer)->shutdown().is_ok() && m->epoch == 1 && m->samples > 0;
  return ok ? 0 : 1;
}
