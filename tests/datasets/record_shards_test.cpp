// Record shards: write_shards and open_shards round trips (raw and deflate,
// bit-exact), the shard size bound, bounded reads of the source, damaged,
// truncated and missing shards, and concurrent gathers.
#include <boost/test/unit_test.hpp>

#include <sys/stat.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <memory>
#include <numeric>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "dtrain/datasets/shard_index.hpp"
#include "dtrain/datasets/shards.hpp"
#include "support/test_util.hpp"

namespace {

using dtrain::error_code;
using dtrain::status;
using dtrain::data::dataset;
using dtrain::data::open_shards;
using dtrain::data::shard_dataset;
using dtrain::data::shard_write_options;
using dtrain::data::write_shards;
using dtrain::testing::temp_dir;

// Small "images" [C=2, H=3, W=4] whose values are a hash of (record, slot),
// so any misplaced or altered byte shows; targets are classes 0..4 plus a
// second, float target. Counts the widest gather, and can fail at a record.
class fake_images final : public dataset {
public:
  explicit fake_images(int64_t n, int64_t fail_at = -1) : n_(n), fail_at_(fail_at) {}

  int64_t size() const override { return n_; }
  int64_t feature_count() const override { return 24; }
  int64_t target_count() const override { return 2; }
  std::string name() const override { return "fake images"; }
  std::vector<int64_t> sample_shape() const override { return {2, 3, 4}; }
  int64_t class_count() const override { return 5; }

  static float value(int64_t record, int64_t slot) {
    uint64_t h = static_cast<uint64_t>(record) * 0x9e3779b97f4a7c15ull + static_cast<uint64_t>(slot);
    h ^= h >> 29;
    h *= 0xbf58476d1ce4e5b9ull;
    h ^= h >> 32;
    return static_cast<float>(static_cast<int64_t>(h % 2000001) - 1000000) / 977.0f;
  }

  status gather(const int64_t* idx, int64_t n, float* x, float* y) const override {
    widest_ = std::max(widest_.load(), n);
    for (int64_t i = 0; i < n; ++i) {
      if (idx[i] == fail_at_)
        return dtrain::corrupt_data("fake.bin: record " + std::to_string(idx[i]) + " is bad");
      for (int64_t f = 0; f < 24; ++f)
        x[i * 24 + f] = value(idx[i], f);
      y[i * 2] = static_cast<float>(idx[i] % 5);
      y[i * 2 + 1] = value(idx[i], 100);
    }
    return status::ok();
  }

  int64_t widest() const { return widest_.load(); }

private:
  int64_t n_, fail_at_;
  mutable std::atomic<int64_t> widest_{0};
};

// Gathers `order` from both sets and compares every byte.
void expect_same(const dataset& got, const dataset& want, const std::vector<int64_t>& order) {
  const auto n = static_cast<int64_t>(order.size());
  std::vector<float> x1(order.size() * 24), y1(order.size() * 2);
  std::vector<float> x2(x1.size()), y2(y1.size());
  const status s = got.gather(order.data(), n, x1.data(), y1.data());
  BOOST_TEST_REQUIRE(s.is_ok(), s.to_string());
  BOOST_TEST_REQUIRE(want.gather(order.data(), n, x2.data(), y2.data()).is_ok());
  BOOST_TEST(std::memcmp(x1.data(), x2.data(), x1.size() * sizeof(float)) == 0);
  BOOST_TEST(std::memcmp(y1.data(), y2.data(), y1.size() * sizeof(float)) == 0);
}

std::vector<int64_t> shuffled(int64_t n, unsigned seed) {
  std::vector<int64_t> order(static_cast<size_t>(n));
  std::iota(order.begin(), order.end(), 0);
  std::shuffle(order.begin(), order.end(), std::mt19937(seed));
  return order;
}

std::shared_ptr<const shard_dataset> open_ok(const std::string& dir) {
  auto opened = open_shards(dir);
  BOOST_TEST_REQUIRE(opened.is_ok(), opened.error().to_string());
  auto set = std::dynamic_pointer_cast<const shard_dataset>(*opened);
  BOOST_TEST_REQUIRE(set != nullptr);
  return set;
}

void write_ok(const dataset& source, const std::string& dir, int64_t shard_bytes,
              const std::string& encoding) {
  const status s = write_shards(source, shard_write_options{dir, shard_bytes, encoding});
  BOOST_TEST_REQUIRE(s.is_ok(), s.to_string());
}

int64_t file_size(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 ? static_cast<int64_t>(st.st_size) : -1;
}

void flip_byte(const std::string& path, size_t at) {
  std::string bytes = dtrain::testing::read_file(path);
  BOOST_TEST_REQUIRE(at < bytes.size());
  bytes[at] = static_cast<char>(bytes[at] ^ 0x40);
  dtrain::testing::write_file(path, bytes);
}

} // namespace

