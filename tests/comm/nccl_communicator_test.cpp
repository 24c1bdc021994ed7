// The NCCL communicator on one GPU. NCCL refuses two ranks on one device, so
// the collectives run in a group of one, where each must leave its buffers
// exactly as the CPU expects (all_reduce and reduce_scatter: the input for
// every op; all_gather and gather: a copy; broadcast: unchanged). Without a
// device, or in a build without NCCL, every test logs why and passes.
#include <boost/test/unit_test.hpp>

#include "dtrain/build_config.hpp"
#include "dtrain/cuda/runtime.hpp"

#if DTRAIN_HAS_NCCL

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "dtrain/comm/nccl.hpp"
#include "dtrain/rendezvous/store.hpp"
#include "dtrain/tensor/ops.hpp"
#include "dtrain/tensor/tensor.hpp"
#include "support/test_util.hpp"

namespace {

using dtrain::device;
using dtrain::error_code;
using dtrain::tensor;
using dtrain::rendezvous::memory_store;
using dtrain::comm::reduce_op;
using dtrain::comm::work_ptr;
using dtrain::testing::random_tensor;
using std::chrono::milliseconds;
namespace cuda = dtrain::cuda;
// Not `nccl_communicator`: that is the suite's name (a namespace) too.
using nccl_group = dtrain::comm::nccl_communicator;

constexpr milliseconds op_timeout{60000};
/// One element, an odd count, and 16M floats (64 MiB, NCCL's large-message path).
constexpr int64_t sizes[] = {1, 100003, int64_t{16} << 20};
constexpr reduce_op all_ops[] = {reduce_op::sum, reduce_op::average, reduce_op::min,
                                 reduce_op::max};


/// A group of one on cuda:0, rendezvousing through a fresh memory_store.
std::unique_ptr<nccl_group> group_of_one() {
  auto made = nccl_group::create(0, 1, 0, std::make_shared<memory_store>(), op_timeout);
  BOOST_TEST_REQUIRE(made.is_ok(), made.error().to_string());
  return std::move(made).value();
}

/// Fresh random values on the host, and a device copy of them.
struct inputs {
  std::vector<float> host;
  tensor gpu;
};

inputs random_inputs(int64_t n, uint64_t seed) {
  tensor host = random_tensor({n}, seed);
  return {host.to_vector(), host.to(device::cuda())};
}

tensor nan_filled(int64_t n) { return tensor::full({n}, NAN, device::cuda()); }

void expect_ok(const work_ptr& w, const std::string& what) {
  dtrain::status s = w->wait();
  BOOST_TEST(s.is_ok(), what << ": " << s.to_string());
}

/// Exact comparison: a group of one moves values, it does not compute with them.
void expect_values(const tensor& got, const std::vector<float>& want, const std::string& what) {
  std::vector<float> values = got.to_vector();
  BOOST_TEST_REQUIRE(values.size() == want.size(), what << ": " << values.size() << " values");
  auto diff = std::mismatch(values.begin(), values.end(), want.begin());
  if (diff.first == values.end())
    return;
  BOOST_TEST(false, what << ": element " << (diff.first - values.begin()) << " is "
                         << *diff.first << ", expected " << *diff.second);
}

std::string label(const char* op, int64_t n) { return std::string(op) + " of " + std::to_string(n); }

std::string label(const char* op, reduce_op r, int64_t n) {
  return std::string(op) + " " + dtrain::comm::to_string(r) + " of " + std::to_string(n);
}

} // namespace

BOOST_AUTO_TEST_SUITE(nccl_communicator)

BOOST_AUTO_TEST_CASE(group_of_one_reports_itself_and_takes_only_device_buffers) {
  if (!dtrain::testing::cuda_device_or_skip())
    return;
  auto comm = group_of_one();
  BOOST_TEST(comm->rank() == 0);
  BOOST_TEST(comm->size() == 1);
  BOOST_TEST(comm->backend() == "nccl");
  BOOST_TEST(comm->supports(device::cuda(0)));
  BOOST_TEST(!comm->supports(device::cpu()));
  dtrain::status s = comm->all_reduce(tensor::zeros({4}), reduce_op::sum)->wait();
  BOOST_TEST((s.code() == error_code::invalid_argument), s.to_string());
  BOOST_TEST(!comm->broken());  // refused at issue, nothing ran
}

