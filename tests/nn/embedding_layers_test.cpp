// Embedding on the CPU: the lookup and its scatter-add gradient against
// plain loops, finite differences of the weight, and index errors.
#include <boost/test/unit_test.hpp>

#include <vector>

#include "dtrain/nn/build.hpp"
#include "dtrain/nn/model.hpp"
#include "support/finite_difference.hpp"
#include "support/test_util.hpp"

using namespace dtrain;
using dtrain::testing::random_tensor;

namespace {

constexpr int64_t vocab = 11, dim = 3;

struct bound_embedding {
  nn::embedding layer{vocab, dim};
  tensor weight = tensor::empty({vocab, dim});
  tensor grad = tensor::zeros({vocab, dim});

  bound_embedding() {
    rng gen(3);
    std::vector<tensor> params{weight};
    layer.initialize(params, gen);
    layer.bind({weight}, {grad});
  }
};

} // namespace

BOOST_AUTO_TEST_SUITE(embedding_layers)

BOOST_AUTO_TEST_CASE(embedding_output_is_the_weight_rows_of_each_index_in_order) {
  bound_embedding e;
  auto x = tensor::from_vector({0, 10, 4, 4, 7, 1, 10, 0, 2, 3, 3, 9}, {3, 4});
  const tensor& y = e.layer.forward(x, {true, 0});
  BOOST_REQUIRE(e.layer.last_status().is_ok());
  BOOST_TEST((y.shape() == shape_t{3, 4 * dim}));
  for (int64_t r = 0; r < 3; ++r)
    for (int64_t j = 0; j < 4; ++j)
      for (int64_t d = 0; d < dim; ++d) {
        auto index = static_cast<int64_t>(x.data()[r * 4 + j]);
        BOOST_TEST(y.data()[r * 4 * dim + j * dim + d] == e.weight.data()[index * dim + d]);
      }
}

BOOST_AUTO_TEST_CASE(embedding_weight_gradient_is_a_scatter_add_with_repeated_indices_summed) {
  bound_embedding e;
  auto x = tensor::from_vector({2, 5, 2, 2, 0, 5}, {2, 3});
  e.layer.forward(x, {true, 0});
  auto dy = random_tensor({2, 3 * dim}, 9);
  const tensor& dx = e.layer.backward(dy, {true, false});
  std::vector<float> expect(vocab * dim, 0.0f);
  for (int64_t p = 0; p < 6; ++p)
    for (int64_t d = 0; d < dim; ++d)
      expect[static_cast<int64_t>(x.data()[p]) * dim + d] += dy.data()[p * dim + d];
  auto got = e.grad.to_vector();
  for (size_t i = 0; i < expect.size(); ++i)
    BOOST_TEST(got[i] == expect[i], boost::test_tools::tolerance(1e-6f));
  BOOST_TEST((dx.shape() == x.shape()));
  BOOST_TEST(dtrain::ops::sum(dx) == 0.0);  // indices are not differentiable
  // accumulate = true adds a second copy, false replaces it.
  e.layer.backward(dy, {false, true});
  for (size_t i = 0; i < expect.size(); ++i)
    BOOST_TEST(e.grad.data()[i] == 2 * expect[i], boost::test_tools::tolerance(1e-6f));
  e.layer.backward(dy, {false, false});
  for (size_t i = 0; i < expect.size(); ++i)
    BOOST_TEST(e.grad.data()[i] == expect[i], boost::test_tools::tolerance(1e-6f));
}

BOOST_AUTO_TEST_CASE(embedding_weight_gradient_matches_finite_differences_at_batch_1) {
  nn::embedding e(7, 5);
  auto x = tensor::from_vector({6, 0, 6}, {1, 3});
  BOOST_TEST(dtrain::testing::check_module_gradients(e, x, 11, true, false) == 0);
}

BOOST_AUTO_TEST_CASE(an_index_outside_the_vocabulary_is_an_error_naming_it_and_its_place) {
  using namespace nn::build;
  auto m = nn::model::create(seq(embedding(vocab, dim), linear(2 * dim, 2)), {2}).value();
  BOOST_TEST(m->forward(tensor::from_vector({0, 10, 3, 1}, {2, 2}), true).is_ok());
  struct bad_case { float value; const char* shown; };
  for (auto [value, shown] : {bad_case{11, "index 11 "}, bad_case{-1, "index -1 "},
                              bad_case{2.5f, "index 2.5 "}}) {
    auto out = m->forward(tensor::from_vector({0, 1, 3, value}, {2, 2}), true);
    BOOST_REQUIRE(!out.is_ok());
    BOOST_TEST((out.error().code() == error_code::out_of_range));
    const std::string& msg = out.error().message();
    BOOST_TEST(msg.find(shown) != std::string::npos, msg);
    BOOST_TEST(msg.find("row 1, position 1") != std::string::npos, msg);
    BOOST_TEST(msg.find("layer 1 embedding(11, 3)") != std::string::npos, msg);
  }
}

BOOST_AUTO_TEST_CASE(an_embedding_model_learns_a_lookup_table) {
  using namespace nn::build;
  auto m = nn::model::create(seq(embedding(5, 4), linear(4, 5)), {1, device::cpu(), 2}).value();
  auto x = tensor::from_vector({0, 1, 2, 3, 4}, {5, 1});
  auto labels = tensor::from_vector({3, 0, 4, 1, 2}, {5});
  tensor row_loss = tensor::empty({5}), grad = tensor::empty({5, 5});
  float first = 0, last = 0;
  for (int step = 0; step < 30; ++step) {
    const tensor* y = m->forward(x, true).value();
    last = ops::softmax_cross_entropy(*y, labels, &grad, row_loss);
    if (step == 0)
      first = last;
    BOOST_REQUIRE(m->backward(grad, false).is_ok());
    ops::axpy(-0.5f, m->gradients(), m->parameters());
  }
  BOOST_TEST(last < 0.5f * first);
}

BOOST_AUTO_TEST_SUITE_END()
