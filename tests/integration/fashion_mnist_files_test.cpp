// Fashion-MNIST from files, with no code: Debian's IDX files written here as
// a CSV table (label first, pixels as integers 0..255) and as a tree of PNG
// files (train/<class>/<index>.png), then trained by the built-in operators
// from the shipped experiment files plus a data: section (the CSV scaled by
// 1/255, as the built-in path scales), by 2 replicas (threads over the shm
// communicator), the path fashion_mnist_cnn_training takes: the MLP from
// CSV to 0.88 test accuracy (the file's 15 epochs), the CNN from PNG to
// what its epochs allow (DTRAIN_FILES_TEST_CNN_EPOCHS; 0.916 needs the
// file's 8, too slow for this suite: see the case).
#include <boost/test/unit_test.hpp>

#include <charconv>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "dtrain/core/check.hpp"
#include "dtrain/data/idx.hpp"
#include "dtrain/datasets/source.hpp"
#include "dtrain/experiments/experiment.hpp"
#include "dtrain/train/file_data.hpp"
#include "support/png_writer.hpp"
#include "support/replica_group.hpp"
#include "support/test_util.hpp"

using namespace dtrain;
using namespace dtrain::testing;
using clock_type = std::chrono::steady_clock;

namespace {

double seconds_since(clock_type::time_point start) {
  return std::chrono::duration<double>(clock_type::now() - start).count();
}

std::string setting(const char* name, const std::string& fallback) {
  const char* env = std::getenv(name);
  return env != nullptr && *env != 0 ? env : fallback;
}

// One split of Debian's Fashion-MNIST, as the built-in path reads it.
std::shared_ptr<data::tensor_dataset> load(data::split which) {
  auto set = data::load_fashion_mnist(fashion_mnist_dir(), which);
  BOOST_TEST_REQUIRE(set.is_ok(), set.error().to_string());
  return *set;
}

// Sample i's pixels as bytes (the loader's x / 255 undone) and its label.
void sample_bytes(const data::dataset& set, int64_t i, std::vector<uint8_t>& px, int& label) {
  std::vector<float> x(784);
  float y = 0;
  BOOST_TEST_REQUIRE(set.gather(&i, 1, x.data(), &y).is_ok());
  px.resize(784);
  for (size_t k = 0; k < 784; ++k)
    px[k] = static_cast<uint8_t>(std::lround(x[k] * 255.0f));
  label = static_cast<int>(y);
}

// `set` as a CSV: header label,p0,...,p783, then label and pixels per row.
void write_csv(const data::dataset& set, const std::string& path) {
  std::string text = "label";
  for (int k = 0; k < 784; ++k)
    text += ",p" + std::to_string(k);
  text += "\n";
  text.reserve(static_cast<size_t>(set.size()) * 2000);
  std::vector<uint8_t> px;
  int label = 0;
  char number[8];
  for (int64_t i = 0; i < set.size(); ++i) {
    sample_bytes(set, i, px, label);
    text += std::to_string(label);
    for (uint8_t v : px) {
      text += ',';
      text.append(number, std::to_chars(number, number + sizeof number, int{v}).ptr);
    }
    text += '\n';
  }
  write_file(path, text);
}

// `set` as ROOT/<label>/<index, 5 digits>.png, grey 28x28.
void write_pngs(const data::dataset& set, const std::string& root) {
  for (int c = 0; c < 10; ++c)
    std::filesystem::create_directories(root + "/" + std::to_string(c));
  std::vector<uint8_t> px;
  int label = 0;
  char name[32];
  for (int64_t i = 0; i < set.size(); ++i) {
    sample_bytes(set, i, px, label);
    const std::string png = png_bytes(28, 28, 1, px.data());
    BOOST_TEST_REQUIRE(!png.empty());
    std::snprintf(name, sizeof name, "/%d/%05lld.png", label, static_cast<long long>(i));
    write_file(root + name, png);
  }
}

// The shipped experiment `file` with `data` (YAML lines) as its data:
// section, parsed as `dtrain train` parses it.
experiments::experiment with_data(const std::string& file, const std::string& data) {
  const std::string text =
      read_file(std::string(DTRAIN_SOURCE_DIR) + "/experiments/" + file) + "\ndata:\n" + data;
  auto parsed = experiments::parse_experiment(text, file + " with a data: section");
  BOOST_TEST_REQUIRE(parsed.is_ok(), parsed.error().to_string());
  return *parsed;
}

// Trains `e` for `epochs` epochs (the schedule's length too) on 2 replicas
// as threads; the test accuracy after the last epoch.
double train_and_validate(const experiments::experiment& e, int64_t epochs) {
  auto hp = e.hyperparameters;
  hp["epochs"] = std::to_string(epochs);
  auto options = options_for(e.operator_name, hp, e.global_batch_size, e.seed);
  double accuracy = 0;
  run_group(2, rank_mode::threads, options, [&](int rank, runner_t& r) -> status {
    for (int64_t epoch = 1; epoch <= epochs; ++epoch) {
      const auto start = clock_type::now();
      DTRAIN_ASSIGN_OR_RETURN(auto m, r.train_epoch());
      if (rank == 0)
        BOOST_TEST_MESSAGE(e.name << " epoch " << epoch << ": train loss " << m.loss
                                  << ", accuracy " << m.accuracy << " ("
                                  << seconds_since(start) << " s)");
      if (!std::isfinite(m.loss) || m.samples != 60000)
        return invalid_argument("epoch " + std::to_string(epoch) + ": loss " +
                                std::to_string(m.loss) + " over " + std::to_string(m.samples) +
                                " samples");
    }
    DTRAIN_ASSIGN_OR_RETURN(auto v, r.validate());
    if (v.samples != 10000)
      return invalid_argument("validated " + std::to_string(v.samples) + " samples");
    if (rank == 0)
      accuracy = v.accuracy;
    return status::ok();
  });
  return accuracy;
}

// The data: section's train set, opened (and kept) as the replicas will
// open it.
std::shared_ptr<const data::dataset> opened_train(const experiments::experiment& e) {
  const auto start = clock_type::now();
  auto set = train::shared_source(data::sub_spec(e.hyperparameters, "data.train"), "data.train",
                                  true);
  BOOST_TEST_REQUIRE(set.is_ok(), set.error().to_string());
  BOOST_TEST_MESSAGE("opened data.train (" << (*set)->name() << ") in " << seconds_since(start)
                                           << " s");
  return *set;
}

// The first samples of `file_set` equal `idx`'s at `where` (the file's
// order: the CSV keeps IDX order, the PNG tree sorts by class then index).
void expect_same_samples(const data::dataset& file_set, const data::dataset& idx,
                         const std::vector<int64_t>& where) {
  std::vector<float> a(784), b(784);
  float ya = 0, yb = 0;
  for (int64_t i = 0; i < static_cast<int64_t>(where.size()); ++i) {
    BOOST_TEST_REQUIRE(file_set.gather(&i, 1, a.data(), &ya).is_ok());
    BOOST_TEST_REQUIRE(idx.gather(&where[static_cast<size_t>(i)], 1, b.data(), &yb).is_ok());
    BOOST_TEST(ya == yb);
    BOOST_TEST(max_relative_error(a, b) < 1e-6, "sample " << i);
  }
}

} // namespace

