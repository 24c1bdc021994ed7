// Writes the seed inputs of the harnesses whose inputs are files that
// dtrain writes (checkpoints, the experiment store), with dtrain's own
// writers, into DIR/<harness>/ (fuzz/corpus holds what it wrote):
//   make_seeds DIR
// checkpoint_manifest: a manifest of two ranks; checkpoint_shard: a shard
// of rank 0 of 1 in chunks of 8 bytes, after the two bytes the harness
// reads its buffer counts from; store_open: stores of a sweep run to its
// end and of one cut short (with a failure event), compacted to 512-byte
// pages so that they stay small. The file readers' seeds: make_data_seeds.cpp.
#include <sqlite3.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <string>
#include <vector>

#include "dtrain/experiments/experiment.hpp"
#include "dtrain/serialization/capnp_checkpoint.hpp"
#include "dtrain/experiments/store.hpp"
#include "dtrain/tune/journal.hpp"

using namespace dtrain;
namespace fs = std::filesystem;

namespace {

[[noreturn]] void die(const std::string& what) {
  std::fprintf(stderr, "make_seeds: %s\n", what.c_str());
  std::exit(1);
}

std::string read_all(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

void write_all(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary) << bytes;
}

void checkpoints(const std::string& out) {
  const std::string tmp = out + "/tmp-checkpoint";
  fs::create_directories(tmp);
  serialization::capnp_codec codec(8);
  std::vector<float> params(10), moments(10);
  for (size_t i = 0; i < 10; ++i)
    params[i] = 0.5f * static_cast<float>(i), moments[i] = -1.0f / static_cast<float>(i + 1);
  // Two ranks: rank r holds half of each buffer.
  checkpoint::manifest m;
  m.trial = "00003";
  m.epoch = 2;
  m.step = 40;
  m.metrics = {{"validation_accuracy", 0.875}, {"loss", 0.25}};
  m.world_size = 2;
  m.version = checkpoint::schema_version;
  m.buffers = {{"parameters", 10}, {"optimizer/exp_avg", 10}};
  m.extra = {'r', 'n', 'g'};
  for (int r = 0; r < 2; ++r) {
    auto info = codec.write_shard(tmp, r, 2,
                                  {{"parameters", params.data() + 5 * r, 5},
                                   {"optimizer/exp_avg", moments.data() + 5 * r, 5}});
    if (!info)
      die(info.error().to_string());
    m.shards.push_back(*info);
  }
  if (auto s = codec.write_manifest(tmp, m); !s)
    die(s.to_string());
  fs::create_directories(out + "/checkpoint_manifest");
  fs::copy_file(tmp + "/manifest.capnp", out + "/checkpoint_manifest/two_ranks",
                fs::copy_options::overwrite_existing);
  // One rank, the whole buffers: the shard harness's form.
  fs::remove_all(tmp);
  fs::create_directories(tmp);
  auto one = codec.write_shard(tmp, 0, 1, {{"parameters", params.data(), 10},
                                           {"optimizer/exp_avg", moments.data(), 10}});
  if (!one)
    die(one.error().to_string());
  fs::create_directories(out + "/checkpoint_shard");
  write_all(out + "/checkpoint_shard/one_rank",
            std::string{char(10), char(10)} + read_all(tmp + "/" + one->file));
  fs::remove_all(tmp);
}

const char* sweep_yaml = R"(name: seed-sweep
operator: objective
hyperparameters:
  function: branin
  x1: {type: double, minval: -5, maxval: 10}
  x2: {type: int, minval: 0, maxval: 15}
  opt: {type: categorical, vals: [adam, sgd]}
searcher:
  name: SEARCHER
  metric: validation_loss
  max_trials: 4
  max_length: {epochs: 3}
  SCHEDULER
global_batch_size: 1
epochs: 3
)";

