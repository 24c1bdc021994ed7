// The concrete transforms (normalize, standardize, random_crop,
// horizontal_flip) on small hand-made samples, and the mean/std they are
// built from against numbers computed by hand.
#include <boost/test/unit_test.hpp>

#include <cmath>
#include <cstdint>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "dtrain/core/random.hpp"
#include "dtrain/data/dataset.hpp"
#include "dtrain/data/transforms.hpp"

namespace {

using dtrain::error_code;
using dtrain::rng;
using dtrain::data::compute_normalization;
using dtrain::data::compute_standardization;
using dtrain::data::horizontal_flip;
using dtrain::data::normalize;
using dtrain::data::random_crop;
using dtrain::data::standardize;
using shape = std::vector<int64_t>;

// 0, 1, 2, ...: every value tells its place.
std::vector<float> iota(int64_t n) {
  std::vector<float> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i)
    v[static_cast<size_t>(i)] = static_cast<float>(i);
  return v;
}

/// A dataset of images {C, H, W} whose features are listed by hand.
class listed_images final : public dtrain::data::dataset {
public:
  listed_images(std::vector<std::vector<float>> samples, shape sample_shape)
    : samples_(std::move(samples)), shape_(std::move(sample_shape)) {}
  int64_t size() const override { return static_cast<int64_t>(samples_.size()); }
  int64_t feature_count() const override { return static_cast<int64_t>(samples_[0].size()); }
  int64_t target_count() const override { return 1; }
  std::string name() const override { return "listed images"; }
  shape sample_shape() const override { return shape_; }
  dtrain::status gather(const int64_t* indices, int64_t n, float* features,
                        float* targets) const override {
    for (int64_t i = 0; i < n; ++i) {
      const auto& s = samples_[static_cast<size_t>(indices[i])];
      std::copy(s.begin(), s.end(), features + i * feature_count());
      targets[i] = 0;
    }
    return dtrain::status::ok();
  }

private:
  std::vector<std::vector<float>> samples_;
  shape shape_;
};

} // namespace

BOOST_AUTO_TEST_SUITE(transforms)

BOOST_AUTO_TEST_CASE(normalize_subtracts_and_divides_per_channel) {
  auto t = normalize::create({1.0f, 10.0f}, {2.0f, 4.0f});
  BOOST_REQUIRE(t.is_ok());
  std::vector<float> x = {1, 3, 5, 7, 10, 14, 18, 22};  // {2, 2, 2}
  rng gen(0);
  BOOST_TEST(t.value()->check_shape({2, 2, 2}).is_ok());
  t.value()->apply(x.data(), {2, 2, 2}, gen);
  BOOST_TEST(x == (std::vector<float>{0, 1, 2, 3, 0, 1, 2, 3}), boost::test_tools::per_element());
  BOOST_TEST(t.value()->check_shape({3, 2, 2}).code() == error_code::shape_mismatch);
  auto one = normalize::create({2.0f}, {0.5f});
  std::vector<float> y = {2, 3, 4};
  one.value()->apply(y.data(), {3}, gen);
  BOOST_TEST(y == (std::vector<float>{0, 2, 4}), boost::test_tools::per_element());
  BOOST_TEST(normalize::create({0.0f}, {0.0f}).error().code() == error_code::invalid_argument);
  BOOST_TEST(normalize::create({0.0f, 1.0f}, {1.0f}).error().code() == error_code::invalid_argument);
  BOOST_TEST(normalize::create({}, {}).error().code() == error_code::invalid_argument);
}

BOOST_AUTO_TEST_CASE(standardize_works_feature_by_feature) {
  auto t = standardize::create({1, 2, 3}, {1, 2, 4});
  BOOST_REQUIRE(t.is_ok());
  std::vector<float> x = {2, 6, 11};
  rng gen(0);
  t.value()->apply(x.data(), {3}, gen);
  BOOST_TEST(x == (std::vector<float>{1, 2, 2}), boost::test_tools::per_element());
  BOOST_TEST(t.value()->check_shape({4}).code() == error_code::shape_mismatch);
  BOOST_TEST(standardize::create({1}, {-1}).error().code() == error_code::invalid_argument);
}

