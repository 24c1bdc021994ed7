// An experiment's data: section: the YAML parses into data.* hyperparameters
// that round-trip through to_yaml; every unknown or missing key is an error
// naming it; the built-in classifiers take their input width, image shape
// and class count from a CSV written here, and refuse what does not fit
// (a CNN on flat rows, a validation set or a prediction input of another
// width) naming both sides; normalize and standardize hold the statistics
// computed by hand; a source travels as text and back.
#include <boost/test/unit_test.hpp>

#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "dtrain/comm/factory.hpp"
#include "dtrain/core/check.hpp"
#include "dtrain/core/random.hpp"
#include "dtrain/datasets/source.hpp"
#include "dtrain/experiments/experiment.hpp"
#include "dtrain/rendezvous/store.hpp"
#include "dtrain/train/file_data.hpp"
#include "dtrain/train/replica.hpp"
#include "support/test_util.hpp"

using namespace dtrain;
using dtrain::testing::temp_dir;

namespace {

using config = std::map<std::string, std::string>;

// An experiment file with `data` as its data: section (YAML lines, indented
// by two spaces under data:).
std::string experiment_with(const std::string& data) {
  return "name: files\noperator: mlp_classifier\nglobal_batch_size: 8\n"
         "hyperparameters: {hidden: [8]}\ndata:\n" +
         data;
}

// The message of a parse that must fail with invalid_argument.
std::string parse_error(const std::string& yaml) {
  auto parsed = experiments::parse_experiment(yaml, "files.yaml");
  BOOST_TEST_REQUIRE(!parsed.is_ok(), "accepted:\n" + yaml);
  BOOST_TEST((parsed.error().code() == error_code::invalid_argument));
  return parsed.error().message();
}

bool has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// A CSV of `rows` rows: `width` feature columns f0.. and a label column
// (the last) cycling through `classes` classes; feature j of row i is
// i * 0.5 + j * j (distinct columns, so statistics are easy to check).
std::string write_table(const temp_dir& dir, const std::string& name, int rows, int width,
                        int classes) {
  std::string text;
  for (int j = 0; j < width; ++j)
    text += "f" + std::to_string(j) + ",";
  text += "label\n";
  for (int i = 0; i < rows; ++i) {
    for (int j = 0; j < width; ++j)
      text += std::to_string(i * 0.5 + j * j) + ",";
    text += std::to_string(i % classes) + "\n";
  }
  const std::string path = dir.file(name);
  testing::write_file(path, text);
  return path;
}

// A one-replica context on the CPU (a group of one over shm).
std::unique_ptr<train::comm_replica_context> single_context() {
  comm::group_options go;
  go.store = std::make_shared<rendezvous::memory_store>();
  go.backend = "shm";
  go.timeout = std::chrono::milliseconds(20000);
  auto c = comm::make_communicator(go);
  BOOST_TEST_REQUIRE(c.is_ok(), c.error().to_string());
  train::comm_replica_context::placement where;
  where.seed = 3;
  return std::make_unique<train::comm_replica_context>(std::move(*c), where, nullptr);
}

// `op`'s setup on `hp`.
status set_up(const std::string& op, const config& hp, train::operator_parts& parts) {
  auto ctx = single_context();
  DTRAIN_ASSIGN_OR_RETURN(auto made, train::make_operator(op));
  return made->setup(train::hyperparameters(hp), *ctx, parts);
}

// The width of the model's output for `rows` zero samples.
int64_t output_width(nn::model& model, int64_t rows, int64_t features) {
  auto out = model.forward(tensor::zeros({rows, features}), false);
  BOOST_TEST_REQUIRE(out.is_ok(), out.error().to_string());
  BOOST_TEST_REQUIRE((*out)->shape().size() == 2u);
  BOOST_TEST((*out)->shape()[0] == rows);
  return (*out)->shape()[1];
}

// Samples of `set` as rows.
std::vector<std::vector<float>> rows_of(const data::dataset& set) {
  std::vector<std::vector<float>> rows;
  std::vector<float> x(static_cast<size_t>(set.feature_count()));
  std::vector<float> y(static_cast<size_t>(set.target_count()));
  for (int64_t i = 0; i < set.size(); ++i) {
    BOOST_TEST_REQUIRE(set.gather(&i, 1, x.data(), y.data()).is_ok());
    rows.push_back(x);
  }
  return rows;
}

} // namespace