BOOST_AUTO_TEST_SUITE(record_shards)

BOOST_AUTO_TEST_CASE(raw_round_trip_is_bit_exact_with_layout_and_metadata) {
  temp_dir tmp;
  const fake_images source(1000);
  // 104-byte records: 10 per 1,040-byte shard, so 100 shards.
  write_ok(source, tmp.file("set"), 1040, "raw");
  auto set = open_ok(tmp.file("set"));
  BOOST_TEST(set->size() == 1000);
  BOOST_TEST(set->feature_count() == 24);
  BOOST_TEST(set->target_count() == 2);
  BOOST_TEST(set->class_count() == 5);
  BOOST_TEST((set->sample_shape() == std::vector<int64_t>{2, 3, 4}));
  BOOST_TEST(set->encoding() == "raw");
  BOOST_TEST(set->source_name() == "fake images");
  const std::vector<int64_t> starts = set->shard_starts();
  BOOST_TEST_REQUIRE(starts.size() == 100u);
  for (size_t s = 0; s < starts.size(); ++s)
    BOOST_TEST(starts[s] == static_cast<int64_t>(s) * 10);
  expect_same(*set, source, shuffled(1000, 1));
}

BOOST_AUTO_TEST_CASE(deflate_round_trip_is_bit_exact) {
  temp_dir tmp;
  const fake_images source(777);
  write_ok(source, tmp.file("set"), 4096, "deflate");
  auto set = open_ok(tmp.file("set"));
  BOOST_TEST(set->encoding() == "deflate");
  BOOST_TEST(set->shard_starts().size() > 1u);
  BOOST_TEST(set->verify_all().is_ok());
  expect_same(*set, source, shuffled(777, 2));
}

BOOST_AUTO_TEST_CASE(every_shard_respects_the_size_bound_and_starts_add_up) {
  for (const std::string encoding : {"raw", "deflate"}) {
    temp_dir tmp;
    const fake_images source(2000);
    const int64_t bound = 3000;
    write_ok(source, tmp.file("set"), bound, encoding);
    auto set = open_ok(tmp.file("set"));
    const auto& shards = set->shards();
    BOOST_TEST_REQUIRE(shards.size() > 2u);
    int64_t records = 0;
    for (size_t s = 0; s < shards.size(); ++s) {
      BOOST_TEST(file_size(shards[s].path) == shards[s].bytes);
      BOOST_TEST(shards[s].bytes <= bound, shards[s].path << " " << shards[s].bytes);
      BOOST_TEST(set->shard_starts()[s] == records);
      records += shards[s].records;
    }
    BOOST_TEST(records == 2000);
  }
}

BOOST_AUTO_TEST_CASE(a_record_larger_than_the_bound_gets_a_shard_of_its_own) {
  temp_dir tmp;
  const fake_images source(5);
  write_ok(source, tmp.file("set"), 10, "raw");
  auto set = open_ok(tmp.file("set"));
  BOOST_TEST(set->shard_starts().size() == 5u);
  expect_same(*set, source, {4, 0, 3, 1, 2});
}

BOOST_AUTO_TEST_CASE(the_source_is_read_in_bounded_chunks) {
  temp_dir tmp;
  const fake_images source(100000);  // 10.4 MB of records
  write_ok(source, tmp.file("set"), 1 << 20, "raw");
  // At most 4 MiB per gather: 40,329 records of 104 bytes.
  BOOST_TEST(source.widest() > 0);
  BOOST_TEST(source.widest() * 104 <= (4 << 20));
  BOOST_TEST(open_ok(tmp.file("set"))->size() == 100000);
}

BOOST_AUTO_TEST_CASE(a_shard_directory_is_told_from_other_directories) {
  temp_dir tmp;
  BOOST_TEST(!dtrain::data::is_shard_directory(tmp.path()));
  write_ok(fake_images(3), tmp.file("set"), 1024, "raw");
  BOOST_TEST(dtrain::data::is_shard_directory(tmp.file("set")));
  BOOST_TEST(!dtrain::data::is_shard_directory(tmp.file("set") + "/index.bin"));
}

BOOST_AUTO_TEST_CASE(an_empty_source_gives_an_empty_set) {
  temp_dir tmp;
  write_ok(fake_images(0), tmp.file("set"), 1024, "deflate");
  auto set = open_ok(tmp.file("set"));
  BOOST_TEST(set->size() == 0);
  BOOST_TEST(set->shard_starts().empty());
}