// A sweep of `yaml` recorded by the journal, as the tuner records it; cut
// short (as a killed driver) after `kill_after` reports when >= 0.
void sweep(const std::string& path, const std::string& yaml, int kill_after) {
  auto exp = experiments::parse_experiment(yaml, "seed.yaml");
  if (!exp)
    die(exp.error().to_string());
  auto opened = experiments::open_sqlite_store(path);
  if (!opened)
    die(opened.error().to_string());
  std::shared_ptr<experiments::experiment_store> db = std::move(*opened);
  experiments::experiment_row e;
  e.name = exp->name;
  e.kind = "tune";
  e.configuration = experiments::to_yaml(*exp);
  e.config_hash = experiments::config_hash(e.configuration);
  e.metric = exp->sweep.metric;
  e.minimize = true;
  e.storage = "/tmp/seed-checkpoints";
  const int64_t id = *db->create_experiment(e);
  const auto& c = exp->sweep;
  auto search = tune::make_searcher(exp->space, c);
  auto sched = std::move(tune::make_scheduler(c, exp->space).value());
  auto stoppers = tune::make_stoppers(c);
  tune::journal j(db, id, c.metric, c.direction);
  int reports = 0;
  for (int n = 0;; ++n) {
    char tid[16];
    std::snprintf(tid, sizeof tid, "%05d", n);
    auto next = search->suggest(tid);
    if (next.what != tune::suggestion::kind::trial)
      break;
    tune::trial_record r;
    r.id = tid;
    r.configuration = next.configuration;
    r.checkpoint_dir = e.storage + "/" + tid;
    sched->on_add(r.id, r.configuration);
    j.created(r);
    r.status = tune::trial_status::running;
    for (int64_t epoch = 1; epoch <= c.max_epochs; ++epoch) {
      tune::report rep{tid, epoch, {{"validation_loss", 1.0 / (epoch + n)}, {"loss", 0.5}}};
      r.history.push_back(rep);
      j.reported(r, rep);
      j.checkpoint(r, epoch, r.checkpoint_dir + "/" + std::to_string(epoch), true);
      if (epoch == 2)
        j.event(r, epoch, "failure", "failure 1 of at most 3: a replica died");
      if (kill_after >= 0 && ++reports > kill_after) {
        (void)j.flush();
        return;
      }
      auto v = tune::judge(*search, *sched, stoppers, c, rep, epoch, 0.0);
      if (v.ended) {
        r.status = v.status;
        j.ended(r, v.status == tune::trial_status::stopped ? tune::trial_end::stopped
                                                            : tune::trial_end::completed);
        break;
      }
    }
  }
  if (auto s = j.flush(); !s)
    die(s.to_string());
}

// Rewrites the store at `path` with 512-byte pages and no WAL, into `to`.
void compact(const std::string& path, const std::string& to) {
  sqlite3* db = nullptr;
  if (sqlite3_open(path.c_str(), &db) != SQLITE_OK)
    die("open " + path);
  char* err = nullptr;
  if (sqlite3_exec(db, "PRAGMA journal_mode=DELETE; PRAGMA page_size=512; VACUUM;", nullptr,
                   nullptr, &err) != SQLITE_OK)
    die(std::string("compact: ") + (err ? err : "?"));
  sqlite3_close(db);
  fs::copy_file(path, to, fs::copy_options::overwrite_existing);
}

std::string with(std::string yaml, const std::string& searcher, const std::string& scheduler) {
  yaml.replace(yaml.find("SEARCHER"), 8, searcher);
  yaml.replace(yaml.find("SCHEDULER"), 9, scheduler);
  return yaml;
}

} // namespace

void data_seeds(const std::string& out);  // make_data_seeds.cpp

int main(int argc, char** argv) {
  if (argc != 2)
    die("usage: make_seeds DIR");
  const std::string out = argv[1];
  checkpoints(out);
  fs::create_directories(out + "/store_open");
  const std::string tmp = out + "/tmp-store";
  struct run {
    const char* name;
    std::string yaml;
    int kill_after;
  };
  for (const run& r : {run{"asha_done", with(sweep_yaml, "random", "scheduler: asha"), -1},
                       run{"tpe_cut_short", with(sweep_yaml, "tpe", "startup_trials: 2"), 5}}) {
    fs::remove_all(tmp);
    fs::create_directories(tmp);
    sweep(tmp + "/experiments.db", r.yaml, r.kill_after);
    compact(tmp + "/experiments.db", out + "/store_open/" + r.name);
  }
  fs::remove_all(tmp);
  data_seeds(out);
  return 0;
}