BOOST_AUTO_TEST_SUITE(file_data)

BOOST_AUTO_TEST_CASE(a_data_section_becomes_data_hyperparameters_and_round_trips) {
  auto parsed = experiments::parse_experiment(
      experiment_with("  train:\n"
                      "    format: csv\n"
                      "    path: /data/train.csv\n"
                      "    target: label\n"
                      "    ignore: [id, name]\n"
                      "    delimiter: \";\"\n"
                      "    categorical: {color: [red, green, blue], size: []}\n"
                      "    shape: [1, 2, 2]\n"
                      "  validation: {format: csv, path: /data/test.csv, target: label}\n"
                      "  workers: 2\n"
                      "  standardize: true\n"
                      "  shuffle_window: 100\n"),
      "files.yaml");
  BOOST_TEST_REQUIRE(parsed.is_ok(), parsed.error().to_string());
  const config want = {{"hidden", "8"},
                       {"data.train.format", "csv"},
                       {"data.train.path", "/data/train.csv"},
                       {"data.train.target", "label"},
                       {"data.train.ignore", "id,name"},
                       {"data.train.delimiter", ";"},
                       {"data.train.categorical.color", "red,green,blue"},
                       {"data.train.categorical.size", ""},
                       {"data.train.shape", "1,2,2"},
                       {"data.validation.format", "csv"},
                       {"data.validation.path", "/data/test.csv"},
                       {"data.validation.target", "label"},
                       {"data.workers", "2"},
                       {"data.standardize", "true"},
                       {"data.shuffle_window", "100"}};
  BOOST_TEST((parsed->hyperparameters == want));
  const std::string yaml = experiments::to_yaml(*parsed);
  // Written back as a data: section, not as dotted hyperparameters.
  BOOST_TEST(yaml.find("\ndata:") != std::string::npos, yaml);
  BOOST_TEST(yaml.find("data.train") == std::string::npos, yaml);
  auto again = experiments::parse_experiment(yaml, "again.yaml");
  BOOST_TEST_REQUIRE(again.is_ok(), again.error().to_string() + "\n" + yaml);
  BOOST_TEST((again->hyperparameters == want), yaml);
  BOOST_TEST(train::check_file_data(train::hyperparameters(again->hyperparameters)).is_ok());
  // The train source as its reader sees it.
  const data::source_spec train = data::sub_spec(want, "data.train");
  BOOST_TEST(train.size() == 8u);
  BOOST_TEST(train.at("categorical.color") == "red,green,blue");
}

BOOST_AUTO_TEST_CASE(a_comma_delimiter_round_trips_through_to_yaml) {
  auto parsed = experiments::parse_experiment(
      experiment_with("  train: {format: csv, path: /d/t.csv, delimiter: \",\"}\n"), "files.yaml");
  BOOST_TEST_REQUIRE(parsed.is_ok(), parsed.error().to_string());
  BOOST_TEST(parsed->hyperparameters.at("data.train.delimiter") == ",");
  const std::string yaml = experiments::to_yaml(*parsed);
  auto again = experiments::parse_experiment(yaml, "again.yaml");
  BOOST_TEST_REQUIRE(again.is_ok(), again.error().to_string() + "\n" + yaml);
  BOOST_TEST(again->hyperparameters.at("data.train.delimiter") == ",");
  BOOST_TEST((again->hyperparameters == parsed->hyperparameters), yaml);
}