BOOST_AUTO_TEST_CASE(compute_normalization_matches_hand_computed_moments) {
  // Two samples {2, 1, 2}: channel 0 holds 1, 3 | 5, 7; channel 1 holds
  // 10, 10 | 10, 10 (constant: std falls back to 1).
  listed_images data({{1, 3, 10, 10}, {5, 7, 10, 10}}, {2, 1, 2});
  auto per_channel = compute_normalization(data, true);
  BOOST_REQUIRE_MESSAGE(per_channel.is_ok(), per_channel.error().to_string());
  // channel 0: mean 4, variance (9 + 1 + 1 + 9) / 4 = 5
  BOOST_TEST(per_channel->mean == (std::vector<float>{4, 10}), boost::test_tools::per_element());
  BOOST_TEST(per_channel->std[0] == std::sqrt(5.0f), boost::test_tools::tolerance(1e-6f));
  BOOST_TEST(per_channel->std[1] == 1.0f);
  auto global = compute_normalization(data, false);
  BOOST_REQUIRE(global.is_ok());
  // all 8 values: mean 7, squared deviations 36 + 16 + 9 + 9 + 4 + 0 + 9 + 9 = 92
  BOOST_TEST(global->mean[0] == 7.0f);
  BOOST_TEST(global->std[0] == std::sqrt(92.0f / 8), boost::test_tools::tolerance(1e-6f));
  auto features = compute_standardization(data);
  BOOST_REQUIRE(features.is_ok());
  BOOST_TEST(features->mean == (std::vector<float>{3, 5, 10, 10}), boost::test_tools::per_element());
  BOOST_TEST(features->std == (std::vector<float>{2, 2, 1, 1}), boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(compute_normalization_agrees_across_chunks_on_a_large_set) {
  // 600 samples of 2048 features: several gather chunks of 512 samples.
  std::vector<std::vector<float>> samples;
  double sum = 0, squares = 0;
  rng gen(7);
  for (int i = 0; i < 600; ++i) {
    std::vector<float> s(2048);
    for (float& v : s) {
      v = 1000.0f + gen.uniform();  // a large offset: naive sums would lose it
      sum += v;
    }
    samples.push_back(s);
  }
  const double mean = sum / (600.0 * 2048);
  for (const auto& s : samples)
    for (float v : s)
      squares += (v - mean) * (v - mean);
  listed_images data(samples, {2048});
  auto got = compute_normalization(data, false);
  BOOST_REQUIRE(got.is_ok());
  BOOST_TEST(got->mean[0] == static_cast<float>(mean), boost::test_tools::tolerance(1e-6f));
  BOOST_TEST(got->std[0] == static_cast<float>(std::sqrt(squares / (600.0 * 2048))),
             boost::test_tools::tolerance(1e-4f));
}

BOOST_AUTO_TEST_CASE(random_crop_with_padding_zero_is_the_identity) {
  auto t = random_crop::create(0);
  BOOST_REQUIRE(t.is_ok());
  for (uint64_t seed = 0; seed < 20; ++seed) {
    std::vector<float> x = iota(2 * 3 * 4);
    rng gen(seed);
    t.value()->apply(x.data(), {2, 3, 4}, gen);
    BOOST_TEST(x == iota(24), boost::test_tools::per_element());
  }
  BOOST_TEST(random_crop::create(-1).error().code() == error_code::invalid_argument);
  BOOST_TEST(t.value()->check_shape({5}).code() == error_code::shape_mismatch);
}

BOOST_AUTO_TEST_CASE(random_crop_shifts_by_the_drawn_offset_and_pads_zeros) {
  auto t = random_crop::create(1);
  BOOST_REQUIRE(t.is_ok());
  std::set<std::pair<int64_t, int64_t>> offsets;
  for (uint64_t seed = 0; seed < 200; ++seed) {
    // What the crop draws: rows then columns, each below(3), minus padding.
    rng twin(seed);
    const int64_t dy = static_cast<int64_t>(twin.below(3)) - 1;
    const int64_t dx = static_cast<int64_t>(twin.below(3)) - 1;
    offsets.insert({dy, dx});
    std::vector<float> x = iota(2 * 3 * 3);
    rng gen(seed);
    t.value()->apply(x.data(), {2, 3, 3}, gen);
    for (int64_t c = 0; c < 2; ++c)
      for (int64_t y = 0; y < 3; ++y)
        for (int64_t xx = 0; xx < 3; ++xx) {
          const int64_t sy = y + dy, sx = xx + dx;
          const bool inside = sy >= 0 && sy < 3 && sx >= 0 && sx < 3;
          const float want = inside ? static_cast<float>(c * 9 + sy * 3 + sx) : 0.0f;
          BOOST_REQUIRE_EQUAL(x[static_cast<size_t>(c * 9 + y * 3 + xx)], want);
        }
    // The same seed gives the same crop.
    std::vector<float> again = iota(18);
    rng same(seed);
    t.value()->apply(again.data(), {2, 3, 3}, same);
    BOOST_REQUIRE(again == x);
  }
  BOOST_TEST(offsets.size() == 9u);  // every offset of [-1, 1]^2 drawn
}

BOOST_AUTO_TEST_CASE(horizontal_flip_mirrors_rows_and_twice_is_the_identity) {
  auto always = horizontal_flip::create(1.0f);
  BOOST_REQUIRE(always.is_ok());
  std::vector<float> x = iota(2 * 2 * 3);
  rng gen(1);
  always.value()->apply(x.data(), {2, 2, 3}, gen);
  BOOST_TEST(x == (std::vector<float>{2, 1, 0, 5, 4, 3, 8, 7, 6, 11, 10, 9}),
             boost::test_tools::per_element());
  always.value()->apply(x.data(), {2, 2, 3}, gen);
  BOOST_TEST(x == iota(12), boost::test_tools::per_element());
  auto never = horizontal_flip::create(0.0f);
  never.value()->apply(x.data(), {2, 2, 3}, gen);
  BOOST_TEST(x == iota(12), boost::test_tools::per_element());
  // p = 0.5 flips as often as gen.uniform() < 0.5 says, seed for seed.
  auto half = horizontal_flip::create();
  int flips = 0;
  for (uint64_t seed = 0; seed < 400; ++seed) {
    std::vector<float> y = iota(6);
    rng a(seed), b(seed);
    half.value()->apply(y.data(), {1, 2, 3}, a);
    const bool flipped = y[0] == 2.0f;
    BOOST_REQUIRE_EQUAL(flipped, b.uniform() < 0.5f);
    flips += flipped ? 1 : 0;
  }
  BOOST_TEST(flips > 150);
  BOOST_TEST(flips < 250);
  BOOST_TEST(horizontal_flip::create(1.5f).error().code() == error_code::invalid_argument);
}

BOOST_AUTO_TEST_CASE(names_describe_the_arguments) {
  BOOST_TEST(normalize::create({0.5f}, {0.25f}).value()->name() ==
             "normalize(mean [0.5], std [0.25])");
  BOOST_TEST(random_crop::create(4).value()->name() == "random_crop(padding 4)");
  BOOST_TEST(horizontal_flip::create().value()->name() == "horizontal_flip(p 0.5)");
}

BOOST_AUTO_TEST_SUITE_END()
