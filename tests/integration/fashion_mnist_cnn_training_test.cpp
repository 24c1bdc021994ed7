// The shipped experiments/fashion_mnist_cnn.yaml (two conv + max-pool
// layers and a dense head, the built-in cnn_classifier operator) trained
// data-parallel by 2 replicas (threads over the shm communicator) on
// Fashion-MNIST: the proof that the engine trains CNNs, as the issue asks
// (0.916 test accuracy; measured: 0.9193 with the file's seed 0, 0.917 with
// seed 7). The file's 8 epochs take about 2 minutes on an idle 2-core
// machine, 3 when it is shared.
#include <boost/test/unit_test.hpp>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <string>

#include "dtrain/experiments/experiment.hpp"
#include "dtrain/core/check.hpp"
#include "support/test_util.hpp"
#include "support/replica_group.hpp"

using namespace dtrain;
using namespace dtrain::testing;

namespace {

// DTRAIN_CNN_TEST_EPOCHS and DTRAIN_CNN_TEST_CONV override the file's
// epochs and conv widths, to measure other runs of the same experiment.
std::string setting(const char* name, const std::string& fallback) {
  const char* env = std::getenv(name);
  return env != nullptr && *env != 0 ? env : fallback;
}

} // namespace

BOOST_AUTO_TEST_SUITE(fashion_mnist_cnn_training)

BOOST_AUTO_TEST_CASE(two_replicas_train_the_shipped_cnn_experiment_to_0916_test_accuracy) {
  auto loaded =
      experiments::load_experiment(std::string(DTRAIN_SOURCE_DIR) + "/experiments/fashion_mnist_cnn.yaml");
  BOOST_TEST_REQUIRE(loaded.is_ok(), loaded.error().to_string());
  BOOST_TEST_REQUIRE(loaded->slots_per_trial == 2);
  auto hp = loaded->hyperparameters;
  hp["conv"] = setting("DTRAIN_CNN_TEST_CONV", hp["conv"]);
  hp["epochs"] = setting("DTRAIN_CNN_TEST_EPOCHS", hp["epochs"]);
  hp["data_dir"] = fashion_mnist_dir();
  const int64_t epochs = std::stoll(hp["epochs"]);
  auto options = options_for(loaded->operator_name, hp, loaded->global_batch_size,
                             loaded->seed);
  double accuracy = 0;
  run_group(2, rank_mode::threads, options, [&](int rank, runner_t& r) -> status {
    for (int64_t e = 0; e < epochs; ++e) {
      auto start = std::chrono::steady_clock::now();
      DTRAIN_ASSIGN_OR_RETURN(auto m, r.train_epoch());
      std::chrono::duration<double> took = std::chrono::steady_clock::now() - start;
      DTRAIN_ASSIGN_OR_RETURN(auto v, r.validate());
      if (rank == 0) {
        BOOST_TEST_MESSAGE("conv " << hp["conv"] << " epoch " << e + 1 << ": train loss "
                                   << m.loss << ", accuracy " << m.accuracy
                                   << "; test accuracy " << v.accuracy << " (" << took.count()
                                   << " s)");
        accuracy = v.accuracy;
      }
      if (!std::isfinite(m.loss) || m.samples != 60000 || v.samples != 10000)
        return invalid_argument("epoch " + std::to_string(e + 1) + ": loss " +
                                std::to_string(m.loss) + " over " + std::to_string(m.samples) +
                                " samples");
    }
    return status::ok();
  });
  BOOST_TEST(accuracy >= 0.916);
}

BOOST_AUTO_TEST_SUITE_END()
