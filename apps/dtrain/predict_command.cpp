#include "predict_command.hpp"

#include <cstdio>

#include "commands.hpp"
#include "dtrain/driver/prediction.hpp"
#include "dtrain/driver/trainer.hpp"
#include "dtrain/experiments/experiment.hpp"

namespace dtrain::cli {

namespace {

int fail(const status& s) {
  std::fprintf(stderr, "error: %s\n", s.to_string().c_str());
  return 1;
}

} // namespace

int run_predict(const predict_command_options& o) {
  auto e = experiments::load_experiment(o.experiment);
  if (!e)
    return fail(e.error());
  if (o.checkpoint.empty() || o.output.empty())
    return fail(invalid_argument("dtrain predict needs --checkpoint and --output"));
  if (e->has_search)
    return fail(invalid_argument(o.experiment + " searches hyperparameters: predict takes one "
                                 "model's experiment (a trial's configuration as a file)"));
  if (o.chunk_rows < 1 || o.chunk_timeout_s < 1)
    return fail(invalid_argument("--chunk-rows and --chunk-timeout must be at least 1"));
  auto attach = attach_options(o.address, o.embedded, o.tls, "predict");
  if (!attach)
    return fail(attach.error());
  actors::trainer_config tc = actors::trainer_config_from(*e);
  tc.name = e->name + "-predict";
  tc.checkpoint_dir.clear();  // restores from --checkpoint; saves nothing
  if (o.replicas > 0)
    tc.num_replicas = o.replicas;
  // Each replica's batch: the experiment's share of its global batch.
  actors::cluster::options co = *attach;
  co.local_slots = std::max(co.local_slots, tc.num_replicas);
  auto c = actors::cluster::connect(co);
  if (!c)
    return fail(c.error());
  auto t = actors::trainer::create(**c, tc);
  if (!t)
    return fail(t.error());
  if (status s = (*t)->restore(o.checkpoint); !s)
    return fail(s);
  actors::predict_options po;
  po.input = o.input;
  po.output = o.output;
  po.chunk_rows = o.chunk_rows;
  po.chunk_timeout = std::chrono::seconds(o.chunk_timeout_s);
  auto r = actors::predict(**t, po);
  (void)(*t)->shutdown();
  if (!r)
    return fail(r.error());
  std::printf("predicted %lld rows of '%s' with %d replicas in %.2f s (%.0f rows/s), %lld "
              "chunks, %lld redone after a failure; wrote %s\n",
              static_cast<long long>(r->rows), o.input.c_str(), r->replicas, r->seconds,
              r->rows_per_second, static_cast<long long>(r->chunks),
              static_cast<long long>(r->redone), o.output.c_str());
  if (r->accuracy >= 0)
    std::printf("accuracy %.4f\n", r->accuracy);
  return 0;
}

} // namespace dtrain::cli