BOOST_AUTO_TEST_CASE(unknown_and_missing_keys_are_errors_naming_them) {
  const std::string train = "  train: {format: csv, path: /d/t.csv}\n";
  std::string m = parse_error(experiment_with(train + "  colour: red\n"));
  BOOST_TEST((has(m, "files.yaml") && has(m, "'colour'")), m);
  m = parse_error(experiment_with("  train: {format: csv, path: /d/t.csv, colour: red}\n"));
  BOOST_TEST((has(m, "data.train") && has(m, "'colour'") && has(m, "known:")), m);
  m = parse_error(experiment_with(train + "  validation: {format: npy, path: /d/v.npy, "
                                          "delimiter: \";\"}\n"));
  BOOST_TEST((has(m, "data.validation") && has(m, "'delimiter'") && has(m, "npy")), m);
  m = parse_error(experiment_with("  train: {format: parquet, path: /d/t.parquet}\n"));
  BOOST_TEST((has(m, "data.train.format") && has(m, "'parquet'") && has(m, "csv")), m);
  m = parse_error(experiment_with("  train: {path: /d/t.csv}\n"));
  BOOST_TEST((has(m, "data.train") && has(m, "no format")), m);
  m = parse_error(experiment_with("  validation: {format: csv, path: /d/v.csv}\n"));
  BOOST_TEST(has(m, "no train source"), m);
  m = parse_error(experiment_with("  train: {format: csv, target: label}\n"));
  BOOST_TEST((has(m, "data.train") && has(m, "no path")), m);
  m = parse_error(experiment_with(train + "  workers: 0\n"));
  BOOST_TEST(has(m, "data.workers"), m);
  m = parse_error(experiment_with(train + "  normalize: true\n  standardize: true\n"));
  BOOST_TEST((has(m, "normalize") && has(m, "standardize")), m);
  m = parse_error(experiment_with("  - train\n"));
  BOOST_TEST(has(m, "data"), m);
  // A key given both under hyperparameters: and data: is refused by name.
  m = parse_error("name: files\nglobal_batch_size: 8\n"
                  "hyperparameters: {data.workers: 2}\ndata:\n" + train + "  workers: 3\n");
  BOOST_TEST((has(m, "data.workers") && has(m, "twice")), m);
}

BOOST_AUTO_TEST_CASE(mlp_classifier_takes_its_input_width_and_classes_from_the_file) {
  temp_dir dir;
  const std::string path = write_table(dir, "train.csv", 30, 5, 3);
  train::operator_parts parts;
  status s = set_up("mlp_classifier",
                    {{"hidden", "8"}, {"data.train.format", "csv"}, {"data.train.path", path}},
                    parts);
  BOOST_TEST_REQUIRE(s.is_ok(), s.to_string());
  BOOST_TEST(parts.train_data->size() == 30);
  BOOST_TEST(parts.train_data->feature_count() == 5);
  BOOST_TEST(parts.train_data->class_count() == 3);
  BOOST_TEST(parts.validation_data == nullptr);
  BOOST_TEST(parts.classification);
  BOOST_TEST(output_width(*parts.model, 4, 5) == 3);
  // Too narrow an input is the model's error: the width came from the file.
  BOOST_TEST(!parts.model->forward(tensor::zeros({4, 784}), false).is_ok());
  // Fashion-MNIST's data_dir beside a data: section is refused by name.
  train::operator_parts other;
  s = set_up("mlp_classifier",
             {{"data_dir", "/x"}, {"data.train.format", "csv"}, {"data.train.path", path}}, other);
  BOOST_TEST((!s.is_ok() && has(s.message(), "data_dir")), s.to_string());
}

