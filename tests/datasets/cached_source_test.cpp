// cache_in_memory (datasets/cached.hpp) and a source's cache: key: the base
// is read once per sample, whatever the threads, and the limit is an error
// naming the size.
#include <boost/test/unit_test.hpp>

#include <atomic>
#include <thread>
#include <vector>

#include "dtrain/datasets/cached.hpp"
#include "dtrain/datasets/source.hpp"
#include "support/test_util.hpp"

namespace {

using dtrain::error_code;

// Sample i is [i, -i] with target i % 3; counts the samples it is asked for.
class counting_dataset final : public dtrain::data::dataset {
public:
  explicit counting_dataset(int64_t n) : n_(n) {}
  int64_t size() const override { return n_; }
  int64_t feature_count() const override { return 2; }
  int64_t target_count() const override { return 1; }
  std::string name() const override { return "counting"; }
  int64_t class_count() const override { return 3; }
  dtrain::status gather(const int64_t* idx, int64_t n, float* x, float* y) const override {
    for (int64_t i = 0; i < n; ++i) {
      x[2 * i] = static_cast<float>(idx[i]);
      x[2 * i + 1] = -static_cast<float>(idx[i]);
      y[i] = static_cast<float>(idx[i] % 3);
      reads_ += 1;
    }
    return dtrain::status::ok();
  }
  int64_t reads() const { return reads_; }

private:
  int64_t n_;
  mutable std::atomic<int64_t> reads_{0};
};

} // namespace

BOOST_AUTO_TEST_SUITE(cached_source)

BOOST_AUTO_TEST_CASE(each_sample_is_read_from_the_base_once_and_then_copied) {
  auto base = std::make_shared<counting_dataset>(1000);
  auto cached = dtrain::data::cache_in_memory(base, 1 << 20);
  BOOST_TEST_REQUIRE(cached.is_ok(), cached.error().to_string());
  BOOST_TEST((*cached)->class_count() == 3);
  // Four threads over the whole set, twice: the values are the base's, and
  // the base is read about once per sample (a sample two threads asked for
  // at the same moment may be read twice, never more often than asked).
  for (int pass = 0; pass < 2; ++pass) {
    std::vector<std::thread> threads;
    std::atomic<int> wrong{0};
    for (int t = 0; t < 4; ++t)
      threads.emplace_back([&, t] {
        std::vector<int64_t> idx;
        for (int64_t i = t; i < 1000; i += 4)
          idx.push_back(i);
        std::vector<float> x(2 * idx.size()), y(idx.size());
        if (!(*cached)->gather(idx.data(), static_cast<int64_t>(idx.size()), x.data(), y.data()))
          ++wrong;
        for (size_t k = 0; k < idx.size(); ++k)
          if (x[2 * k] != static_cast<float>(idx[k]) || y[k] != static_cast<float>(idx[k] % 3))
            ++wrong;
      });
    for (auto& t : threads)
      t.join();
    BOOST_TEST(wrong.load() == 0);
    BOOST_TEST(base->reads() == 1000);  // the second pass read nothing
  }
}

BOOST_AUTO_TEST_CASE(a_set_over_the_limit_is_refused_naming_its_size) {
  auto made = dtrain::data::cache_in_memory(std::make_shared<counting_dataset>(1 << 20), 1 << 20);
  BOOST_TEST_REQUIRE(!made.is_ok());
  BOOST_TEST(made.error().code() == error_code::resource_exhausted);
  BOOST_TEST(made.error().message().find("12 MiB, over the 1 MiB") != std::string::npos,
             made.error().message());
}

BOOST_AUTO_TEST_CASE(a_source_takes_cache_and_cache_mb) {
  dtrain::testing::temp_dir dir;
  const std::string path = dir.file("t.csv");
  dtrain::testing::write_file(path, "a,b,label\n1,2,0\n3,4,1\n5,6,0\n");
  auto set = dtrain::data::open_source({{"format", "csv"}, {"path", path}, {"target", "label"},
                                        {"cache", "true"}},
                                       "data.train");
  BOOST_TEST_REQUIRE(set.is_ok(), set.error().to_string());
  std::vector<int64_t> idx = {2, 0};
  std::vector<float> x(4), y(2);
  BOOST_TEST_REQUIRE((*set)->gather(idx.data(), 2, x.data(), y.data()).is_ok());
  BOOST_TEST(x == (std::vector<float>{5, 6, 1, 2}), boost::test_tools::per_element());
  auto small = dtrain::data::open_source({{"format", "csv"}, {"path", path}, {"target", "label"},
                                          {"cache", "true"}, {"cache_mb", "0"}},
                                         "data.train");
  BOOST_TEST_REQUIRE(!small.is_ok());
  BOOST_TEST(small.error().message().find("data.train") != std::string::npos,
             small.error().message());
}

BOOST_AUTO_TEST_SUITE_END()
