#include <boost/test/unit_test.hpp>

#include <string>

#include "dtrain/core/check.hpp"
#include "dtrain/core/random.hpp"
#include "dtrain/core/status.hpp"

using namespace dtrain;

namespace {

result<int> parse_positive(int v) {
  if (v <= 0)
    return invalid_argument("value " + std::to_string(v) + " is not positive");
  return v;
}

result<int> doubled(int v) {
  DTRAIN_ASSIGN_OR_RETURN(int x, parse_positive(v));
  return 2 * x;
}

status chained(int v) {
  DTRAIN_RETURN_IF_ERROR(parse_positive(v).to_status().with_context("reading v"));
  return status::ok();
}

} // namespace

BOOST_AUTO_TEST_SUITE(status_and_result)

BOOST_AUTO_TEST_CASE(ok_status_is_ok_and_prints_ok) {
  dtrain::status s;
  BOOST_TEST(s.is_ok());
  BOOST_TEST(s.to_string() == "ok");
}

BOOST_AUTO_TEST_CASE(error_carries_code_and_message) {
  dtrain::status s = corrupt_data("file x.idx: bad magic");
  BOOST_TEST(!s.is_ok());
  BOOST_TEST((s.code() == error_code::corrupt_data));
  BOOST_TEST(s.to_string() == "corrupt_data: file x.idx: bad magic");
}

BOOST_AUTO_TEST_CASE(context_is_prepended_outermost_first) {
  dtrain::status s = chained(-3);
  BOOST_TEST(s.message() == "reading v: value -3 is not positive");
  BOOST_TEST(chained(4).is_ok());
}

BOOST_AUTO_TEST_CASE(assign_or_return_unwraps_values_and_passes_errors) {
  BOOST_TEST(doubled(21).value() == 42);
  auto bad = doubled(0);
  BOOST_TEST(!bad.is_ok());
  BOOST_TEST((bad.error().code() == error_code::invalid_argument));
}

BOOST_AUTO_TEST_CASE(result_from_ok_status_becomes_internal_error) {
  result<int> r{dtrain::status::ok()};
  BOOST_TEST(!r.is_ok());
  BOOST_TEST((r.error().code() == error_code::internal));
}

BOOST_AUTO_TEST_CASE(rng_is_deterministic_and_uniform_in_range) {
  rng a(7), b(7), c(8);
  bool differs = false;
  for (int i = 0; i < 1000; ++i) {
    float x = a.uniform();
    BOOST_TEST(x == b.uniform());
    differs |= x != c.uniform();
    BOOST_TEST((x >= 0.0f && x < 1.0f));
  }
  BOOST_TEST(differs);
}

BOOST_AUTO_TEST_CASE(rng_normal_has_zero_mean_and_unit_variance) {
  rng gen(1);
  double sum = 0, sq = 0;
  const int n = 200000;
  for (int i = 0; i < n; ++i) {
    double v = gen.normal();
    sum += v;
    sq += v * v;
  }
  BOOST_TEST(std::abs(sum / n) < 0.01);
  BOOST_TEST(std::abs(sq / n - 1.0) < 0.02);
}

BOOST_AUTO_TEST_CASE(shuffle_is_a_permutation) {
  rng gen(3);
  std::vector<int> v(100);
  for (int i = 0; i < 100; ++i)
    v[i] = i;
  gen.shuffle(v.data(), 100);
  std::vector<int> sorted = v;
  std::sort(sorted.begin(), sorted.end());
  for (int i = 0; i < 100; ++i)
    BOOST_TEST(sorted[i] == i);
  BOOST_TEST(v != sorted);
}

BOOST_AUTO_TEST_SUITE_END()
