// The dtrain program on a person's files, with no code: a CSV table of three
// Gaussian classes written here is trained by `dtrain train` from an
// experiment's data: section (an embedded cluster, two slots) to a stated
// accuracy; `dtrain predict --input test.csv` writes one line per input row,
// in input order, with the file's targets; a data path that does not exist
// fails `dtrain train` quickly, before training, naming the path and the
// node.
#include <boost/test/unit_test.hpp>

#include <stdlib.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <random>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "support/dtrain_command.hpp"
#include "support/test_util.hpp"

using dtrain::testing::run_dtrain;
using dtrain::testing::temp_dir;
using std::chrono::milliseconds;

namespace {

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// A table as the test wrote it: features row by row, and labels.
struct table {
  std::vector<float> x;
  std::vector<int> y;
};

// A CSV of `rows` samples of 3 classes (drawn at random, so the file's
// order is no class order): 4 features, normal around a class mean (classes
// 6 standard deviations apart), then the label. What it holds.
table write_gaussians(const std::string& path, int rows, uint32_t seed) {
  const double means[3][4] = {{0, 0, 0, 0}, {6, 0, 3, 0}, {0, 6, -3, 2}};
  std::mt19937 gen(seed);
  std::uniform_int_distribution<int> pick(0, 2);
  std::normal_distribution<double> noise(0.0, 1.0);
  std::string text = "x0,x1,x2,x3,label\n";
  table t;
  for (int i = 0; i < rows; ++i) {
    const int c = pick(gen);
    t.y.push_back(c);
    for (double m : means[c]) {
      const std::string value = std::to_string(m + noise(gen));
      t.x.push_back(std::stof(value));
      text += value + ",";
    }
    text += std::to_string(c) + "\n";
  }
  dtrain::testing::write_file(path, text);
  return t;
}

// An .npy file (format 1.0) of little-endian float32 `values` of `shape`.
void write_npy(const std::string& path, const std::vector<float>& values,
               const std::string& shape) {
  std::string header = "{'descr': '<f4', 'fortran_order': False, 'shape': " + shape + ", }";
  header.append(63 - (10 + header.size()) % 64, ' ');
  header += '\n';
  std::string bytes = std::string("\x93NUMPY\x01\x00", 8);
  bytes += static_cast<char>(header.size() & 0xff);
  bytes += static_cast<char>(header.size() >> 8);
  bytes += header;
  bytes.append(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(float));
  dtrain::testing::write_file(path, bytes);
}

// A 2-slot mlp_classifier experiment on DIR's train.csv (or `train_path`)
// and test.csv, checkpointing under DIR/ckpt; its path.
std::string experiment(const temp_dir& dir, const std::string& train_path) {
  const std::string path = dir.file("gaussians.yaml");
  dtrain::testing::write_file(path,
                              "name: gaussians\n"
                              "operator: mlp_classifier\n"
                              "hyperparameters: {hidden: [16], lr: 0.01, epochs: 6}\n"
                              "data:\n"
                              "  train: {format: csv, path: " + train_path + ", target: label}\n"
                              "  validation: {format: csv, path: " + dir.file("test.csv") +
                                  ", target: label}\n"
                              "  standardize: true\n"
                              "resources: {slots_per_trial: 2}\n"
                              "global_batch_size: 32\n"
                              "epochs: 6\n"
                              "checkpoint_storage: {host_path: " + dir.file("ckpt") + "}\n"
                              "seed: 4\n");
  return path;
}

// The rows of a prediction file below its header, split at commas.
std::vector<std::vector<std::string>> csv_rows(const std::string& path, std::string& header) {
  std::ifstream in(path);
  std::vector<std::vector<std::string>> rows;
  std::string line;
  std::getline(in, header);
  while (std::getline(in, line)) {
    std::vector<std::string> fields;
    std::stringstream s(line);
    for (std::string f; std::getline(s, f, ',');)
      fields.push_back(f);
    rows.push_back(fields);
  }
  return rows;
}

struct home_dir {
  temp_dir dir;
  home_dir() {
    setenv("DTRAIN_HOME", dir.path().c_str(), 1);
    unsetenv("DTRAIN_ADDRESS");
  }
};

} // namespace

