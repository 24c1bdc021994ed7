// Data-parallel steps with gradient sync: every rank ends with the same
// parameters, bit for bit, and the synced gradient is the mean of the
// ranks' local gradients, with and without accumulation and compression.
#include <boost/test/unit_test.hpp>

#include <cmath>
#include <cstring>
#include <set>

#include "support/collective_check.hpp"
#include "support/spawn.hpp"
#include "dtrain/comm/factory.hpp"
#include "dtrain/comm/gradient_sync.hpp"
#include "dtrain/core/check.hpp"
#include "dtrain/core/threads.hpp"
#include "dtrain/nn/loss.hpp"
#include "dtrain/optim/optimizer.hpp"
#include "support/test_util.hpp"

using namespace dtrain;
using namespace dtrain::testing;
using std::chrono::milliseconds;

namespace {

struct variant {
  comm::compression compress;
  int aggregation;
  double tolerance;  // of the synced gradient against the exact mean
  std::string backend = "shm";
};

constexpr int64_t batch = 8, inputs = 20, classes = 5;

std::unique_ptr<nn::model> make_model() {
  nn::mlp_spec spec{inputs, {32, 16}, classes, ops::activation::tanh, 0.0f};
  return nn::model::create(nn::make_mlp(spec), {inputs, device::cpu(), 7}).value();
}

// Micro-batch `micro` of rank `rank`: its own deterministic data.
std::pair<tensor, tensor> data_of(int rank, int micro) {
  tensor x = tensor::empty({batch, inputs}), y = tensor::empty({batch});
  for (int64_t i = 0; i < x.numel(); ++i)
    x.data()[i] = test_value(rank * 100 + micro, i);
  for (int64_t i = 0; i < batch; ++i)
    y.data()[i] = static_cast<float>((rank + micro + i) % classes);
  return {x, y};
}

status forward_backward(nn::model& m, int rank, int micro, bool accumulate) {
  auto [x, y] = data_of(rank, micro);
  nn::cross_entropy_loss loss;
  DTRAIN_ASSIGN_OR_RETURN(const tensor* out, m.forward(x, true));
  DTRAIN_RETURN_IF_ERROR(loss.compute(*out, y, true).to_status());
  return m.backward(loss.grad(), accumulate);
}

// The exact mean over ranks and micro-batches of the local gradients.
std::vector<float> reference_gradient(int n, int k) {
  auto m = make_model();
  std::vector<double> sum(static_cast<size_t>(m->parameter_count()), 0.0);
  for (int q = 0; q < n; ++q)
    for (int micro = 0; micro < k; ++micro) {
      (void)forward_backward(*m, q, micro, false);
      auto g = m->gradients().to_vector();
      for (size_t i = 0; i < g.size(); ++i)
        sum[i] += g[i];
    }
  std::vector<float> mean(sum.size());
  for (size_t i = 0; i < sum.size(); ++i)
    mean[i] = static_cast<float>(sum[i] / (n * k));
  return mean;
}

status train_rank(int rank, int n, const variant& v, std::shared_ptr<rendezvous::store> store) {
  set_blas_threads(1);
  comm::group_options go;
  go.rank = rank;
  go.size = n;
  go.store = store;
  go.backend = v.backend;
  go.host = "host" + std::to_string(rank % 2);  // two "hosts" for hierarchical
  go.timeout = milliseconds(20000);
  DTRAIN_ASSIGN_OR_RETURN(auto c, comm::make_communicator(go));
  auto m = make_model();
  comm::gradient_sync_options so;
  so.first_bucket_bytes = 256;  // many small buckets: exercise the overlap
  so.bucket_bytes = 1024;
  so.aggregation_frequency = v.aggregation;
  so.compress = v.compress;
  DTRAIN_ASSIGN_OR_RETURN(auto sync, comm::gradient_sync::create(*m, *c, so));
  auto opt = optim::sgd::create({0.9f, 0.0f, 0.0f, false}).value();
  for (int step = 0; step < 4; ++step) {
    for (int micro = 0; micro < v.aggregation; ++micro) {
      auto mb = sync->begin_micro_batch();
      DTRAIN_RETURN_IF_ERROR(forward_backward(*m, rank, micro + 10 * step, mb.accumulate));
      DTRAIN_ASSIGN_OR_RETURN(bool synced, sync->finish());
      DTRAIN_RETURN_IF_ERROR(expect(synced == mb.syncs, "finish() disagrees with syncs"));
    }
    if (step == 0) {
      // Step 0 used micro-batches 0..k-1 of every rank: compare with the mean.
      auto want = reference_gradient(n, v.aggregation);
      double err = max_relative_error(m->gradients().to_vector(), want);
      DTRAIN_RETURN_IF_ERROR(expect(err <= v.tolerance, "synced gradient off by " +
                                                            std::to_string(err)));
      DTRAIN_RETURN_IF_ERROR(expect(sync->bucket_count() > 1 && sync->launched_during_backward() > 0,
                                    "no bucket was reduced during backward"));
    }
    DTRAIN_RETURN_IF_ERROR(opt->step(m->parameters(), m->gradients(), 0.1f));
  }
  auto params = m->parameters().to_vector();
  std::string mine(reinterpret_cast<const char*>(params.data()), params.size() * sizeof(float));
  DTRAIN_RETURN_IF_ERROR(store->set("params/" + std::to_string(rank), comm::to_bytes(mine)));
  DTRAIN_ASSIGN_OR_RETURN(auto first, store->get("params/0", milliseconds(20000)));
  return expect(comm::to_string(first) == mine,
                "rank " + std::to_string(rank) + " parameters differ from rank 0's");
}

void run_variant(int n, rank_mode mode, const variant& v) {
  temp_dir dir;
  std::shared_ptr<rendezvous::store> shared;
  if (mode == rank_mode::threads)
    shared = std::make_shared<rendezvous::memory_store>();
  auto outcomes = run_ranks(n, mode, std::chrono::seconds(60), [&](int rank) -> status {
    std::shared_ptr<rendezvous::store> base = shared;
    if (!base)
      base = std::shared_ptr<rendezvous::store>(rendezvous::file_store::open(dir.path()).value());
    return train_rank(rank, n, v, base);
  });
  std::string failed = failures(outcomes);
  BOOST_TEST(failed.empty(), "N=" << n << " " << to_string(mode) << " compression "
                                  << comm::to_string(v.compress) << " " << v.backend
                                  << " aggregation "
                                  << v.aggregation << ":\n" << failed);
}

} // namespace