BOOST_AUTO_TEST_SUITE(fashion_mnist_files)

// The shipped MLP experiment (784-256-128-100-10, Adam, cosine); its 15
// epochs by default, DTRAIN_FILES_TEST_MLP_EPOCHS to measure others.
BOOST_AUTO_TEST_CASE(the_mlp_trains_from_csv_files_to_088_test_accuracy) {
  temp_dir dir;
  auto start = clock_type::now();
  auto idx_train = load(data::split::train);
  write_csv(*idx_train, dir.file("train.csv"));
  write_csv(*load(data::split::test), dir.file("test.csv"));
  BOOST_TEST_MESSAGE("wrote the CSV files in " << seconds_since(start) << " s");
  const std::string source = ", target: label, scale: 0.00392156862745098}\n";
  auto e = with_data("fashion_mnist.yaml",
                     "  train: {format: csv, path: " + dir.file("train.csv") + source +
                     "  validation: {format: csv, path: " + dir.file("test.csv") + source);
  auto train = opened_train(e);
  BOOST_TEST(train->size() == 60000);
  BOOST_TEST(train->feature_count() == 784);
  BOOST_TEST(train->class_count() == 10);
  expect_same_samples(*train, *idx_train, {0, 1, 2, 3, 4, 5, 6, 7});
  start = clock_type::now();
  const int64_t epochs = std::stoll(setting("DTRAIN_FILES_TEST_MLP_EPOCHS", e.hyperparameters.at("epochs")));
  const double accuracy = train_and_validate(e, epochs);
  BOOST_TEST_MESSAGE("MLP from CSV, " << epochs << " epochs: test accuracy " << accuracy << " ("
                                      << seconds_since(start) << " s)");
  BOOST_TEST(accuracy >= 0.88);
}

