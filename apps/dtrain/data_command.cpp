// `dtrain data pack` and `dtrain data inspect`: a data source (any format
// open_source reads) written as record shards, and what a source holds.
#include <CLI/CLI.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <memory>
#include <numeric>
#include <string>
#include <vector>

#include "command_line.hpp"
#include "dtrain/datasets/shards.hpp"
#include "dtrain/datasets/source.hpp"

namespace dtrain::cli {

namespace {

struct data_options {
  std::string action;            // pack | inspect
  std::string format, path;      // the source (inspect: format may be guessed)
  std::vector<std::string> sets; // --set KEY=VALUE: the reader's options
  std::string out;               // pack: the shard directory to create
  double shard_mb = 64;          // pack: the most MiB per shard file
  std::string encoding = "raw";  // pack: raw | deflate
  bool regression = false;       // targets are values, not class indices
  bool verify = false;           // inspect: read every sample (shards: every checksum)
};

std::string shape_text(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i)
    s += (i == 0 ? "" : ", ") + std::to_string(shape[i]);
  return s + "]";
}

// The source spec: format, path and every --set KEY=VALUE.
result<data::source_spec> make_spec(const data_options& o) {
  data::source_spec spec;
  for (const std::string& set : o.sets) {
    const size_t eq = set.find('=');
    if (eq == std::string::npos || eq == 0)
      return invalid_argument("--set '" + set + "': expected KEY=VALUE");
    const std::string key = set.substr(0, eq);
    if (key == "format" || key == "path")
      return invalid_argument("--set '" + set + "': give the " + key + " with --" + key);
    spec[key] = set.substr(eq + 1);
  }
  spec["format"] = o.format.empty() ? data::format_of_path(o.path) : o.format;
  if (spec["format"].empty())
    return invalid_argument(o.path + ": cannot tell its format from its name; give --format");
  spec["path"] = o.path;
  return spec;
}

result<std::shared_ptr<const data::dataset>> open(const data_options& o) {
  result<data::source_spec> spec = make_spec(o);
  if (!spec)
    return spec.error();
  return data::open_source(*spec, "source", !o.regression);
}

void print_summary(const data::dataset& set) {
  std::printf("source    %s\n", set.name().c_str());
  std::printf("samples   %lld\n", static_cast<long long>(set.size()));
  std::printf("features  %lld, shape %s\n", static_cast<long long>(set.feature_count()),
              shape_text(set.sample_shape()).c_str());
  std::printf("targets   %lld\n", static_cast<long long>(set.target_count()));
  if (set.class_count() > 0)
    std::printf("classes   %lld\n", static_cast<long long>(set.class_count()));
  else
    std::printf("classes   none (regression or no targets)\n");
  if (auto* shards = dynamic_cast<const data::shard_dataset*>(&set)) {
    int64_t bytes = 0;
    for (const auto& f : shards->shards())
      bytes += f.bytes;
    std::printf("shards    %zu, %s records, %lld bytes, packed from %s\n",
                shards->shards().size(), shards->encoding().c_str(),
                static_cast<long long>(bytes), shards->source_name().c_str());
  }
}

// Reads every sample (a shard set: checks every shard's checksum first).
status read_everything(const data::dataset& set) {
  if (auto* shards = dynamic_cast<const data::shard_dataset*>(&set)) {
    if (status s = shards->verify_all(); !s)
      return s;
  }
  const int64_t chunk = 1024;
  std::vector<int64_t> idx(static_cast<size_t>(chunk));
  std::vector<float> x(static_cast<size_t>(chunk * set.feature_count()));
  std::vector<float> y(static_cast<size_t>(chunk * set.target_count()));
  for (int64_t first = 0; first < set.size(); first += chunk) {
    const int64_t n = std::min(chunk, set.size() - first);
    std::iota(idx.begin(), idx.begin() + n, first);
    if (status s = set.gather(idx.data(), n, x.data(), y.data()); !s)
      return s;
  }
  return status::ok();
}

int run_pack(const data_options& o) {
  const auto started = std::chrono::steady_clock::now();
  auto source = open(o);
  if (!source)
    return fail(source.error());
  const auto bytes = static_cast<int64_t>(std::llround(o.shard_mb * 1048576.0));
  if (status s = data::write_shards(**source, {o.out, bytes, o.encoding}); !s)
    return fail(s);
  auto packed = data::open_shards(o.out);
  if (!packed)
    return fail(packed.error());
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  std::printf("packed %lld samples of %s into %s in %.2f s\n",
              static_cast<long long>((*source)->size()), (*source)->name().c_str(),
              o.out.c_str(), seconds);
  print_summary(**packed);
  return 0;
}

int run_inspect(const data_options& o) {
  auto set = open(o);
  if (!set)
    return fail(set.error());
  print_summary(**set);
  if (o.verify) {
    if (status s = read_everything(**set); !s)
      return fail(s);
    std::printf("verified  every sample read back\n");
  }
  return 0;
}

void add_source_options(CLI::App* cmd, data_options& o, bool format_required) {
  auto* format = cmd->add_option("--format", o.format,
                                 "csv | tsv | npy | npz | images | hdf5 | idx | shards");
  if (format_required)
    format->required();
  cmd->add_option("--set", o.sets, "a reader option KEY=VALUE (repeatable), e.g. "
                                   "--set targets=label --set split=test");
  cmd->add_flag("--regression", o.regression,
                "targets are regression values, not class indices");
}

} // namespace

void add_data_command(CLI::App& app, command_list& out) {
  auto o = std::make_shared<data_options>();
  auto* data = app.add_subcommand("data", "pack a data source into record shards, or inspect one");
  data->require_subcommand(1);

  auto* pack = data->add_subcommand("pack", "write a data source as dtrain record shards");
  add_source_options(pack, *o, true);
  pack->add_option("--path", o->path, "the source's file or directory")->required();
  pack->add_option("--out", o->out, "the shard directory to create (must not exist)")->required();
  pack->add_option("--shard-mb", o->shard_mb, "the most MiB per shard file (default: 64)")
      ->check(CLI::PositiveNumber);
  pack->add_option("--encoding", o->encoding, "raw (float32 records) or deflate (zlib per record)")
      ->check(CLI::IsMember({"raw", "deflate"}));
  pack->callback([o] { o->action = "pack"; });

  auto* inspect = data->add_subcommand("inspect", "print a source's size, shapes and classes");
  inspect->add_option("path", o->path, "a shard directory or a data file or directory")->required();
  add_source_options(inspect, *o, false);
  inspect->add_flag("--verify", o->verify,
                    "read every sample (and check every shard's checksum)");
  inspect->callback([o] { o->action = "inspect"; });

  out.push_back({data, [o] { return o->action == "pack" ? run_pack(*o) : run_inspect(*o); }});
}

} // namespace dtrain::cli