BOOST_AUTO_TEST_CASE(all_reduce_in_a_group_of_one_leaves_the_buffer_as_it_was) {
  if (!dtrain::testing::cuda_device_or_skip())
    return;
  auto comm = group_of_one();
  uint64_t seed = 100;
  for (int64_t n : sizes)
    for (reduce_op op : all_ops) {
      inputs in = random_inputs(n, ++seed);
      expect_ok(comm->all_reduce(in.gpu, op), label("all_reduce", op, n));
      expect_values(in.gpu, in.host, label("all_reduce", op, n));
    }
}

BOOST_AUTO_TEST_CASE(broadcast_from_the_only_rank_keeps_the_buffer) {
  if (!dtrain::testing::cuda_device_or_skip())
    return;
  auto comm = group_of_one();
  uint64_t seed = 200;
  for (int64_t n : sizes) {
    inputs in = random_inputs(n, ++seed);
    expect_ok(comm->broadcast(in.gpu, 0), label("broadcast", n));
    expect_values(in.gpu, in.host, label("broadcast", n));
  }
}

BOOST_AUTO_TEST_CASE(all_gather_in_a_group_of_one_copies_the_input) {
  if (!dtrain::testing::cuda_device_or_skip())
    return;
  auto comm = group_of_one();
  uint64_t seed = 300;
  for (int64_t n : sizes) {
    inputs in = random_inputs(n, ++seed);
    tensor out = nan_filled(n);
    expect_ok(comm->all_gather(in.gpu, out), label("all_gather", n));
    expect_values(out, in.host, label("all_gather", n));
    expect_values(in.gpu, in.host, label("all_gather input", n));
  }
}

BOOST_AUTO_TEST_CASE(gather_at_the_only_rank_copies_the_input) {
  if (!dtrain::testing::cuda_device_or_skip())
    return;
  auto comm = group_of_one();
  uint64_t seed = 400;
  for (int64_t n : sizes) {
    inputs in = random_inputs(n, ++seed);
    tensor out = nan_filled(n);
    expect_ok(comm->gather(in.gpu, out, 0), label("gather", n));
    expect_values(out, in.host, label("gather", n));
  }
}

BOOST_AUTO_TEST_CASE(reduce_scatter_in_a_group_of_one_copies_the_input_for_every_op) {
  if (!dtrain::testing::cuda_device_or_skip())
    return;
  auto comm = group_of_one();
  uint64_t seed = 500;
  for (int64_t n : sizes)
    for (reduce_op op : all_ops) {
      inputs in = random_inputs(n, ++seed);
      tensor out = nan_filled(n);
      expect_ok(comm->reduce_scatter(in.gpu, out, op), label("reduce_scatter", op, n));
      expect_values(out, in.host, label("reduce_scatter", op, n));
    }
}

BOOST_AUTO_TEST_CASE(operations_issued_back_to_back_all_complete) {
  if (!dtrain::testing::cuda_device_or_skip())
    return;
  auto comm = group_of_one();
  std::vector<inputs> buffers;
  std::vector<work_ptr> works;
  for (int i = 0; i < 8; ++i) {
    buffers.push_back(random_inputs(100003, 600 + static_cast<uint64_t>(i)));
    works.push_back(comm->all_reduce(buffers.back().gpu, reduce_op::sum));
    works.push_back(comm->barrier());
  }
  for (size_t i = 0; i < works.size(); ++i)
    expect_ok(works[i], "operation " + std::to_string(i));
  for (size_t i = 0; i < buffers.size(); ++i)
    expect_values(buffers[i].gpu, buffers[i].host, "all_reduce " + std::to_string(i));
  BOOST_TEST(!comm->broken());
}

BOOST_AUTO_TEST_CASE(inputs_written_on_the_default_stream_are_seen_without_a_synchronize) {
  if (!dtrain::testing::cuda_device_or_skip())
    return;
  auto comm = group_of_one();
  const int64_t n = sizes[2];
  inputs in = random_inputs(n, 700);
  tensor out = nan_filled(n);  // first: its synchronous copy would wait for the kernels
  // Some milliseconds of kernels on the default stream, not waited for,
  // leaving 2x: powers of two keep every value exact. all_gather is out of
  // place, so a copy that ran early would show the values half-way.
  dtrain::ops::scale(in.gpu, 2.0f);
  for (int i = 0; i < 100; ++i) {
    dtrain::ops::scale(in.gpu, 0.5f);
    dtrain::ops::scale(in.gpu, 2.0f);
  }
  expect_ok(comm->all_gather(in.gpu, out), "all_gather after scale");
  std::vector<float> doubled = in.host;
  for (float& v : doubled)
    v *= 2.0f;
  expect_values(out, doubled, "all_gather after scale");
}

