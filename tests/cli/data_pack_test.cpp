// `dtrain data pack` and `dtrain data inspect` end to end: the built binary
// packs a small CSV and a small IDX set (written here) into record shards,
// which read back exactly; damaged shards and bad arguments are refused.
#include <boost/test/unit_test.hpp>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "dtrain/datasets/shards.hpp"
#include "support/dtrain_command.hpp"

namespace {

using dtrain::testing::command_result;
using dtrain::testing::run_dtrain;
using dtrain::testing::temp_dir;

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

command_result dtrain_data(const temp_dir& tmp, const std::vector<std::string>& args) {
  static int runs = 0;
  std::vector<std::string> full{"data"};
  full.insert(full.end(), args.begin(), args.end());
  command_result r = run_dtrain(full, tmp.file("run" + std::to_string(++runs) + ".log"),
                                std::chrono::milliseconds(60000));
  BOOST_TEST_MESSAGE("dtrain data ... -> " << r.code << "\n" << r.log);
  return r;
}

// Every sample of a shard set: features and targets, in order.
struct contents {
  std::shared_ptr<const dtrain::data::shard_dataset> set;
  std::vector<float> x, y;
};

contents read_back(const std::string& dir) {
  auto opened = dtrain::data::open_shards(dir);
  BOOST_TEST_REQUIRE(opened.is_ok(), opened.error().to_string());
  contents c;
  c.set = std::dynamic_pointer_cast<const dtrain::data::shard_dataset>(*opened);
  BOOST_TEST_REQUIRE(c.set != nullptr);
  const int64_t n = c.set->size();
  std::vector<int64_t> all(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i)
    all[static_cast<size_t>(i)] = i;
  c.x.resize(static_cast<size_t>(n * c.set->feature_count()));
  c.y.resize(static_cast<size_t>(n * c.set->target_count()));
  const dtrain::status s = c.set->gather(all.data(), n, c.x.data(), c.y.data());
  BOOST_TEST_REQUIRE(s.is_ok(), s.to_string());
  return c;
}

// A 20-row CSV: a = i * 0.5, b = -i, label = i % 3.
std::string write_csv(const temp_dir& tmp) {
  std::string text = "a,b,label\n";
  for (int i = 0; i < 20; ++i)
    text += std::to_string(i * 0.5) + "," + std::to_string(-i) + "," + std::to_string(i % 3) + "\n";
  dtrain::testing::write_file(tmp.file("rows.csv"), text);
  return tmp.file("rows.csv");
}

std::string big_endian(uint32_t v) {
  return {static_cast<char>(v >> 24), static_cast<char>(v >> 16), static_cast<char>(v >> 8),
          static_cast<char>(v)};
}

// Fashion-MNIST's train files with `n` 28x28 images: pixel p of image i is
// (i * 7 + p) % 256, label i % 10.
std::string write_idx(const temp_dir& tmp, uint32_t n) {
  std::string images = std::string("\0\0\x08\x03", 4) + big_endian(n) + big_endian(28) +
                       big_endian(28);
  std::string labels = std::string("\0\0\x08\x01", 4) + big_endian(n);
  for (uint32_t i = 0; i < n; ++i) {
    for (uint32_t p = 0; p < 784; ++p)
      images.push_back(static_cast<char>((i * 7 + p) % 256));
    labels.push_back(static_cast<char>(i % 10));
  }
  const std::string dir = tmp.file("idx");
  std::filesystem::create_directory(dir);
  dtrain::testing::write_file(dir + "/train-images-idx3-ubyte", images);
  dtrain::testing::write_file(dir + "/train-labels-idx1-ubyte", labels);
  return dir;
}

} // namespace

BOOST_AUTO_TEST_SUITE(data_pack)