BOOST_AUTO_TEST_CASE(a_cnn_on_flat_rows_is_a_shape_mismatch_until_shape_is_given) {
  temp_dir dir;
  const std::string path = write_table(dir, "pixels.csv", 20, 64, 4);
  const config flat = {{"conv", "4"}, {"hidden", "8"}, {"data.train.format", "csv"},
                       {"data.train.path", path}};
  train::operator_parts parts;
  status s = set_up("cnn_classifier", flat, parts);
  BOOST_TEST_REQUIRE(!s.is_ok());
  BOOST_TEST((s.code() == error_code::shape_mismatch));
  BOOST_TEST((has(s.message(), "data.train") && has(s.message(), "pixels.csv") &&
              has(s.message(), "shape: [C, H, W]")),
             s.message());
  config shaped = flat;
  shaped["data.train.shape"] = "1,8,8";
  train::operator_parts ok;
  s = set_up("cnn_classifier", shaped, ok);
  BOOST_TEST_REQUIRE(s.is_ok(), s.to_string());
  BOOST_TEST((ok.train_data->sample_shape() == std::vector<int64_t>{1, 8, 8}));
  BOOST_TEST(ok.train_data->class_count() == 4);
  BOOST_TEST(output_width(*ok.model, 2, 64) == 4);
  // A shape that does not hold the row is refused naming the file.
  shaped["data.train.shape"] = "1,8,7";
  train::operator_parts bad;
  s = set_up("cnn_classifier", shaped, bad);
  BOOST_TEST((!s.is_ok() && s.code() == error_code::shape_mismatch &&
              has(s.message(), "pixels.csv") && has(s.message(), "[1, 8, 7]")),
             s.to_string());
}

// Without a data: section the classifiers keep their Fashion-MNIST (whose
// rows are flat: the CNN views them as 1x28x28 images, as before).
BOOST_AUTO_TEST_CASE(without_a_data_section_the_classifiers_keep_fashion_mnist) {
  for (const std::string op : {"mlp_classifier", "cnn_classifier"}) {
    train::operator_parts parts;
    status s = set_up(op, {{"hidden", "8"}, {"data_dir", testing::fashion_mnist_dir()}}, parts);
    BOOST_TEST_REQUIRE(s.is_ok(), op << ": " << s.to_string());
    BOOST_TEST(parts.train_data->size() == 60000);
    BOOST_TEST(parts.validation_data->size() == 10000);
    BOOST_TEST(output_width(*parts.model, 2, 784) == 10, op);
  }
}

BOOST_AUTO_TEST_CASE(a_validation_set_of_another_width_is_an_error_naming_both) {
  temp_dir dir;
  const std::string train = write_table(dir, "train.csv", 20, 4, 2);
  const std::string wide = write_table(dir, "wide.csv", 10, 6, 2);
  const std::string more = write_table(dir, "more.csv", 10, 4, 3);
  train::operator_parts parts;
  status s = set_up("mlp_classifier",
                    {{"data.train.format", "csv"}, {"data.train.path", train},
                     {"data.validation.format", "csv"}, {"data.validation.path", wide}},
                    parts);
  BOOST_TEST_REQUIRE(!s.is_ok());
  BOOST_TEST((s.code() == error_code::shape_mismatch));
  BOOST_TEST((has(s.message(), "data.validation") && has(s.message(), "wide.csv") &&
              has(s.message(), "[6]") && has(s.message(), "data.train") &&
              has(s.message(), "train.csv") && has(s.message(), "[4]")),
             s.message());
  // More classes in validation than the model has outputs for.
  train::operator_parts classes;
  s = set_up("mlp_classifier",
             {{"data.train.format", "csv"}, {"data.train.path", train},
              {"data.validation.format", "csv"}, {"data.validation.path", more}},
             classes);
  BOOST_TEST((!s.is_ok() && has(s.message(), "more.csv") && has(s.message(), "3 classes") &&
              has(s.message(), "train.csv")),
             s.to_string());
  // A file that is not there is named.
  train::operator_parts missing;
  s = set_up("mlp_classifier",
             {{"data.train.format", "csv"}, {"data.train.path", dir.file("nowhere.csv")}},
             missing);
  BOOST_TEST((!s.is_ok() && has(s.message(), dir.file("nowhere.csv"))), s.to_string());
}

