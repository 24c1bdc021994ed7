// PBT through the real tuner and trainers: a population of 8 regression
// trials with a constant learning rate each, where a high rate learns fast
// and a low one ends lower, so the best rate falls as training goes on.
// PBT (exploiting and perturbing the rate) must end better than random
// search with the same 8 trials and epochs, over several seeds; exploits
// are recorded with their lineage and the new rate is the one that trains.
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <limits>

#include "dtrain/driver/tuner/tuner.hpp"
#include "dtrain/experiments/store.hpp"
#include "support/test_util.hpp"

using namespace dtrain;
using namespace dtrain::actors;
using dtrain::testing::temp_dir;
using std::chrono::milliseconds;

namespace {

trainer_config regression(const std::string& checkpoints) {
  trainer_config t;
  t.operator_name = "linear_regression";
  // A constant rate (the multistep schedule's first milestone is past the
  // last epoch), plain SGD, noisy targets: the rate sets both the speed and
  // the floor of the loss.
  t.config = {{"samples", "2000"}, {"features", "64"}, {"planted", "true"}, {"noise", "0.5"}, {"optimizer", "sgd"},
              {"milestones", "1000"}};
  t.num_replicas = 1;
  t.global_batch_size = 2;
  t.checkpoint_dir = checkpoints;
  t.checkpoint_keep = 2;
  t.placement_timeout = milliseconds(30000);
  return t;
}

tune_config population(const std::string& scheduler, uint64_t seed) {
  tune_config c;
  c.experiment = "pbt-" + scheduler;
  c.metric = "validation_loss";
  c.direction = tune::mode::min;
  c.searcher = "random";
  c.num_samples = 8;
  c.max_epochs = 10;
  c.max_concurrent_trials = 8;  // the whole population at once, as PBT wants
  c.scheduler = scheduler;
  c.pbt.perturbation_interval = 2;
  c.seed = seed;
  c.verbosity = 1;
  return c;
}

struct swept {
  double best_final = std::numeric_limits<double>::quiet_NaN();
  int exploits = 0;
  bool rates_took_effect = true;
};

// The sweep's best last-epoch validation loss, and what its store says.
swept run(cluster& c, const std::string& scheduler, uint64_t seed) {
  temp_dir dir;
  auto opened = experiments::open_sqlite_store(dir.file("experiments.db"));
  BOOST_TEST_REQUIRE(opened.is_ok(), opened.error().to_string());
  std::shared_ptr<experiments::experiment_store> db = std::move(*opened);
  experiments::experiment_row e;
  e.name = scheduler;
  e.kind = "tune";
  tune_config config = population(scheduler, seed);
  config.store = db;
  config.experiment_id = db->create_experiment(e).value();
  tune::space s;
  s.add("lr", tune::loguniform(1e-3, 0.1));
  tuner t(c, regression(dir.file("ckpt")), s, config);
  auto grid = t.fit();
  BOOST_TEST_REQUIRE(grid.is_ok(), grid.error().to_string());
  swept out;
  // The highest rates diverge (those trials end in error, as they should);
  // the best is over the trials that finished.
  for (const auto& trial : grid->trials) {
    const double last = trial.last("validation_loss");
    if (trial.status == tune::trial_status::terminated && (std::isnan(out.best_final) || last < out.best_final))
      out.best_final = last;
  }
  auto lineage = db->lineage(config.experiment_id);
  BOOST_TEST_REQUIRE(lineage.is_ok());
  for (const auto& l : *lineage) {
    if (l.after.empty())
      continue;
    ++out.exploits;
    // The epoch after the exploit trained with the new rate.
    auto after = tune::config_from_json(l.after);
    BOOST_TEST_REQUIRE(after.is_ok());
    const double lr = std::get<double>(after->at("lr"));
    auto metrics = db->metrics(config.experiment_id, l.trial);
    BOOST_TEST_REQUIRE(metrics.is_ok());
    for (const auto& m : *metrics)
      if (m.seq > l.seq && m.name == "lr") {
        if (std::abs(m.value - lr) > 1e-6 * lr) {
          out.rates_took_effect = false;
          BOOST_TEST_MESSAGE("trial " << l.trial << " exploited " << l.source << " with lr " << lr
                                      << " but trained with " << m.value);
        }
        break;
      }
    BOOST_TEST(l.source != l.trial);
  }
  return out;
}

// Trial 00000, then trial 00001 starting from 00000's newest checkpoint
// (a population searcher's restore_from), both with the same rate.
class continue_first final : public tune::searcher {
public:
  tune::suggestion suggest(const std::string& id) override {
    tune::suggestion s;
    if (id > "00001")
      return s;
    s.what = tune::suggestion::kind::trial;
    s.configuration["lr"] = 0.01;
    if (id == "00001")
      s.restore_from = "00000";
    return s;
  }
};

} // namespace