BOOST_AUTO_TEST_CASE(a_csv_packs_into_several_shards_that_read_back_exactly) {
  temp_dir tmp;
  const std::string csv = write_csv(tmp);
  // 12-byte records, 100-byte shards: 8 records each, 3 shards.
  const command_result r = dtrain_data(tmp, {"pack", "--format", "csv", "--path", csv, "--out",
                                             tmp.file("packed"), "--shard-mb", "0.0000954"});
  BOOST_TEST_REQUIRE(r.code == 0);
  BOOST_TEST(contains(r.log, "packed 20 samples"));
  BOOST_TEST(contains(r.log, "shards    3, raw records"));
  const contents c = read_back(tmp.file("packed"));
  BOOST_TEST(c.set->feature_count() == 2);
  BOOST_TEST(c.set->class_count() == 3);
  BOOST_TEST((c.set->shard_starts() == std::vector<int64_t>{0, 8, 16}));
  for (int i = 0; i < 20; ++i) {
    BOOST_TEST(c.x[static_cast<size_t>(2 * i)] == i * 0.5f);
    BOOST_TEST(c.x[static_cast<size_t>(2 * i + 1)] == static_cast<float>(-i));
    BOOST_TEST(c.y[static_cast<size_t>(i)] == static_cast<float>(i % 3));
  }
}

BOOST_AUTO_TEST_CASE(an_idx_set_packs_deflated_and_reads_back_exactly) {
  temp_dir tmp;
  const std::string dir = write_idx(tmp, 30);
  const command_result r =
      dtrain_data(tmp, {"pack", "--format", "idx", "--path", dir, "--set", "split=train", "--out",
                        tmp.file("packed"), "--encoding", "deflate", "--shard-mb", "0.01"});
  BOOST_TEST_REQUIRE(r.code == 0);
  BOOST_TEST(contains(r.log, "packed 30 samples"));
  const contents c = read_back(tmp.file("packed"));
  BOOST_TEST(c.set->encoding() == "deflate");
  BOOST_TEST(c.set->feature_count() == 784);
  BOOST_TEST(c.set->shard_starts().size() > 1u);
  int wrong = 0;
  for (uint32_t i = 0; i < 30; ++i) {
    for (uint32_t p = 0; p < 784; ++p)
      wrong += c.x[i * 784 + p] != static_cast<float>((i * 7 + p) % 256) / 255.0f;
    wrong += c.y[i] != static_cast<float>(i % 10);
  }
  BOOST_TEST(wrong == 0);
}

BOOST_AUTO_TEST_CASE(inspect_prints_the_set_and_verify_finds_a_damaged_shard) {
  temp_dir tmp;
  const std::string packed = tmp.file("packed");
  BOOST_TEST_REQUIRE(dtrain_data(tmp, {"pack", "--format", "csv", "--path", write_csv(tmp),
                                       "--out", packed, "--shard-mb", "0.0000954"})
                         .code == 0);
  const command_result clean = dtrain_data(tmp, {"inspect", packed, "--verify"});
  BOOST_TEST(clean.code == 0);
  BOOST_TEST(contains(clean.log, "samples   20"));
  BOOST_TEST(contains(clean.log, "features  2, shape [2]"));
  BOOST_TEST(contains(clean.log, "classes   3"));
  BOOST_TEST(contains(clean.log, "verified"));
  std::string shard = dtrain::testing::read_file(packed + "/shard-00001.bin");
  BOOST_TEST_REQUIRE(!shard.empty());
  shard[5] = static_cast<char>(shard[5] ^ 1);
  dtrain::testing::write_file(packed + "/shard-00001.bin", shard);
  const command_result damaged = dtrain_data(tmp, {"inspect", packed, "--verify"});
  BOOST_TEST(damaged.code == 1);
  BOOST_TEST(contains(damaged.log, packed + "/shard-00001.bin: shard checksum mismatch"));
}

BOOST_AUTO_TEST_CASE(an_existing_output_and_a_malformed_set_are_refused) {
  temp_dir tmp;
  const std::string csv = write_csv(tmp);
  const command_result exists =
      dtrain_data(tmp, {"pack", "--format", "csv", "--path", csv, "--out", tmp.path()});
  BOOST_TEST(exists.code == 1);
  BOOST_TEST(contains(exists.log, tmp.path() + " already exists"));
  const command_result bad_set = dtrain_data(
      tmp, {"pack", "--format", "csv", "--path", csv, "--set", "targets", "--out", tmp.file("o")});
  BOOST_TEST(bad_set.code == 1);
  BOOST_TEST(contains(bad_set.log, "--set 'targets': expected KEY=VALUE"));
  const command_result missing = dtrain_data(
      tmp, {"pack", "--format", "csv", "--path", tmp.file("none.csv"), "--out", tmp.file("o")});
  BOOST_TEST(missing.code == 1);
  BOOST_TEST(contains(missing.log, tmp.file("none.csv")));
}

BOOST_AUTO_TEST_SUITE_END()
