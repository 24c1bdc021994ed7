// `dtrain predict`: batch inference from the command line.
#include <CLI/CLI.hpp>

#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "command_line.hpp"
#include "commands.hpp"
#include "dtrain/core/check.hpp"
#include "dtrain/datasets/source.hpp"
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
  std::string input_format;             // "" : from the path
  std::vector<std::string> input_set;   // KEY=VALUE reader options
  std::string output;
  std::string address;
  bool embedded = false;
  int replicas = 0;          // 0: the experiment's slots_per_trial
  int64_t chunk_rows = 1000;
  int chunk_timeout_s = 60;
  security::tls_files tls;
};

// Whether one reader reads both formats (csv and tsv, npy and npz), so that
// one's reader keys (a target column, an array name) apply to the other.
bool same_reader(const std::string& a, const std::string& b) {
  auto reader = [](const std::string& f) -> std::string {
    return f == "tsv" ? "csv" : f == "npz" ? "npy" : f;
  };
  return reader(a) == reader(b);
}

// What the replicas read: the operator's own set, or a file as a data
// source: the experiment's data.validation keys (or data.train's: the same
// target column, shape and scale as in training; of another reader's
// format, only shape and scale), with the path and format of --input and
// the keys of --input-set on top.
result<std::string> input_of(const predict_command_options& o,
                             const experiments::experiment& e) {
  if (o.input == "validation" || o.input == "train") {
    if (!o.input_format.empty() || !o.input_set.empty())
      return invalid_argument("--input-format and --input-set describe a file given to --input");
    return o.input;
  }
  data::source_spec spec = data::sub_spec(e.hyperparameters, "data.validation");
  if (spec.empty())
    spec = data::sub_spec(e.hyperparameters, "data.train");
  const std::string format =
      o.input_format.empty() ? data::format_of_path(o.input) : o.input_format;
  if (format.empty())
    return invalid_argument("--input " + o.input + ": no format known for this name (give "
                            "--input-format csv|tsv|npy|npz|images|hdf5|shards|idx)");
  if (!same_reader(spec["format"], format)) {
    data::source_spec common;
    for (const char* key : {"shape", "scale"})
      if (spec.count(key))
        common[key] = spec[key];
    spec = common;
  }
  spec["path"] = o.input;
  spec["format"] = format;
  for (const std::string& kv : o.input_set) {
    const size_t eq = kv.find('=');
    if (eq == std::string::npos || eq == 0)
      return invalid_argument("--input-set " + kv + ": not KEY=VALUE");
    spec[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  DTRAIN_RETURN_IF_ERROR(data::check_source(spec, "--input"));
  return "source:" + data::source_text(spec);
}

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
  auto input = input_of(o, *e);
  if (!input)
    return fail(input.error());
  actors::trainer_config tc = actors::trainer_config_from(*e);
  tc.name = e->name + "-predict";
  tc.checkpoint_dir.clear();  // restores from --checkpoint; saves nothing
  // Each replica predicts its own chunks alone, with the whole model: a
  // sharded run's checkpoint restores unsharded (docs/zero.md).
  tc.zero_stage = 0;
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
  po.input = *input;
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
  predict->add_option("--input", o->input,
                      "the operator's set (validation or train), or a file or folder to read "
                      "as the experiment's data: section reads its sets")
      ->capture_default_str();
  predict->add_option("--input-format", o->input_format,
                      "csv, tsv, npy, npz, images, hdf5, shards or idx (default: from the name)");
  predict->add_option("--input-set", o->input_set,
                      "KEY=VALUE: a reader option for --input (repeatable), e.g. target=label");
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