BOOST_AUTO_TEST_CASE(abort_makes_every_later_operation_fail_with_aborted) {
  if (!dtrain::testing::cuda_device_or_skip())
    return;
  auto comm = group_of_one();
  expect_ok(comm->barrier(), "barrier before abort");
  comm->abort("the test aborts");
  BOOST_TEST(comm->broken());
  BOOST_TEST(comm->broken_reason().message().find("the test aborts") != std::string::npos,
             comm->broken_reason().to_string());
  inputs in = random_inputs(1000, 800);
  dtrain::status s = comm->all_reduce(in.gpu, reduce_op::sum)->wait();
  BOOST_TEST((s.code() == error_code::aborted), s.to_string());
  s = comm->barrier()->wait();
  BOOST_TEST((s.code() == error_code::aborted), s.to_string());
}

BOOST_AUTO_TEST_CASE(create_refuses_a_rank_outside_the_group_and_a_missing_device) {
  if (!dtrain::testing::cuda_device_or_skip())
    return;
  auto store = std::make_shared<memory_store>();
  auto bad_rank = nccl_group::create(1, 1, 0, store, op_timeout);
  BOOST_TEST_REQUIRE(!bad_rank.is_ok());
  BOOST_TEST((bad_rank.error().code() == error_code::invalid_argument),
             bad_rank.error().to_string());
  auto bad_device = nccl_group::create(0, 1, cuda::device_count(), store, op_timeout);
  BOOST_TEST_REQUIRE(!bad_device.is_ok());
  BOOST_TEST((bad_device.error().code() == error_code::out_of_range),
             bad_device.error().to_string());
}

BOOST_AUTO_TEST_CASE(a_rank_without_the_unique_id_times_out) {
  if (!dtrain::testing::cuda_device_or_skip())
    return;
  // Rank 1 of 2 waits for rank 0's id, which never comes.
  auto start = std::chrono::steady_clock::now();
  auto made = nccl_group::create(1, 2, 0, std::make_shared<memory_store>(),
                                        milliseconds(500));
  auto waited = std::chrono::steady_clock::now() - start;
  BOOST_TEST_REQUIRE(!made.is_ok());
  BOOST_TEST((made.error().code() == error_code::timeout), made.error().to_string());
  BOOST_TEST(made.error().message().find("unique id") != std::string::npos,
             made.error().to_string());
  BOOST_TEST((waited < milliseconds(10000)));
}

BOOST_AUTO_TEST_CASE(initialization_gives_up_at_the_timeout_when_a_rank_never_joins) {
  if (!dtrain::testing::cuda_device_or_skip())
    return;
  // Rank 0 of 2 publishes its id and starts NCCL; rank 1 never does. The
  // non-blocking init must be aborted at the deadline instead of hanging.
  auto start = std::chrono::steady_clock::now();
  auto made = nccl_group::create(0, 2, 0, std::make_shared<memory_store>(),
                                        milliseconds(2000));
  auto waited = std::chrono::steady_clock::now() - start;
  BOOST_TEST_REQUIRE(!made.is_ok());
  BOOST_TEST((made.error().code() == error_code::timeout), made.error().to_string());
  BOOST_TEST((waited >= milliseconds(2000)));
  BOOST_TEST((waited < milliseconds(30000)),
             "abort took " << std::chrono::duration_cast<milliseconds>(waited).count() << " ms");
}

BOOST_AUTO_TEST_SUITE_END()

#else // no NCCL in this build

BOOST_AUTO_TEST_SUITE(nccl_communicator)

BOOST_AUTO_TEST_CASE(is_skipped_in_a_build_without_nccl) {
  // Without NCCL there is nothing to run, even where cuda::available() (a
  // CUDA build whose toolkit lacked NCCL).
  BOOST_TEST_MESSAGE("SKIPPED (no CUDA device: built without NCCL)");
}

BOOST_AUTO_TEST_SUITE_END()

#endif
