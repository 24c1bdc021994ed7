// Errors the runtime promises instead of crashes, end to end on an embedded
// cluster: a trainer whose model cannot be allocated fails at create() with
// an error naming the layer and size, and the node (this process) keeps
// training another trainer beside it.
#include <boost/test/unit_test.hpp>

#include <chrono>

#include "dtrain/driver/trainer.hpp"
#include "dtrain/core/threads.hpp"
#include "support/test_util.hpp"

using namespace dtrain;
using namespace dtrain::actors;
using std::chrono::milliseconds;

BOOST_AUTO_TEST_SUITE(promised_errors)

BOOST_AUTO_TEST_CASE(a_trainer_too_large_for_memory_fails_at_create_and_another_keeps_training) {
  set_blas_threads(1);
  auto c = cluster::connect({"", 2, 0, milliseconds(5000)});
  BOOST_REQUIRE_MESSAGE(c.is_ok(), c.error().to_string());

  trainer_config huge;
  huge.name = "huge";
  huge.operator_name = "mlp_classifier";
  huge.config = {{"hidden", "100000000000"}, {"data_dir", dtrain::testing::fashion_mnist_dir()}};
  huge.num_replicas = 1;
  huge.collective_timeout = milliseconds(10000);
  huge.placement_timeout = milliseconds(2000);
  auto failed = trainer::create(**c, huge);
  BOOST_REQUIRE(!failed.is_ok());
  BOOST_TEST_MESSAGE(failed.error().to_string());
  const std::string& why = failed.error().message();
  BOOST_TEST(why.find("layer 1 linear(784->100000000000)") != std::string::npos, why);
  BOOST_TEST(why.find("313600000000000 bytes") != std::string::npos, why);

  trainer_config small;
  small.name = "regression";
  small.operator_name = "linear_regression";
  small.config = {{"planted", "true"}, {"lr", "0.01"}};
  small.num_replicas = 2;  // both slots: the failed trainer gave its slot back
  small.global_batch_size = 64;
  small.seed = 3;
  small.collective_timeout = milliseconds(10000);
  small.placement_timeout = milliseconds(5000);
  auto t = trainer::create(**c, small);
  BOOST_REQUIRE_MESSAGE(t.is_ok(), t.error().to_string());
  auto m = (*t)->train();
  BOOST_REQUIRE_MESSAGE(m.is_ok(), m.error().to_string());
  BOOST_TEST(m->epoch == 1);
  BOOST_TEST(m->samples == 10000);
  BOOST_TEST((*t)->shutdown().is_ok());
}

BOOST_AUTO_TEST_SUITE_END()
