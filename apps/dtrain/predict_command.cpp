// `dtrain predict`: batch inference from the command line.
#include <CLI/CLI.hpp>

#include <cstdio>
#include <memory>

#include "command_line.hpp"
#include "commands.hpp"
#include "dtrain/driver/prediction.hpp"
#include "dtrain/driver/trainer.hpp"
#include "dtrain/experiments/experiment.hpp"

namespace dtrain::cli {

namespace {

// `dtrain predict EXPERIMENT.yaml --checkpoint PATH --output FILE`: the
// experiment's replicas on a cluster (as `dtrain train` finds one),
// restored from a checkpoint, run batch inference over an input set of
// the operator's and write the outputs in input order
// (actors/prediction.hpp has the file's format), then print the rows,
// the throughput and, for a classifier, the accuracy.
struct predict_command_options {
  std::string experiment;
  std::string checkpoint;
  std::string input = "validation";
  std::string output;
  std::string address;
  bool embedded = false;
  int replicas = 0;          // 0: the experiment's slots_per_trial
  int64_t chunk_rows = 1000;
  int chunk_timeout_s = 60;
  security::tls_files tls;
};

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

} // namespace

void add_predict_command(CLI::App& app, command_list& out) {
  auto o = std::make_shared<predict_command_options>();
  auto* predict = app.add_subcommand(
      "predict", "batch inference: an experiment's replicas, restored from a checkpoint, run "
                 "their model over an input set and write the outputs in order");
  predict->add_option("experiment", o->experiment, "EXPERIMENT.yaml")->required();
  predict->add_option("--checkpoint", o->checkpoint,
                      "a checkpoint directory, or a root whose newest valid one is taken")
      ->required();
  predict->add_option("--input", o->input, "the operator's set: validation or train")
      ->capture_default_str();
  predict->add_option("--output", o->output, "the CSV file to write")->required();
  add_address_option(predict, o->address, "embedded");
  predict->add_flag("--embedded", o->embedded, "run an embedded cluster");
  predict->add_option("--replicas", o->replicas, "replicas (default: the experiment's slots)");
  predict->add_option("--chunk-rows", o->chunk_rows, "rows per chunk")->capture_default_str();
  predict->add_option("--chunk-timeout", o->chunk_timeout_s,
                      "seconds a chunk may take before another replica redoes it")
      ->capture_default_str();
  add_tls_options(predict, o->tls);
  out.push_back({predict, [o] { return run_predict(*o); }});
}

} // namespace dtrain::cli