BOOST_AUTO_TEST_CASE(standardize_and_normalize_hold_the_statistics_computed_by_hand) {
  temp_dir dir;
  const std::string path = write_table(dir, "train.csv", 12, 3, 2);
  const std::string valid = write_table(dir, "valid.csv", 5, 3, 2);
  const config base = {{"data.train.format", "csv"}, {"data.train.path", path},
                       {"data.validation.format", "csv"}, {"data.validation.path", valid}};
  // By hand: feature j of row i is i * 0.5 + j * j, i in [0, 12).
  const int n = 12;
  std::vector<double> mean(3, 0), var(3, 0);
  for (int j = 0; j < 3; ++j) {
    for (int i = 0; i < n; ++i)
      mean[j] += (i * 0.5 + j * j) / n;
    for (int i = 0; i < n; ++i)
      var[j] += std::pow(i * 0.5 + j * j - mean[j], 2) / n;
  }
  const std::vector<float> sample = {1.5f, 7.0f, -2.0f};
  rng gen(1);

  config standardized = base;
  standardized["data.standardize"] = "true";
  train::operator_parts parts;
  status s = set_up("mlp_classifier", standardized, parts);
  BOOST_TEST_REQUIRE(s.is_ok(), s.to_string());
  BOOST_TEST_REQUIRE(parts.train_transforms.size() == 1u);
  BOOST_TEST_REQUIRE(parts.validation_transforms.size() == 1u);
  std::vector<float> x = sample;
  parts.validation_transforms[0]->apply(x.data(), {3}, gen);
  for (int j = 0; j < 3; ++j)
    BOOST_TEST(x[j] == (sample[j] - mean[j]) / std::sqrt(var[j]),
               boost::test_tools::tolerance(1e-5));

  // normalize on rows: one mean and std over every feature of every row.
  double all_mean = 0, all_var = 0;
  for (int j = 0; j < 3; ++j)
    all_mean += mean[j] / 3;
  for (int j = 0; j < 3; ++j)
    for (int i = 0; i < n; ++i)
      all_var += std::pow(i * 0.5 + j * j - all_mean, 2) / (3 * n);
  config normalized = base;
  normalized["data.normalize"] = "true";
  train::operator_parts norm;
  s = set_up("mlp_classifier", normalized, norm);
  BOOST_TEST_REQUIRE(s.is_ok(), s.to_string());
  BOOST_TEST_REQUIRE(norm.validation_transforms.size() == 1u);
  x = sample;
  norm.train_transforms[0]->apply(x.data(), {3}, gen);
  for (int j = 0; j < 3; ++j)
    BOOST_TEST(x[j] == (sample[j] - all_mean) / std::sqrt(all_var),
               boost::test_tools::tolerance(1e-5));

  // Images ({C, H, W} through shape:): per channel. Rows of 2 x 1 x 2: the
  // channels are features {0, 1} and {2, 3}.
  const std::string img = write_table(dir, "img.csv", n, 4, 2);
  train::operator_parts chans;
  s = set_up("mlp_classifier",
             {{"data.train.format", "csv"}, {"data.train.path", img},
              {"data.train.shape", "2,1,2"}, {"data.normalize", "true"}},
             chans);
  BOOST_TEST_REQUIRE(s.is_ok(), s.to_string());
  BOOST_TEST_REQUIRE(chans.train_transforms.size() == 1u);
  for (int c = 0; c < 2; ++c) {
    double m = 0, v = 0;
    for (int j = 2 * c; j < 2 * c + 2; ++j)
      for (int i = 0; i < n; ++i)
        m += (i * 0.5 + j * j) / (2 * n);
    for (int j = 2 * c; j < 2 * c + 2; ++j)
      for (int i = 0; i < n; ++i)
        v += std::pow(i * 0.5 + j * j - m, 2) / (2 * n);
    std::vector<float> px = {3.0f, 3.0f, 3.0f, 3.0f};
    chans.train_transforms[0]->apply(px.data(), {2, 1, 2}, gen);
    BOOST_TEST(px[2 * c] == (3.0 - m) / std::sqrt(v), boost::test_tools::tolerance(1e-5));
  }
}

