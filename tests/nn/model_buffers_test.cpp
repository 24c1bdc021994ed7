// Model state that is not a parameter (BatchNorm's running statistics):
// its flat buffer, who writes it, and restoring it.
#include <boost/test/unit_test.hpp>

#include <vector>

#include "dtrain/nn/build.hpp"
#include "dtrain/nn/model.hpp"
#include "support/test_util.hpp"

using namespace dtrain;
using namespace dtrain::nn::build;
using dtrain::testing::random_tensor;

namespace {

std::unique_ptr<nn::model> bn_model() {
  return nn::model::create(seq(linear(3, 4), batch_norm1d(4), relu(), linear(4, 2)),
                           {3, device::cpu(), 7}).value();
}

} // namespace

BOOST_AUTO_TEST_SUITE(model_buffers)

BOOST_AUTO_TEST_CASE(buffers_start_at_their_initial_values_apart_from_the_parameters) {
  auto m = bn_model();
  BOOST_TEST(m->parameter_count() == 3 * 4 + 4 + 4 + 4 + 4 * 2 + 2);
  BOOST_TEST(m->buffer_count() == 8);
  std::vector<float> expect{0, 0, 0, 0, 1, 1, 1, 1};
  BOOST_TEST(m->buffers().to_vector() == expect, boost::test_tools::per_element());
  BOOST_TEST(m->buffer_slots()[1].name == "1.running_var");
  BOOST_TEST(m->buffer_slots()[1].offset == 4);
  auto plain = nn::model::create(seq(linear(3, 2)), {3}).value();
  BOOST_TEST(plain->buffer_count() == 0);
  BOOST_TEST(plain->buffers().defined());
}

BOOST_AUTO_TEST_CASE(only_a_training_forward_writes_the_buffers) {
  auto m = bn_model();
  auto before = m->buffers().to_vector();
  m->forward(random_tensor({5, 3}, 1), false).value();
  BOOST_TEST(m->buffers().to_vector() == before, boost::test_tools::per_element());
  auto x = random_tensor({5, 3}, 2);  // the layers keep it for backward
  m->forward(x, true).value();
  auto trained = m->buffers().to_vector();
  BOOST_TEST(trained != before);
  BOOST_REQUIRE(m->backward(random_tensor({5, 2}, 3), false).is_ok());
  BOOST_TEST(m->buffers().to_vector() == trained, boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(restored_buffers_and_parameters_give_back_the_same_evaluation_outputs) {
  auto m = bn_model();
  auto x = random_tensor({4, 3}, 10);
  for (int step = 0; step < 3; ++step)
    m->forward(random_tensor({6, 3}, 20 + step, 2.0f), true).value();
  tensor saved_params = m->parameters().clone(), saved_buffers = m->buffers().clone();
  tensor expect = m->forward(x, false).value()->clone();
  for (int step = 0; step < 3; ++step) {
    auto batch = random_tensor({6, 3}, 30 + step, 3.0f);
    m->forward(batch, true).value();
    BOOST_REQUIRE(m->backward(random_tensor({6, 2}, 40 + step), false).is_ok());
    ops::axpy(-0.1f, m->gradients(), m->parameters());
  }
  BOOST_TEST(!m->forward(x, false).value()->bitwise_equal(expect));
  // Into a fresh model, as a checkpoint restore does.
  auto restored = bn_model();
  restored->parameters().copy_from(saved_params);
  restored->buffers().copy_from(saved_buffers);
  BOOST_TEST(restored->forward(x, false).value()->bitwise_equal(expect));
  // Parameters alone are not enough: the running statistics matter.
  auto params_only = bn_model();
  params_only->parameters().copy_from(saved_params);
  BOOST_TEST(!params_only->forward(x, false).value()->bitwise_equal(expect));
}

BOOST_AUTO_TEST_SUITE_END()