BOOST_AUTO_TEST_SUITE(data_files)

BOOST_AUTO_TEST_CASE(train_and_predict_a_csv_table_from_an_experiment_file) {
  home_dir home;
  temp_dir dir;
  write_gaussians(dir.file("train.csv"), 600, 1);
  const table test = write_gaussians(dir.file("test.csv"), 200, 2);
  const std::vector<int>& labels = test.y;
  const std::string file = experiment(dir, dir.file("train.csv"));

  auto trained = run_dtrain({"train", file, "--embedded"}, dir.file("train.log"),
                            milliseconds(180000));
  BOOST_TEST_REQUIRE(trained.code == 0, trained.log);
  std::smatch m;
  BOOST_TEST_REQUIRE(std::regex_search(trained.log, m,
                                       std::regex("validation: loss [0-9.]+, accuracy ([0-9.]+) "
                                                  "\\(200 samples\\)")),
                     trained.log);
  const double accuracy = std::stod(m[1]);
  BOOST_TEST_MESSAGE("validation accuracy " << accuracy);
  BOOST_TEST(accuracy >= 0.97, trained.log);

  // Where train said its checkpoints are (a root: predict takes the newest).
  BOOST_TEST_REQUIRE(std::regex_search(trained.log, m, std::regex("checkpoints in (\\S+)\n")),
                     trained.log);
  const std::string checkpoints = m[1];
  auto predicted = run_dtrain({"predict", file, "--embedded", "--checkpoint", checkpoints,
                               "--input", dir.file("test.csv"), "--output", dir.file("out.csv")},
                              dir.file("predict.log"), milliseconds(180000));
  BOOST_TEST_REQUIRE(predicted.code == 0, predicted.log);
  std::string header;
  const auto rows = csv_rows(dir.file("out.csv"), header);
  BOOST_TEST(header == "index,target,prediction,output_0,output_1,output_2");
  BOOST_TEST_REQUIRE(rows.size() == labels.size());
  int correct = 0;
  for (size_t i = 0; i < rows.size(); ++i) {
    BOOST_TEST_REQUIRE(rows[i].size() == 6u, "row " << i);
    BOOST_TEST(rows[i][0] == std::to_string(i));
    BOOST_TEST(std::stoi(rows[i][1]) == labels[i], "row " << i);
    correct += std::stoi(rows[i][2]) == labels[i];
  }
  BOOST_TEST(correct / 200.0 >= 0.97);
  // The file's accuracy is the run's: the same model on the same rows,
  // normalised alike.
  BOOST_TEST(std::abs(correct / 200.0 - accuracy) < 1e-9);

  // A file of another width is refused naming it, and no output is left.
  dtrain::testing::write_file(dir.file("wide.csv"), "a,b,c,d,e,label\n1,2,3,4,5,0\n");
  auto wide = run_dtrain({"predict", file, "--embedded", "--checkpoint", checkpoints,
                          "--input", dir.file("wide.csv"), "--output", dir.file("wide-out.csv")},
                         dir.file("wide.log"), milliseconds(120000));
  BOOST_TEST(wide.code != 0);
  BOOST_TEST(contains(wide.log, "wide.csv"), wide.log);
  BOOST_TEST(!std::filesystem::exists(dir.file("wide-out.csv")));

  // The same rows as a TSV of another name, the label column renamed: the
  // format and the reader's keys come from the command line.
  std::string tsv = dtrain::testing::read_file(dir.file("test.csv"));
  std::replace(tsv.begin(), tsv.end(), ',', '\t');
  tsv.replace(tsv.find("label"), 5, "class");
  dtrain::testing::write_file(dir.file("test.txt"), tsv);
  const std::vector<std::string> tsv_args = {"predict", file, "--embedded", "--checkpoint",
                                             checkpoints, "--input", dir.file("test.txt"),
                                             "--output", dir.file("tsv-out.csv")};
  auto unnamed = run_dtrain(tsv_args, dir.file("unnamed.log"), milliseconds(120000));
  BOOST_TEST(unnamed.code != 0);
  BOOST_TEST((contains(unnamed.log, "test.txt") && contains(unnamed.log, "--input-format")),
             unnamed.log);
  auto with_tsv = tsv_args;
  with_tsv.insert(with_tsv.end(), {"--input-format", "tsv", "--input-set", "target=class"});
  auto read_tsv = run_dtrain(with_tsv, dir.file("tsv.log"), milliseconds(120000));
  BOOST_TEST_REQUIRE(read_tsv.code == 0, read_tsv.log);
  std::string tsv_header;
  const auto tsv_rows = csv_rows(dir.file("tsv-out.csv"), tsv_header);
  BOOST_TEST(tsv_header == header);
  BOOST_TEST_REQUIRE(tsv_rows.size() == rows.size());
  for (size_t i = 0; i < rows.size(); ++i)
    BOOST_TEST((tsv_rows[i] == rows[i]), "row " << i);
  // The same rows as NumPy arrays: the experiment's CSV keys (target:
  // label) do not apply to them; --input-set names the targets' file.
  write_npy(dir.file("test_x.npy"), test.x, "(200, 4)");
  write_npy(dir.file("test_y.npy"), std::vector<float>(test.y.begin(), test.y.end()), "(200,)");
  auto npy = run_dtrain({"predict", file, "--embedded", "--checkpoint", checkpoints, "--input",
                         dir.file("test_x.npy"), "--input-set",
                         "targets=" + dir.file("test_y.npy"), "--output", dir.file("npy-out.csv")},
                        dir.file("npy.log"), milliseconds(120000));
  BOOST_TEST_REQUIRE(npy.code == 0, npy.log);
  const auto npy_rows = csv_rows(dir.file("npy-out.csv"), tsv_header);
  BOOST_TEST_REQUIRE(npy_rows.size() == rows.size());
  for (size_t i = 0; i < rows.size(); ++i)
    BOOST_TEST((std::vector<std::string>(npy_rows[i].begin(), npy_rows[i].begin() + 3) ==
                std::vector<std::string>(rows[i].begin(), rows[i].begin() + 3)),
               "row " << i);
  with_tsv.back() = "colour=red";
  auto unknown = run_dtrain(with_tsv, dir.file("unknown.log"), milliseconds(120000));
  BOOST_TEST(unknown.code != 0);
  BOOST_TEST(contains(unknown.log, "'colour'"), unknown.log);
}

BOOST_AUTO_TEST_CASE(a_missing_data_path_fails_before_training_naming_the_path_and_node) {
  home_dir home;
  temp_dir dir;
  write_gaussians(dir.file("test.csv"), 50, 2);
  const std::string missing = dir.file("no-such-train.csv");
  const std::string file = experiment(dir, missing);
  const auto start = std::chrono::steady_clock::now();
  auto ran = run_dtrain({"train", file, "--embedded"}, dir.file("train.log"), milliseconds(120000));
  const std::chrono::duration<double> took = std::chrono::steady_clock::now() - start;
  BOOST_TEST_MESSAGE("failed in " << took.count() << " s:\n" << ran.log);
  BOOST_TEST(ran.code != 0);
  BOOST_TEST(ran.code != -1, "still running after 120 s");
  BOOST_TEST(contains(ran.log, missing), ran.log);
  BOOST_TEST(std::regex_search(ran.log, std::regex("node 0")), ran.log);
  BOOST_TEST(!contains(ran.log, "epoch 1"), ran.log);
  BOOST_TEST(took.count() < 30.0);
}

BOOST_AUTO_TEST_SUITE_END()