// The image transforms of the train set only, in torchvision's order; a
// flip probability reads the same written as 1 or 1.0.
BOOST_AUTO_TEST_CASE(crop_and_flip_apply_to_training_images_and_flip_takes_a_probability) {
  temp_dir dir;
  const std::string path = write_table(dir, "img.csv", 10, 4, 2);
  const config image = {{"data.train.format", "csv"}, {"data.train.path", path},
                        {"data.train.shape", "1,2,2"}};
  auto names = [&](const std::string& crop, const std::string& flip) {
    config hp = image;
    if (!crop.empty())
      hp["data.random_crop"] = crop;
    if (!flip.empty())
      hp["data.horizontal_flip"] = flip;
    train::operator_parts parts;
    status s = set_up("mlp_classifier", hp, parts);
    BOOST_TEST_REQUIRE(s.is_ok(), s.to_string());
    BOOST_TEST(parts.validation_transforms.empty());
    std::string out;
    for (const auto& t : parts.train_transforms)
      out += (out.empty() ? "" : " ") + t->name();
    return out;
  };
  BOOST_TEST(names("", "true") == "horizontal_flip(p 0.5)");
  BOOST_TEST(names("", "1.0") == "horizontal_flip(p 1)");
  BOOST_TEST(names("", "1") == "horizontal_flip(p 1)");
  BOOST_TEST(names("", "0.25") == "horizontal_flip(p 0.25)");
  BOOST_TEST(names("", "false") == "");
  BOOST_TEST(names("", "0") == "");
  const std::string both = names("1", "true");
  BOOST_TEST((both.rfind("random_crop", 0) == 0 && has(both, "horizontal_flip")), both);
  // Bad values and flat rows are refused by name.
  const std::vector<std::pair<std::string, std::string>> bad = {
      {"data.horizontal_flip", "1.5"}, {"data.horizontal_flip", "often"},
      {"data.random_crop", "-1"}};
  for (const auto& [key, value] : bad) {
    config hp = image;
    hp[key] = value;
    train::operator_parts parts;
    status s = set_up("mlp_classifier", hp, parts);
    BOOST_TEST((!s.is_ok() && has(s.message(), key)), key << "=" << value << ": " << s.to_string());
  }
  train::operator_parts flat;
  status s = set_up("mlp_classifier",
                    {{"data.train.format", "csv"}, {"data.train.path", path},
                     {"data.random_crop", "2"}},
                    flat);
  BOOST_TEST((!s.is_ok() && has(s.message(), "random_crop")), s.to_string());
}

BOOST_AUTO_TEST_CASE(a_prediction_input_of_another_width_is_a_shape_mismatch_naming_both) {
  temp_dir dir;
  const std::string train = write_table(dir, "train.csv", 20, 4, 2);
  const std::string same = write_table(dir, "same.csv", 7, 4, 2);
  const std::string wide = write_table(dir, "wide.csv", 7, 5, 2);
  train::operator_parts parts;
  status s = set_up("mlp_classifier", {{"data.train.format", "csv"}, {"data.train.path", train}},
                    parts);
  BOOST_TEST_REQUIRE(s.is_ok(), s.to_string());
  const std::string owner = "operator 'mlp_classifier'";
  auto fits = train::prediction_input(
      parts, "source:" + data::source_text({{"format", "csv"}, {"path", same}}), owner);
  BOOST_TEST_REQUIRE(fits.is_ok(), fits.error().to_string());
  BOOST_TEST((*fits)->size() == 7);
  BOOST_TEST((rows_of(**fits)[6] == std::vector<float>{3.0f, 4.0f, 7.0f, 12.0f}));
  auto wider = train::prediction_input(
      parts, "source:" + data::source_text({{"format", "csv"}, {"path", wide}}), owner);
  BOOST_TEST_REQUIRE(!wider.is_ok());
  const std::string m = wider.error().message();
  BOOST_TEST((wider.error().code() == error_code::shape_mismatch));
  BOOST_TEST((has(m, "wide.csv") && has(m, "[5]") && has(m, "train.csv") && has(m, "[4]") &&
              has(m, owner)),
             m);
  BOOST_TEST(train::prediction_input(parts, "train", owner).is_ok());
  auto none = train::prediction_input(parts, "validation", owner);
  BOOST_TEST((!none.is_ok() && none.error().code() == error_code::not_found));
  auto other = train::prediction_input(parts, "test", owner);
  BOOST_TEST((!other.is_ok() && has(other.error().message(), "'test'")));
}