BOOST_AUTO_TEST_SUITE(gradient_sync)

BOOST_AUTO_TEST_CASE(replicas_stay_bitwise_identical_and_average_gradients) {
  for (int n : {2, 3})
    for (auto mode : {rank_mode::threads, rank_mode::processes})
      run_variant(n, mode, {comm::compression::none, 1, 1e-5});
}

BOOST_AUTO_TEST_CASE(replicas_stay_identical_over_gloo_and_hierarchical_groups) {
  run_variant(2, rank_mode::processes, {comm::compression::none, 1, 1e-5, "gloo"});
  run_variant(3, rank_mode::threads, {comm::compression::none, 2, 1e-5, "gloo"});
  run_variant(4, rank_mode::processes, {comm::compression::bf16, 1, 1e-2, "hierarchical"});
}

BOOST_AUTO_TEST_CASE(accumulation_syncs_every_kth_micro_batch_and_averages_them) {
  run_variant(2, rank_mode::processes, {comm::compression::none, 3, 1e-5});
  run_variant(3, rank_mode::threads, {comm::compression::none, 2, 1e-5});
}

BOOST_AUTO_TEST_CASE(compressed_sync_keeps_replicas_identical) {
  run_variant(2, rank_mode::processes, {comm::compression::bf16, 1, 1e-2});
  run_variant(3, rank_mode::threads, {comm::compression::fp16, 2, 1e-3});
}

// Model 20-32-16-5: weights of 640, 512 and 80 floats, biases of 32, 16, 5.
BOOST_AUTO_TEST_CASE(buckets_hold_whole_parameters_from_the_end_of_the_buffer) {
  auto m = make_model();
  comm::group_options go;  // a group of one
  go.store = std::make_shared<rendezvous::memory_store>();
  go.backend = "shm";
  auto c = comm::make_communicator(go).value();
  comm::gradient_sync_options so;
  so.first_bucket_bytes = 4 * 101;  // 5 + 80 + 16 fit, the 512 weight next would not
  so.bucket_bytes = 4 * 600;        // 512 + 32 fit; the 640 weight is a bucket of its own
  auto sync = comm::gradient_sync::create(*m, *c, so).value();
  using range = std::pair<int64_t, int64_t>;
  const std::vector<range> expected{{1184, 1285}, {640, 1184}, {0, 640}};
  BOOST_TEST((sync->bucket_ranges() == expected));
  // Each boundary is a parameter's.
  std::set<int64_t> edges{m->parameter_count()};
  for (const auto& slot : m->slots())
    edges.insert(slot.offset);
  for (const auto& [begin, end] : sync->bucket_ranges())
    BOOST_TEST((edges.count(begin) == 1 && edges.count(end) == 1));
  // One parameter larger than the first bucket's size: a bucket of its own.
  so.first_bucket_bytes = 4;
  so.bucket_bytes = 4;
  auto each = comm::gradient_sync::create(*m, *c, so).value();
  BOOST_TEST(each->bucket_count() == m->slots().size());
}

BOOST_AUTO_TEST_CASE(bad_options_are_refused) {
  auto m = make_model();
  auto store = std::make_shared<rendezvous::memory_store>();
  comm::group_options go;
  go.store = store;
  go.backend = "shm";
  auto c = comm::make_communicator(go).value();
  comm::gradient_sync_options so;
  so.aggregation_frequency = 0;
  auto bad = comm::gradient_sync::create(*m, *c, so);
  BOOST_REQUIRE(!bad.is_ok());
  BOOST_TEST(bad.error().message().find("aggregation_frequency") != std::string::npos);
  BOOST_TEST(!comm::parse_compression("fp8").is_ok());
  go.backend = "carrier-pigeon";
  auto unknown = comm::make_communicator(go);
  BOOST_REQUIRE(!unknown.is_ok());
  BOOST_TEST(unknown.error().message().find("carrier-pigeon") != std::string::npos);
}

BOOST_AUTO_TEST_SUITE_END()