// The shipped CNN experiment (conv 16, 32; dense 128) from PNG files
// decoded by the loader's workers (2 per replica). Measured here (2 shared
// cores): the file's 8 epochs reach 0.9175 test accuracy (the built-in
// path's 0.916) in 689 s on a loaded machine (41 to 114 s an epoch; from
// memory an epoch took 35 s beside 32 s from PNG at the same time), so by
// default the suite trains 2 epochs (0.8895, about 50 s) and asks for the
// MLP's 0.88; DTRAIN_FILES_TEST_CNN_EPOCHS=8 asks for 0.916.
BOOST_AUTO_TEST_CASE(the_cnn_trains_from_png_folders) {
  temp_dir dir;
  auto start = clock_type::now();
  auto idx_train = load(data::split::train);
  write_pngs(*idx_train, dir.file("train"));
  write_pngs(*load(data::split::test), dir.file("test"));
  BOOST_TEST_MESSAGE("wrote 70,000 PNG files in " << seconds_since(start) << " s");
  auto e = with_data("fashion_mnist_cnn.yaml",
                     "  train: {format: images, path: " + dir.file("train") + "}\n"
                     "  validation: {format: images, path: " + dir.file("test") + "}\n"
                     "  workers: 2\n");
  auto train = opened_train(e);
  BOOST_TEST(train->size() == 60000);
  BOOST_TEST((train->sample_shape() == std::vector<int64_t>{1, 28, 28}));
  BOOST_TEST(train->class_count() == 10);
  // The tree's first files: class 0's samples in index order.
  std::vector<int64_t> zeros;
  for (int64_t i = 0; zeros.size() < 5; ++i) {
    float y = 0;
    std::vector<float> x(784);
    BOOST_TEST_REQUIRE(idx_train->gather(&i, 1, x.data(), &y).is_ok());
    if (y == 0)
      zeros.push_back(i);
  }
  expect_same_samples(*train, *idx_train, zeros);
  start = clock_type::now();
  const int64_t epochs = std::stoll(setting("DTRAIN_FILES_TEST_CNN_EPOCHS", "2"));
  const double accuracy = train_and_validate(e, epochs);
  BOOST_TEST_MESSAGE("CNN from PNG, " << epochs << " epochs: test accuracy " << accuracy << " ("
                                      << seconds_since(start) << " s)");
  BOOST_TEST(accuracy >= (epochs >= 8 ? 0.916 : 0.88));
}

BOOST_AUTO_TEST_SUITE_END()
