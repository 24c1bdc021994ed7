// tensor_dataset and the synthetic linear regression.
#include <boost/test/unit_test.hpp>

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "dtrain/data/dataset.hpp"
#include "dtrain/data/synthetic.hpp"
#include "support/test_util.hpp"

namespace {

using dtrain::error_code;
using dtrain::tensor;
using dtrain::data::linear_regression_options;
using dtrain::data::make_linear_regression;
using dtrain::data::tensor_dataset;

// Least-squares fit of y ~ x . w + b by the normal equations in double,
// solved with Gaussian elimination; returns the residuals' RMS.
double least_squares_residual_rms(const std::vector<float>& x, const std::vector<float>& y,
                                  int64_t rows, int64_t cols) {
  const int64_t k = cols + 1;  // the last column is the constant 1 of the bias
  std::vector<double> a(static_cast<size_t>(k * (k + 1)), 0.0);  // [A | A^T y]
  auto feature = [&](int64_t i, int64_t j) {
    return j < cols ? static_cast<double>(x[static_cast<size_t>(i * cols + j)]) : 1.0;
  };
  for (int64_t i = 0; i < rows; ++i) {
    for (int64_t r = 0; r < k; ++r) {
      for (int64_t c = 0; c < k; ++c)
        a[static_cast<size_t>(r * (k + 1) + c)] += feature(i, r) * feature(i, c);
      a[static_cast<size_t>(r * (k + 1) + k)] += feature(i, r) * y[static_cast<size_t>(i)];
    }
  }
  for (int64_t p = 0; p < k; ++p) {  // positive definite: no pivoting needed
    for (int64_t r = p + 1; r < k; ++r) {
      double f = a[static_cast<size_t>(r * (k + 1) + p)] / a[static_cast<size_t>(p * (k + 1) + p)];
      for (int64_t c = p; c <= k; ++c)
        a[static_cast<size_t>(r * (k + 1) + c)] -= f * a[static_cast<size_t>(p * (k + 1) + c)];
    }
  }
  std::vector<double> w(static_cast<size_t>(k));
  for (int64_t r = k - 1; r >= 0; --r) {
    double sum = a[static_cast<size_t>(r * (k + 1) + k)];
    for (int64_t c = r + 1; c < k; ++c)
      sum -= a[static_cast<size_t>(r * (k + 1) + c)] * w[static_cast<size_t>(c)];
    w[static_cast<size_t>(r)] = sum / a[static_cast<size_t>(r * (k + 1) + r)];
  }
  double squares = 0;
  for (int64_t i = 0; i < rows; ++i) {
    double fit = 0;
    for (int64_t j = 0; j < k; ++j)
      fit += feature(i, j) * w[static_cast<size_t>(j)];
    squares += (fit - y[static_cast<size_t>(i)]) * (fit - y[static_cast<size_t>(i)]);
  }
  return std::sqrt(squares / static_cast<double>(rows));
}

double standard_deviation(const std::vector<float>& v) {
  double mean = 0, squares = 0;
  for (float e : v)
    mean += e;
  mean /= static_cast<double>(v.size());
  for (float e : v)
    squares += (e - mean) * (e - mean);
  return std::sqrt(squares / static_cast<double>(v.size()));
}

// Rows i = [i, 10 i, 100 i] with targets [-i, i / 2].
std::shared_ptr<tensor_dataset> small_dataset() {
  std::vector<float> x, y;
  for (int i = 0; i < 5; ++i) {
    x.insert(x.end(), {1.0f * i, 10.0f * i, 100.0f * i});
    y.insert(y.end(), {-1.0f * i, 0.5f * i});
  }
  auto made = tensor_dataset::create(tensor::from_vector(x, {5, 3}),
                                     tensor::from_vector(y, {5, 2}), "small");
  BOOST_TEST_REQUIRE(made.is_ok(), made.error().to_string());
  return *made;
}

} // namespace

BOOST_AUTO_TEST_SUITE(datasets)

BOOST_AUTO_TEST_CASE(tensor_dataset_reports_its_size_widths_and_name) {
  auto keep = small_dataset();
  const auto& data = *keep;
  BOOST_TEST(data.size() == 5);
  BOOST_TEST(data.feature_count() == 3);
  BOOST_TEST(data.target_count() == 2);
  BOOST_TEST(data.name() == "small");
}