BOOST_AUTO_TEST_SUITE(pbt_sweep)

BOOST_AUTO_TEST_CASE(pbt_beats_random_search_with_the_same_trials_and_epochs) {
  cluster::options o;
  o.local_slots = 8;
  auto c = cluster::connect(o);
  BOOST_TEST_REQUIRE(c.is_ok(), c.error().to_string());
  int wins = 0;
  double random_sum = 0, pbt_sum = 0;
  const std::vector<uint64_t> seeds{1, 2, 3, 4, 5};
  for (uint64_t seed : seeds) {
    const swept random = run(**c, "fifo", seed);
    const swept pbt = run(**c, "pbt", seed);
    std::printf("seed %llu: best final validation loss, random %.5f, PBT %.5f (%d exploits)\n",
                static_cast<unsigned long long>(seed), random.best_final, pbt.best_final, pbt.exploits);
    BOOST_TEST(pbt.exploits > 0, "seed " << seed);
    BOOST_TEST(pbt.rates_took_effect, "seed " << seed);
    wins += pbt.best_final < random.best_final;
    random_sum += random.best_final;
    pbt_sum += pbt.best_final;
  }
  // PBT keeps the best trials' own runs unless one of them falls behind, so
  // it mostly matches random search and wins where an exploited, perturbed
  // copy (a lower rate late) overtakes them.
  BOOST_TEST(wins >= 3, "PBT won " << wins << " of " << seeds.size());
  BOOST_TEST(pbt_sum < random_sum, "mean best final loss: PBT " << pbt_sum / seeds.size()
                                       << ", random " << random_sum / seeds.size());
}

BOOST_AUTO_TEST_CASE(pbt_without_checkpoints_is_refused) {
  cluster::options o;
  o.local_slots = 2;
  auto c = cluster::connect(o);
  BOOST_TEST_REQUIRE(c.is_ok());
  tune::space s;
  s.add("lr", tune::loguniform(1e-3, 0.1));
  tuner t(**c, regression(""), s, population("pbt", 1));
  auto grid = t.fit();
  BOOST_TEST_REQUIRE(!grid.is_ok());
  BOOST_TEST(grid.error().message().find("checkpoint") != std::string::npos, grid.error().message());
}

// A trial restored from a checkpoint of the last epoch (an exploit's
// source that finished meanwhile) trains no epoch past max_epochs.
BOOST_AUTO_TEST_CASE(a_trial_restored_at_the_last_epoch_trains_no_further) {
  cluster::options o;
  o.local_slots = 2;
  auto c = cluster::connect(o);
  BOOST_TEST_REQUIRE(c.is_ok(), c.error().to_string());
  temp_dir dir;
  tune::space s;
  s.add("lr", tune::loguniform(1e-3, 0.1));
  tune_config config = population("fifo", 1);
  config.num_samples = 2;
  config.max_epochs = 2;
  config.max_concurrent_trials = 1;
  tuner t(**c, regression(dir.file("ckpt")), s, config);
  t.set_searcher(std::make_unique<continue_first>());
  auto grid = t.fit();
  BOOST_TEST_REQUIRE(grid.is_ok(), grid.error().to_string());
  BOOST_TEST_REQUIRE(grid->trials.size() == 2u);
  BOOST_TEST(grid->trials[0].epochs() == 2);
  for (const auto& rep : grid->trials[1].history)
    BOOST_TEST(rep.epoch <= 2, "trial 00001 reported epoch " << rep.epoch);
  BOOST_TEST(grid->trials[1].status != tune::trial_status::error, grid->trials[1].error);
}

BOOST_AUTO_TEST_SUITE_END()
