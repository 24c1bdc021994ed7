// Synchronized BatchNorm: replicas of a group, each with its own slice of a
// batch, compute what one BatchNorm computes on the whole batch.
#include <boost/test/unit_test.hpp>

#include <chrono>
#include <mutex>
#include <vector>

#include "support/spawn.hpp"
#include "dtrain/comm/factory.hpp"
#include "dtrain/rendezvous/store.hpp"
#include "dtrain/core/check.hpp"
#include "dtrain/nn/norm.hpp"
#include "dtrain/tensor/ops.hpp"
#include "support/test_util.hpp"

using namespace dtrain;
using namespace dtrain::testing;

namespace {

constexpr int replicas = 3;
constexpr int64_t channels = 3, spatial = 2, features = channels * spatial;
const int64_t rows_of[replicas] = {2, 4, 1};  // uneven slices, one of batch 1

// What one replica (or the reference) computed.
struct outcome {
  std::vector<float> y, dx, weight_grad, bias_grad, running;
};

// A batch_norm2d with the same perturbed weight and bias everywhere, one
// training forward of x and backward of r.
outcome run_batch_norm(const tensor& x, const tensor& r, const nn::statistics_reducer& reduce,
                       status& failure) {
  nn::batch_norm bn(channels, 1, spatial);
  tensor weight = tensor::from_vector({1.2f, 0.7f, -0.4f}, {channels});
  tensor bias = tensor::from_vector({0.1f, -0.3f, 0.5f}, {channels});
  tensor weight_grad = tensor::zeros({channels}), bias_grad = tensor::zeros({channels});
  tensor running = tensor::zeros({2, channels});
  bn.bind({weight, bias}, {weight_grad, bias_grad});
  bn.bind_buffers({running.view(0, {channels}), running.view(channels, {channels})});
  ops::fill(running, 1.0f);
  bn.set_statistics_reducer(reduce);
  outcome out;
  out.y = bn.forward(x, {true, 0}).to_vector();
  failure = bn.last_status();
  if (!failure.is_ok())
    return out;
  out.dx = bn.backward(r, {true, false}).to_vector();
  failure = bn.last_status();
  out.weight_grad = weight_grad.to_vector();
  out.bias_grad = bias_grad.to_vector();
  out.running = running.to_vector();
  return out;
}

void expect_close(const std::vector<float>& got, const std::vector<float>& want, size_t from,
                  const std::string& what) {
  BOOST_REQUIRE(from + got.size() <= want.size());
  for (size_t i = 0; i < got.size(); ++i)
    BOOST_TEST(got[i] == want[from + i], what << "[" << i << "]"
                                              << boost::test_tools::tolerance(2e-4f));
}

} // namespace

BOOST_AUTO_TEST_SUITE(synchronized_batch_norm)

BOOST_AUTO_TEST_CASE(replicas_with_a_reducer_compute_what_one_batch_norm_computes_on_the_whole_batch) {
  std::vector<tensor> xs, rs;
  int64_t total = 0;
  for (int q = 0; q < replicas; ++q) {
    xs.push_back(random_tensor({rows_of[q], features}, 10 + q, 1.0f + q));
    rs.push_back(random_tensor({rows_of[q], features}, 20 + q));
    total += rows_of[q];
  }
  tensor all_x = tensor::empty({total, features}), all_r = tensor::empty({total, features});
  for (int q = 0, row = 0; q < replicas; row += rows_of[q], ++q) {
    all_x.rows(row, row + rows_of[q]).copy_from(xs[q]);
    all_r.rows(row, row + rows_of[q]).copy_from(rs[q]);
  }
  status ok_reference;
  const outcome want = run_batch_norm(all_x, all_r, {}, ok_reference);
  BOOST_REQUIRE(ok_reference.is_ok());

  std::vector<outcome> got(replicas);
  auto store = std::make_shared<rendezvous::memory_store>();
  auto outcomes = run_ranks(replicas, rank_mode::threads, std::chrono::seconds(60),
                            [&](int rank) -> status {
    comm::group_options go;
    go.rank = rank;
    go.size = replicas;
    go.store = store;
    go.backend = "shm";
    go.timeout = std::chrono::milliseconds(20000);
    DTRAIN_ASSIGN_OR_RETURN(auto c, comm::make_communicator(go));
    nn::statistics_reducer sum = [&c](tensor& values) {
      return c->all_reduce(values, comm::reduce_op::sum)->wait();
    };
    status failure;
    got[rank] = run_batch_norm(xs[rank], rs[rank], sum, failure);
    return failure;
  });
  BOOST_REQUIRE(failures(outcomes).empty());

  std::vector<double> weight_grad(channels, 0.0), bias_grad(channels, 0.0);
  for (int q = 0, row = 0; q < replicas; row += rows_of[q], ++q) {
    const std::string who = "replica " + std::to_string(q);
    expect_close(got[q].y, want.y, row * features, who + " y");
    expect_close(got[q].dx, want.dx, row * features, who + " dx");
    expect_close(got[q].running, want.running, 0, who + " running statistics");
    for (int64_t c = 0; c < channels; ++c) {
      weight_grad[c] += got[q].weight_grad[c];
      bias_grad[c] += got[q].bias_grad[c];
    }
  }
  // Each replica's parameter gradients are its own; their sum is the whole
  // batch's (the gradient sync averages them).
  for (int64_t c = 0; c < channels; ++c) {
    BOOST_TEST(weight_grad[c] == want.weight_grad[c], boost::test_tools::tolerance(2e-4));
    BOOST_TEST(bias_grad[c] == want.bias_grad[c], boost::test_tools::tolerance(2e-4));
  }
  // Without the reducer a replica normalizes by its own statistics.
  status alone;
  const outcome local = run_batch_norm(xs[1], rs[1], {}, alone);
  BOOST_REQUIRE(alone.is_ok());
  BOOST_TEST(local.y != got[1].y);
}

BOOST_AUTO_TEST_CASE(a_failing_reducer_is_the_layers_error) {
  status failure;
  nn::statistics_reducer broken = [](tensor&) { return unavailable("the group is gone"); };
  run_batch_norm(random_tensor({4, features}, 1), random_tensor({4, features}, 2), broken,
                 failure);
  BOOST_REQUIRE(!failure.is_ok());
  BOOST_TEST((failure.code() == error_code::unavailable));
  BOOST_TEST(failure.message().find("batch_norm2d(3, 1x2) (synchronized): the group is gone") !=
             std::string::npos, failure.message());
}

BOOST_AUTO_TEST_SUITE_END()