BOOST_AUTO_TEST_CASE(gather_copies_the_requested_rows_in_the_requested_order) {
  auto keep = small_dataset();
  const auto& data = *keep;
  const int64_t indices[] = {4, 0, 4, 2};
  std::vector<float> x(4 * 3), y(4 * 2);
  data.gather(indices, 4, x.data(), y.data());
  BOOST_TEST(x == (std::vector<float>{4, 40, 400, 0, 0, 0, 4, 40, 400, 2, 20, 200}),
             boost::test_tools::per_element());
  BOOST_TEST(y == (std::vector<float>{-4, 2, 0, 0, -4, 2, -2, 1}),
             boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(one_dimensional_targets_count_as_one_target_per_sample) {
  auto made = tensor_dataset::create(tensor::zeros({7, 4}), tensor::zeros({7}), "flat");
  BOOST_TEST_REQUIRE(made.is_ok(), made.error().to_string());
  BOOST_TEST((*made)->target_count() == 1);
  BOOST_TEST((*made)->feature_count() == 4);
}

BOOST_AUTO_TEST_CASE(images_with_several_feature_axes_count_all_their_values) {
  auto made = tensor_dataset::create(tensor::zeros({3, 28, 28}), tensor::zeros({3}), "img");
  BOOST_TEST_REQUIRE(made.is_ok(), made.error().to_string());
  BOOST_TEST((*made)->feature_count() == 784);
}

BOOST_AUTO_TEST_CASE(row_count_mismatch_is_a_shape_mismatch_naming_the_dataset) {
  auto made = tensor_dataset::create(tensor::zeros({7, 4}), tensor::zeros({6}), "uneven");
  BOOST_TEST_REQUIRE(!made.is_ok());
  BOOST_TEST(made.error().code() == error_code::shape_mismatch);
  const std::string& msg = made.error().message();
  BOOST_TEST(msg.find("uneven") != std::string::npos, msg);
  BOOST_TEST(msg.find("[7, 4]") != std::string::npos, msg);
  BOOST_TEST(msg.find("[6]") != std::string::npos, msg);
}

BOOST_AUTO_TEST_CASE(undefined_or_scalar_tensors_are_a_shape_mismatch) {
  auto no_features = tensor_dataset::create(tensor(), tensor::zeros({2}), "a");
  auto scalar_targets = tensor_dataset::create(tensor::zeros({2, 2}), tensor::zeros({}), "b");
  BOOST_TEST(no_features.error().code() == error_code::shape_mismatch);
  BOOST_TEST(scalar_targets.error().code() == error_code::shape_mismatch);
}

BOOST_AUTO_TEST_CASE(linear_regression_has_the_tutorial_shape_and_range) {
  auto made = make_linear_regression({});
  BOOST_TEST_REQUIRE(made.is_ok(), made.error().to_string());
  const auto& data = **made;
  BOOST_TEST(data.size() == 10000);
  BOOST_TEST(data.feature_count() == 10);
  BOOST_TEST(data.target_count() == 1);
  for (const tensor* t : {&data.features(), &data.targets()}) {
    double mean = 0;
    for (float v : t->to_vector()) {
      BOOST_TEST_REQUIRE((v >= 0.0f && v < 1.0f));
      mean += v;
    }
    BOOST_TEST(mean / static_cast<double>(t->numel()) == 0.5, boost::test_tools::tolerance(0.02));
  }
}

BOOST_AUTO_TEST_CASE(linear_regression_is_deterministic_by_seed) {
  linear_regression_options options;
  options.seed = 42;
  options.planted = true;
  auto a = make_linear_regression(options);
  auto b = make_linear_regression(options);
  options.seed = 43;
  auto c = make_linear_regression(options);
  BOOST_TEST_REQUIRE((a.is_ok() && b.is_ok() && c.is_ok()));
  BOOST_TEST((*a)->features().bitwise_equal((*b)->features()));
  BOOST_TEST((*a)->targets().bitwise_equal((*b)->targets()));
  BOOST_TEST(!(*a)->features().bitwise_equal((*c)->features()));
  BOOST_TEST(!(*a)->targets().bitwise_equal((*c)->targets()));
}

BOOST_AUTO_TEST_CASE(planting_targets_leaves_the_features_unchanged) {
  linear_regression_options options;
  options.seed = 7;
  auto plain = make_linear_regression(options);
  options.planted = true;
  auto planted = make_linear_regression(options);
  BOOST_TEST_REQUIRE((plain.is_ok() && planted.is_ok()));
  BOOST_TEST((*plain)->features().bitwise_equal((*planted)->features()));
}

BOOST_AUTO_TEST_CASE(planted_targets_are_a_linear_function_of_the_features_plus_noise) {
  linear_regression_options options;
  options.planted = true;
  options.noise = 0.01f;
  options.seed = 3;
  auto made = make_linear_regression(options);
  BOOST_TEST_REQUIRE(made.is_ok(), made.error().to_string());
  auto x = (*made)->features().to_vector();
  auto y = (*made)->targets().to_vector();
  double rms = least_squares_residual_rms(x, y, options.samples, options.features);
  // The best linear fit leaves exactly the planted noise, while the targets
  // themselves vary far more (w ~ N(0, 1) over 10 uniform features).
  BOOST_TEST(rms == 0.01, boost::test_tools::tolerance(0.1));
  BOOST_TEST(standard_deviation(y) > 0.1);
}

BOOST_AUTO_TEST_CASE(unplanted_targets_are_not_linear_in_the_features) {
  auto made = make_linear_regression({});
  BOOST_TEST_REQUIRE(made.is_ok(), made.error().to_string());
  double rms = least_squares_residual_rms((*made)->features().to_vector(),
                                          (*made)->targets().to_vector(), 10000, 10);
  BOOST_TEST(rms == 1.0 / std::sqrt(12.0), boost::test_tools::tolerance(0.05));
}

BOOST_AUTO_TEST_CASE(invalid_linear_regression_options_name_the_field) {
  linear_regression_options options;
  options.features = 0;
  auto made = make_linear_regression(options);
  BOOST_TEST_REQUIRE(!made.is_ok());
  BOOST_TEST(made.error().code() == error_code::invalid_argument);
  BOOST_TEST(made.error().message().find("features") != std::string::npos);
  options = {};
  options.samples = -1;
  BOOST_TEST(make_linear_regression(options).error().code() == error_code::invalid_argument);
}

BOOST_AUTO_TEST_SUITE_END()
