// Sizes that cannot be had are errors naming the size, never an abort:
// negative and overflowing shapes, allocations larger than the machine, and
// models whose layers are too large for it.
#include <boost/test/unit_test.hpp>

#include <limits>

#include "dtrain/cuda/runtime.hpp"
#include "dtrain/nn/layers.hpp"
#include "dtrain/nn/model.hpp"
#include "dtrain/tensor/tensor.hpp"

using namespace dtrain;

namespace {

bool mentions(const status& s, const std::string& text) {
  return s.message().find(text) != std::string::npos;
}

} // namespace

BOOST_AUTO_TEST_SUITE(tensor_allocation)

BOOST_AUTO_TEST_CASE(a_negative_dimension_is_an_invalid_argument_naming_the_shape) {
  auto t = tensor::try_empty({4, -2});
  BOOST_REQUIRE(!t.is_ok());
  BOOST_TEST((t.error().code() == error_code::invalid_argument));
  BOOST_TEST(mentions(t.error(), "[4, -2]"), t.error().message());
  BOOST_TEST(!checked_numel({-1}).is_ok());
}

BOOST_AUTO_TEST_CASE(an_element_count_past_64_bits_is_an_invalid_argument_not_a_wrapped_size) {
  const int64_t big = int64_t{1} << 32;
  auto n = checked_numel({big, big});  // 2^64: wraps to 0 unchecked
  BOOST_REQUIRE(!n.is_ok());
  BOOST_TEST((n.error().code() == error_code::invalid_argument));
  BOOST_TEST(mentions(n.error(), "does not fit in 64 bits"), n.error().message());
  auto bytes = checked_bytes({int64_t{1} << 62, 1});  // fits int64, but not * 4 bytes
  BOOST_REQUIRE(!bytes.is_ok());
  BOOST_TEST(mentions(bytes.error(), "address space"), bytes.error().message());
  BOOST_TEST(!tensor::try_zeros({big, big}).is_ok());
  BOOST_TEST(checked_numel({3, 0, int64_t{1} << 62}).value() == 0);  // zero is fine
  BOOST_TEST(checked_bytes({2, 3}).value() == 24u);
}

BOOST_AUTO_TEST_CASE(an_allocation_larger_than_the_machine_is_resource_exhausted_naming_its_size) {
  const size_t limit = host_allocation_limit();
  BOOST_REQUIRE(limit < std::numeric_limits<size_t>::max());  // sysconf answered
  const int64_t too_many = static_cast<int64_t>(limit / sizeof(float)) + 1024;
  auto t = tensor::try_zeros({too_many});
  BOOST_REQUIRE(!t.is_ok());
  BOOST_TEST_MESSAGE(t.error().to_string());
  BOOST_TEST((t.error().code() == error_code::resource_exhausted));
  BOOST_TEST(mentions(t.error(), "[" + std::to_string(too_many) + "]"));
  BOOST_TEST(mentions(t.error(), std::to_string(too_many * 4) + " bytes"));
  // And the allocator still works afterwards.
  auto small = tensor::try_zeros({16, 16});
  BOOST_REQUIRE(small.is_ok());
  BOOST_TEST(small->to_vector()[255] == 0.0f);
}

BOOST_AUTO_TEST_CASE(device_memory_on_a_machine_without_that_device_is_an_error) {
  auto t = tensor::try_empty({4}, device::cuda(cuda::device_count()));
  BOOST_REQUIRE(!t.is_ok());
  BOOST_TEST_MESSAGE(t.error().to_string());
  BOOST_TEST(mentions(t.error(), "cuda:" + std::to_string(cuda::device_count())));
}

BOOST_AUTO_TEST_CASE(a_model_with_a_huge_layer_fails_at_create_naming_the_layer_and_size) {
  nn::mlp_spec spec;
  spec.hidden = {100000000000};
  auto m = nn::model::create(nn::make_mlp(spec), {spec.inputs, device::cpu(), 1});
  BOOST_REQUIRE(!m.is_ok());
  BOOST_TEST_MESSAGE(m.error().to_string());
  BOOST_TEST((m.error().code() == error_code::resource_exhausted));
  BOOST_TEST(mentions(m.error(), "layer 1 linear(784->100000000000)"));
  BOOST_TEST(mentions(m.error(), "[784, 100000000000]"));
  BOOST_TEST(mentions(m.error(), "313600000000000 bytes"));
}

BOOST_AUTO_TEST_CASE(a_model_whose_parameter_count_overflows_is_an_invalid_argument) {
  nn::mlp_spec spec;
  spec.inputs = int64_t{1} << 40;
  spec.hidden = {int64_t{1} << 30};
  auto m = nn::model::create(nn::make_mlp(spec), {spec.inputs, device::cpu(), 1});
  BOOST_REQUIRE(!m.is_ok());
  BOOST_TEST_MESSAGE(m.error().to_string());
  BOOST_TEST((m.error().code() == error_code::invalid_argument));
  BOOST_TEST(mentions(m.error(), "layer 1 linear"));
}

BOOST_AUTO_TEST_CASE(a_model_whose_parameters_and_gradients_exceed_memory_is_refused) {
  // Each buffer alone fits in memory; both together do not.
  const int64_t floats = static_cast<int64_t>(host_allocation_limit() / sizeof(float) * 3 / 4);
  nn::mlp_spec spec;
  spec.inputs = floats / 16;
  spec.hidden = {};
  spec.outputs = 16;
  auto m = nn::model::create(nn::make_mlp(spec), {spec.inputs, device::cpu(), 1});
  BOOST_REQUIRE(!m.is_ok());
  BOOST_TEST_MESSAGE(m.error().to_string());
  BOOST_TEST((m.error().code() == error_code::resource_exhausted));
  BOOST_TEST(mentions(m.error(), "gradients"));
}

BOOST_AUTO_TEST_SUITE_END()