BOOST_AUTO_TEST_CASE(a_flipped_byte_is_corrupt_data_naming_the_shard_and_only_that_shard) {
  for (const std::string encoding : {"raw", "deflate"}) {
    temp_dir tmp;
    const fake_images source(100);
    write_ok(source, tmp.file("set"), 1040, encoding);
    auto first = open_ok(tmp.file("set"));
    const std::string victim = first->shards()[1].path;
    flip_byte(victim, 17);
    auto set = open_ok(tmp.file("set"));  // open maps; it does not read
    const int64_t bad = set->shard_starts()[1];
    std::vector<float> x(24), y(2);
    for (int attempt = 0; attempt < 2; ++attempt) {  // remembered, not retried
      const status s = set->gather(&bad, 1, x.data(), y.data());
      BOOST_TEST(s.code() == error_code::corrupt_data);
      BOOST_TEST(s.message().find(victim) != std::string::npos, s.message());
      BOOST_TEST(s.message().find("checksum") != std::string::npos, s.message());
    }
    expect_same(*set, source, {0, 1, static_cast<int64_t>(set->shard_starts()[2])});
    BOOST_TEST(set->verify_all().code() == error_code::corrupt_data);
  }
}

BOOST_AUTO_TEST_CASE(a_truncated_shard_is_corrupt_data_naming_it) {
  temp_dir tmp;
  write_ok(fake_images(100), tmp.file("set"), 1040, "raw");
  const std::string victim = open_ok(tmp.file("set"))->shards()[3].path;
  std::filesystem::resize_file(victim, 1000);
  auto opened = open_shards(tmp.file("set"));
  BOOST_TEST_REQUIRE(!opened.is_ok());
  BOOST_TEST(opened.error().code() == error_code::corrupt_data);
  BOOST_TEST(opened.error().message().find(victim) != std::string::npos, opened.error().message());
  BOOST_TEST(opened.error().message().find("truncated") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(a_missing_shard_is_not_found_naming_its_path) {
  temp_dir tmp;
  write_ok(fake_images(100), tmp.file("set"), 1040, "deflate");
  const std::string victim = open_ok(tmp.file("set"))->shards()[2].path;
  std::filesystem::remove(victim);
  auto opened = open_shards(tmp.file("set"));
  BOOST_TEST_REQUIRE(!opened.is_ok());
  BOOST_TEST(opened.error().code() == error_code::not_found);
  BOOST_TEST(opened.error().message().find(victim) != std::string::npos, opened.error().message());
}

BOOST_AUTO_TEST_CASE(a_damaged_or_missing_index_is_refused_naming_it) {
  temp_dir tmp;
  write_ok(fake_images(50), tmp.file("set"), 1040, "raw");
  const std::string index = tmp.file("set") + "/index.bin";
  flip_byte(index, 30);
  auto damaged = open_shards(tmp.file("set"));
  BOOST_TEST_REQUIRE(!damaged.is_ok());
  BOOST_TEST(damaged.error().code() == error_code::corrupt_data);
  BOOST_TEST(damaged.error().message().find(index) != std::string::npos);
  dtrain::testing::write_file(index, "DTRSHIDX");
  BOOST_TEST(open_shards(tmp.file("set")).error().code() == error_code::corrupt_data);
  auto missing = open_shards(tmp.file("nothing-here"));
  BOOST_TEST(missing.error().code() == error_code::not_found);
  BOOST_TEST(missing.error().message().find("nothing-here/index.bin") != std::string::npos);
}

// Found by fuzz/shard_index: counts whose sums and products overflowed
// int64 (undefined behaviour; as it wrapped, a checked bound could pass).
BOOST_AUTO_TEST_CASE(index_counts_that_would_overflow_are_refused) {
  namespace format = dtrain::data::shard_format;
  format::index idx;
  idx.encoding = "raw";
  idx.size = 1;
  idx.feature_count = 1;
  idx.sample_shape = {1};
  idx.target_count = int64_t{1} << 62;
  idx.shards = {{format::shard_file_name(0), 1, 8, 0}};
  auto huge_targets = format::decode(format::encode(idx), "set/index.bin");
  BOOST_TEST_REQUIRE(!huge_targets.is_ok());
  BOOST_TEST(huge_targets.error().code() == error_code::corrupt_data);
  BOOST_TEST(huge_targets.error().message().find("targets per record") != std::string::npos,
             huge_targets.error().message());
  // -1, then -3, then -3 * 0x5555555555555555, which wrapped around to 1.
  idx.target_count = 0;
  idx.sample_shape = {-1, 3, 0x5555555555555555};
  auto negative_axis = format::decode(format::encode(idx), "set/index.bin");
  BOOST_TEST_REQUIRE(!negative_axis.is_ok());
  BOOST_TEST(negative_axis.error().message().find("does not multiply") != std::string::npos,
             negative_axis.error().message());
  idx.sample_shape = {1};
  idx.size = INT64_MAX;
  idx.shards = {{"a", INT64_MAX, 8, 0}, {"b", 1, 8, 0}};
  auto too_many = format::decode(format::encode(idx), "set/index.bin");
  BOOST_TEST_REQUIRE(!too_many.is_ok());
  BOOST_TEST(too_many.error().message().find("more than the index's") != std::string::npos,
             too_many.error().message());
}

// Found by reading the code behind fuzz/shard_index: 8 * (records + 1)
// wrapped around, so a deflate shard claiming 2^61 - 1 records passed the
// size check and its offset table was read past the end of the mapping.
BOOST_AUTO_TEST_CASE(an_offset_table_larger_than_its_shard_is_refused_before_it_is_read) {
  namespace format = dtrain::data::shard_format;
  temp_dir tmp;
  std::filesystem::create_directories(tmp.file("set"));
  const int64_t records = (int64_t{1} << 61) - 1;
  format::index idx;
  idx.encoding = "deflate";
  idx.size = records;
  idx.feature_count = 1;
  idx.sample_shape = {1};
  // One page of zeros (an offset table ending in 0); its zlib crc32 is 0xc71c0011.
  idx.shards = {{format::shard_file_name(0), records, 4096, 0xc71c0011u}};
  dtrain::testing::write_file(tmp.file("set") + "/" + format::index_name, format::encode(idx));
  dtrain::testing::write_file(tmp.file("set") + "/" + format::shard_file_name(0),
                              std::string(4096, '\0'));
  auto set = open_ok(tmp.file("set"));
  const int64_t first = 0;
  std::vector<float> x(1), y(1);
  const status s = set->gather(&first, 1, x.data(), y.data());
  BOOST_TEST(s.code() == error_code::corrupt_data);
  BOOST_TEST(s.message().find("too small for its offset table") != std::string::npos, s.message());
}

BOOST_AUTO_TEST_CASE(concurrent_gathers_from_four_threads_agree_with_the_source) {
  for (const std::string encoding : {"raw", "deflate"}) {
    temp_dir tmp;
    const fake_images source(3000);
    write_ok(source, tmp.file("set"), 8192, encoding);
    auto set = open_ok(tmp.file("set"));  // no shard verified yet: threads race to it
    std::atomic<int> failures{0};
    std::vector<std::thread> threads;
    for (unsigned t = 0; t < 4; ++t) {
      threads.emplace_back([&, t] {
        const std::vector<int64_t> order = shuffled(3000, 10 + t);
        std::vector<float> x1(24 * 3000), y1(2 * 3000), x2(x1.size()), y2(y1.size());
        for (size_t at = 0; at < order.size(); at += 64) {
          const int64_t n = std::min<int64_t>(64, static_cast<int64_t>(order.size() - at));
          if (!set->gather(order.data() + at, n, x1.data() + at * 24, y1.data() + at * 2))
            ++failures;
        }
        (void)source.gather(order.data(), 3000, x2.data(), y2.data());
        if (x1 != x2 || y1 != y2)
          ++failures;
      });
    }
    for (auto& thread : threads)
      thread.join();
    BOOST_TEST(failures.load() == 0, encoding);
  }
}

BOOST_AUTO_TEST_CASE(a_failing_source_leaves_nothing_behind) {
  temp_dir tmp;
  const fake_images source(5000, 4321);
  const status s = write_shards(source, shard_write_options{tmp.file("set"), 4096, "raw"});
  BOOST_TEST(s.code() == error_code::corrupt_data);
  BOOST_TEST(s.message().find("fake.bin: record 4321") != std::string::npos, s.message());
  BOOST_TEST(s.message().find(tmp.file("set")) != std::string::npos, s.message());
  BOOST_TEST(dtrain::testing::entries(tmp.path()).empty());  // no set, no temporary
}

BOOST_AUTO_TEST_CASE(bad_options_and_an_existing_directory_are_refused) {
  temp_dir tmp;
  const fake_images source(10);
  auto code = [&](shard_write_options o) { return write_shards(source, o).code(); };
  BOOST_TEST(code({"", 1024, "raw"}) == error_code::invalid_argument);
  BOOST_TEST(code({tmp.file("a"), 0, "raw"}) == error_code::invalid_argument);
  BOOST_TEST(code({tmp.file("a"), 1024, "zstd"}) == error_code::invalid_argument);
  const status exists = write_shards(source, {tmp.path(), 1024, "raw"});
  BOOST_TEST(exists.code() == error_code::io_error);
  BOOST_TEST(exists.message().find("already exists") != std::string::npos);
  BOOST_TEST(dtrain::testing::entries(tmp.path()).empty());
}

BOOST_AUTO_TEST_SUITE_END()