// Replicas of one process share a source's one read; a failed open is not
// kept, so a file that appears later is read.
BOOST_AUTO_TEST_CASE(a_source_is_opened_once_while_in_use_and_a_failed_open_is_not_kept) {
  temp_dir dir;
  const data::source_spec spec = {{"format", "csv"}, {"path", dir.file("late.csv")}};
  auto first = train::shared_source(spec, "data.train", true);
  BOOST_TEST((!first.is_ok() && has(first.error().message(), dir.file("late.csv"))));
  write_table(dir, "late.csv", 6, 2, 2);
  auto second = train::shared_source(spec, "data.train", true);
  BOOST_TEST_REQUIRE(second.is_ok(), second.error().to_string());
  BOOST_TEST((*second)->size() == 6);
  auto third = train::shared_source(spec, "data.train", true);
  BOOST_TEST_REQUIRE(third.is_ok());
  BOOST_TEST(third->get() == second->get());
  // Regression targets are another open of the same file.
  auto values = train::shared_source(spec, "data.train", false);
  BOOST_TEST_REQUIRE(values.is_ok(), values.error().to_string());
  BOOST_TEST(values->get() != second->get());
  BOOST_TEST((*values)->class_count() == 0);
  // Once no one holds it, the set is read again: a changed file is seen.
  second = dtrain::status(dtrain::error_code::aborted, "released");
  third = dtrain::status(dtrain::error_code::aborted, "released");
  write_table(dir, "late.csv", 9, 2, 2);
  auto fourth = train::shared_source(spec, "data.train", true);
  BOOST_TEST_REQUIRE(fourth.is_ok(), fourth.error().to_string());
  BOOST_TEST((*fourth)->size() == 9);
}

BOOST_AUTO_TEST_CASE(a_source_travels_as_text_and_back) {
  const data::source_spec spec = {{"format", "csv"},
                                  {"path", "/data/a b=c.csv"},
                                  {"categorical.color", "red,green"},
                                  {"shape", "[1, 28, 28]"},
                                  {"class_names", ""}};
  auto back = data::parse_source_text(data::source_text(spec));
  BOOST_TEST_REQUIRE(back.is_ok(), back.error().to_string());
  BOOST_TEST((*back == spec));
  BOOST_TEST(data::parse_source_text("").value().empty());
  auto bad = data::parse_source_text("format=csv\nno equals sign\n");
  BOOST_TEST((!bad.is_ok() && has(bad.error().message(), "no equals sign")));
  BOOST_TEST(!data::parse_source_text("=csv\n").is_ok());
  // The format a path implies.
  BOOST_TEST(data::format_of_path("/d/x.CSV") == "csv");
  BOOST_TEST(data::format_of_path("/d/x.tsv") == "tsv");
  BOOST_TEST(data::format_of_path("/d/x.h5") == "hdf5");
  BOOST_TEST(data::format_of_path("/d/x.npz") == "npz");
  BOOST_TEST(data::format_of_path("/d/x.parquet") == "");
  temp_dir dir;
  BOOST_TEST(data::format_of_path(dir.path()) == "images");
  testing::write_file(dir.file("index.bin"), "x");
  BOOST_TEST(data::format_of_path(dir.path()) == "shards");
}

BOOST_AUTO_TEST_SUITE_END()
