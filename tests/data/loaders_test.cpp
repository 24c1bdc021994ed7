// shard_sampler and loader: shards that partition each epoch, reproducible
// orders, batches that hold the right rows, and a prefetch thread that stops
// promptly whenever it is asked to.
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <functional>
#include <future>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "dtrain/cuda/runtime.hpp"
#include "dtrain/data/loader.hpp"
#include "dtrain/data/sampler.hpp"

namespace {

using dtrain::error_code;
using dtrain::tensor;
using dtrain::data::batch;
using dtrain::data::loader;
using dtrain::data::loader_options;
using dtrain::data::shard_options;
using dtrain::data::shard_sampler;
using namespace std::chrono_literals;

shard_sampler make_sampler(int64_t size, int num_ranks = 1, int rank = 0,
                           bool drop_last = false, uint64_t seed = 0, bool shuffle = true) {
  shard_options options;
  options.size = size;
  options.num_ranks = num_ranks;
  options.rank = rank;
  options.drop_last = drop_last;
  options.seed = seed;
  options.shuffle = shuffle;
  auto made = shard_sampler::create(options);
  BOOST_TEST_REQUIRE(made.is_ok(), made.error().to_string());
  return *made;
}

/// Row i is [i, i + 0.5, -i] with targets [2 i] (or [2 i, 3 i] with two
/// targets), so any gathered row says which sample it is. Optionally slow,
/// to keep the prefetch thread busy.
class index_dataset final : public dtrain::data::dataset {
public:
  index_dataset(int64_t size, int64_t targets, std::chrono::milliseconds delay = 0ms)
    : size_(size), targets_(targets), delay_(delay) {}
  int64_t size() const override { return size_; }
  int64_t feature_count() const override { return 3; }
  int64_t target_count() const override { return targets_; }
  std::string name() const override { return "index dataset"; }
  dtrain::status gather(const int64_t* indices, int64_t n, float* features,
                        float* targets) const override {
    if (delay_ > 0ms)
      std::this_thread::sleep_for(delay_);
    for (int64_t i = 0; i < n; ++i) {
      auto v = static_cast<float>(indices[i]);
      features[3 * i] = v;
      features[3 * i + 1] = v + 0.5f;
      features[3 * i + 2] = -v;
      targets[targets_ * i] = 2 * v;
      if (targets_ == 2)
        targets[2 * i + 1] = 3 * v;
    }
    gathers_ += 1;
    return dtrain::status::ok();
  }
  int gathers() const { return gathers_; }

private:
  int64_t size_;
  int64_t targets_;
  std::chrono::milliseconds delay_;
  mutable std::atomic<int> gathers_{0};
};

std::unique_ptr<loader> make_loader(std::shared_ptr<const dtrain::data::dataset> data,
                                    shard_sampler sampler, int64_t batch_size,
                                    int prefetch, bool drop_last = false) {
  loader_options options;
  options.batch_size = batch_size;
  options.prefetch = prefetch;
  options.drop_last = drop_last;
  auto made = loader::create(std::move(data), std::move(sampler), options);
  BOOST_TEST_REQUIRE(made.is_ok(), made.error().to_string());
  return std::move(made).value();
}

// Consumes the rest of an epoch; checks every row against its index and
// returns the sample indices in order and the batch sizes.
std::vector<int64_t> drain(loader& l, std::vector<int64_t>* sizes = nullptr) {
  std::vector<int64_t> seen;
  const int64_t targets = l.source().target_count();
  while (const batch* b = l.next()) {
    if (sizes != nullptr)
      sizes->push_back(b->size());
    BOOST_TEST_REQUIRE(b->features.shape() == (dtrain::shape_t{b->size(), 3}),
                       boost::test_tools::per_element());
    auto want_targets = targets == 1 ? dtrain::shape_t{b->size()}
                                     : dtrain::shape_t{b->size(), targets};
    BOOST_TEST_REQUIRE(b->targets.shape() == want_targets, boost::test_tools::per_element());
    auto x = b->features.to_vector();
    auto y = b->targets.to_vector();
    for (int64_t i = 0; i < b->size(); ++i) {
      float v = x[static_cast<size_t>(3 * i)];
      BOOST_TEST_REQUIRE(x[static_cast<size_t>(3 * i + 1)] == v + 0.5f);
      BOOST_TEST_REQUIRE(x[static_cast<size_t>(3 * i + 2)] == -v);
      BOOST_TEST_REQUIRE(y[static_cast<size_t>(targets * i)] == 2 * v);
      if (targets == 2)
        BOOST_TEST_REQUIRE(y[static_cast<size_t>(2 * i + 1)] == 3 * v);
      seen.push_back(static_cast<int64_t>(v));
    }
  }
  return seen;
}

std::vector<int64_t> sorted(std::vector<int64_t> v) {
  std::sort(v.begin(), v.end());
  return v;
}

std::vector<int64_t> iota(int64_t n) {
  std::vector<int64_t> out(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i)
    out[static_cast<size_t>(i)] = i;
  return out;
}

// Runs `action` on another thread and says whether it finished in `limit`.
// On a timeout the thread is left behind (the test has failed anyway).
bool finishes_within(std::function<void()> action, std::chrono::milliseconds limit) {
  auto done = std::make_shared<std::promise<void>>();
  std::future<void> finished = done->get_future();
  std::thread([action = std::move(action), done] {
    action();
    done->set_value();
  }).detach();
  return finished.wait_for(limit) == std::future_status::ready;
}

boost::test_tools::assertion_result with_cuda(boost::unit_test::test_unit_id) {
  boost::test_tools::assertion_result ok(dtrain::cuda::available());
  ok.message() << "no CUDA device: " << dtrain::cuda::unavailable_reason();
  return ok;
}

boost::test_tools::assertion_result without_cuda(boost::unit_test::test_unit_id) {
  boost::test_tools::assertion_result ok(!dtrain::cuda::available());
  ok.message() << "a CUDA device is present";
  return ok;
}

} // namespace

BOOST_AUTO_TEST_SUITE(loaders)

BOOST_AUTO_TEST_CASE(shards_of_all_ranks_are_disjoint_and_cover_the_epoch) {
  for (int ranks = 1; ranks <= 4; ++ranks) {
    for (int64_t size : {0, 1, 5, 12, 13, 100, 101}) {
      for (bool drop_last : {false, true}) {
        BOOST_TEST_CONTEXT("ranks " << ranks << ", size " << size << ", drop_last "
                                    << drop_last) {
          std::map<int64_t, int> count;
          int64_t total = 0;
          const int64_t per_rank = make_sampler(size, ranks, 0, drop_last).shard_size();
          for (int rank = 0; rank < ranks; ++rank) {
            auto shard = make_sampler(size, ranks, rank, drop_last).indices(5);
            BOOST_TEST(static_cast<int64_t>(shard.size()) == per_rank);
            for (int64_t i : shard) {
              BOOST_TEST_REQUIRE((i >= 0 && i < size));
              ++count[i];
            }
            total += static_cast<int64_t>(shard.size());
          }
          if (drop_last) {
            BOOST_TEST(per_rank == size / ranks);
            BOOST_TEST(static_cast<int64_t>(count.size()) == total);  // disjoint
          } else {
            BOOST_TEST(per_rank == (size + ranks - 1) / ranks);
            BOOST_TEST(static_cast<int64_t>(count.size()) == size);  // covers all
            // Only the padding repeats samples, and only when size does not divide.
            BOOST_TEST(total - size == (size % ranks == 0 ? 0 : ranks - size % ranks));
          }
        }
      }
    }
  }
}

BOOST_AUTO_TEST_CASE(different_epochs_give_different_orders) {
  auto sampler = make_sampler(1000);
  BOOST_TEST((sampler.indices(0) != sampler.indices(1)));
  BOOST_TEST((sampler.indices(1) != sampler.indices(2)));
  BOOST_TEST((sorted(sampler.indices(0)) == iota(1000)));
}

BOOST_AUTO_TEST_CASE(same_seed_gives_the_same_order_and_another_seed_another) {
  auto a = make_sampler(1000, 2, 1, false, 17).indices(3);
  auto b = make_sampler(1000, 2, 1, false, 17).indices(3);
  auto c = make_sampler(1000, 2, 1, false, 18).indices(3);
  BOOST_TEST((a == b));
  BOOST_TEST((a != c));
}

BOOST_AUTO_TEST_CASE(shuffle_off_strides_through_the_natural_order) {
  auto shard = make_sampler(10, 3, 1, false, 0, false).indices(7);
  BOOST_TEST(shard == (std::vector<int64_t>{1, 4, 7, 0}), boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(invalid_rank_or_sizes_are_invalid_arguments) {
  for (auto [size, ranks, rank] :
       std::vector<std::tuple<int64_t, int, int>>{{10, 2, 2}, {10, 2, -1}, {10, 0, 0}, {-1, 1, 0}}) {
    shard_options options;
    options.size = size;
    options.num_ranks = ranks;
    options.rank = rank;
    auto made = shard_sampler::create(options);
    BOOST_TEST_REQUIRE(!made.is_ok());
    BOOST_TEST(made.error().code() == error_code::invalid_argument);
  }
  shard_options options;
  options.num_ranks = 4;
  options.rank = 4;
  auto made = shard_sampler::create(options);
  BOOST_TEST(made.error().message().find("rank 4") != std::string::npos,
             made.error().message());
}

BOOST_AUTO_TEST_CASE(every_sample_is_seen_once_per_epoch_with_and_without_prefetch) {
  auto data = std::make_shared<index_dataset>(103, 1);
  for (int prefetch : {0, 1, 2, 5}) {
    BOOST_TEST_CONTEXT("prefetch " << prefetch) {
      auto l = make_loader(data, make_sampler(103), 10, prefetch);
      BOOST_TEST(l->batches_per_epoch() == 11);
      for (int64_t epoch = 0; epoch < 3; ++epoch) {
        l->begin_epoch(epoch);
        std::vector<int64_t> sizes;
        auto seen = drain(*l, &sizes);
        BOOST_TEST((sorted(seen) == iota(103)));
        BOOST_TEST((seen == make_sampler(103).indices(epoch)));  // the sampler's order
        BOOST_TEST(sizes.size() == 11u);
        BOOST_TEST(sizes.back() == 3);  // the last, partial batch
        BOOST_TEST(l->next() == nullptr);  // and the end stays the end
      }
    }
  }
}

BOOST_AUTO_TEST_CASE(drop_last_skips_the_partial_batch) {
  auto data = std::make_shared<index_dataset>(103, 2);
  for (int prefetch : {0, 2}) {
    auto l = make_loader(data, make_sampler(103), 10, prefetch, true);
    BOOST_TEST(l->batches_per_epoch() == 10);
    l->begin_epoch(0);
    std::vector<int64_t> sizes;
    auto seen = drain(*l, &sizes);
    BOOST_TEST(sizes == std::vector<int64_t>(10, 10), boost::test_tools::per_element());
    BOOST_TEST(std::set<int64_t>(seen.begin(), seen.end()).size() == 100u);
  }
}

BOOST_AUTO_TEST_CASE(one_target_comes_out_flat_and_several_as_a_matrix) {
  for (int64_t targets : {1, 2}) {
    auto l = make_loader(std::make_shared<index_dataset>(8, targets), make_sampler(8), 4, 1);
    l->begin_epoch(0);
    const batch* b = l->next();
    BOOST_TEST_REQUIRE(b != nullptr);
    BOOST_TEST(b->targets.dim() == (targets == 1 ? 1 : 2));
    BOOST_TEST(b->targets.size(0) == 4);
  }
}

BOOST_AUTO_TEST_CASE(ranks_loaders_together_cover_the_dataset) {
  auto data = std::make_shared<index_dataset>(64, 1);
  std::vector<int64_t> all;
  for (int rank = 0; rank < 4; ++rank) {
    auto l = make_loader(data, make_sampler(64, 4, rank, false, 9), 5, 2);
    l->begin_epoch(2);
    auto seen = drain(*l);
    BOOST_TEST(seen.size() == 16u);
    all.insert(all.end(), seen.begin(), seen.end());
  }
  BOOST_TEST((sorted(all) == iota(64)));
}

BOOST_AUTO_TEST_CASE(batch_buffers_are_reused_across_steps_and_epochs) {
  auto data = std::make_shared<index_dataset>(1000, 1);
  auto l = make_loader(data, make_sampler(1000), 10, 2);
  std::set<const float*> buffers;
  for (int64_t epoch = 0; epoch < 3; ++epoch) {
    l->begin_epoch(epoch);
    while (const batch* b = l->next())
      buffers.insert(b->features.data());
  }
  // prefetch queued + one being filled + one held by the consumer.
  BOOST_TEST(buffers.size() <= 4u);
}

BOOST_AUTO_TEST_CASE(next_before_any_epoch_returns_null) {
  auto l = make_loader(std::make_shared<index_dataset>(10, 1), make_sampler(10), 4, 2);
  BOOST_TEST(l->next() == nullptr);
}

BOOST_AUTO_TEST_CASE(empty_dataset_gives_empty_epochs) {
  for (int prefetch : {0, 2}) {
    auto l = make_loader(std::make_shared<index_dataset>(0, 1), make_sampler(0), 4, prefetch);
    BOOST_TEST(l->batches_per_epoch() == 0);
    l->begin_epoch(0);
    BOOST_TEST(l->next() == nullptr);
  }
}

BOOST_AUTO_TEST_CASE(destroying_a_loader_mid_epoch_returns_promptly) {
  // A fast dataset whose worker is blocked on a full queue, and a slow one
  // whose worker is inside gather: both must be stopped and joined quickly.
  for (auto delay : {0ms, 50ms}) {
    BOOST_TEST_CONTEXT("gather delay " << delay.count() << " ms") {
      auto data = std::make_shared<index_dataset>(100000, 1, delay);
      std::shared_ptr<loader> l = make_loader(data, make_sampler(100000), 8, 3);
      l->begin_epoch(0);
      BOOST_TEST_REQUIRE(l->next() != nullptr);
      std::this_thread::sleep_for(100ms);  // let the worker fill the queue
      BOOST_TEST(data->gathers() <= 1 + 3 + 1);  // the queue bound holds
      auto start = std::chrono::steady_clock::now();
      BOOST_TEST(finishes_within([l = std::move(l)]() mutable { l.reset(); }, 5000ms));
      double seconds =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      BOOST_TEST(seconds < 1.0);
    }
  }
}

BOOST_AUTO_TEST_CASE(begin_epoch_mid_epoch_restarts_cleanly) {
  auto data = std::make_shared<index_dataset>(97, 1);
  for (int prefetch : {0, 2}) {
    BOOST_TEST_CONTEXT("prefetch " << prefetch) {
      auto l = make_loader(data, make_sampler(97), 7, prefetch);
      l->begin_epoch(0);
      for (int i = 0; i < 3; ++i)
        BOOST_TEST_REQUIRE(l->next() != nullptr);
      BOOST_TEST(finishes_within([&] { l->begin_epoch(1); }, 5000ms));
      auto seen = drain(*l);
      BOOST_TEST((seen == make_sampler(97).indices(1)));
      // And straight back to an epoch already seen, abandoned at its start.
      l->begin_epoch(0);
      l->begin_epoch(0);
      BOOST_TEST((drain(*l) == make_sampler(97).indices(0)));
    }
  }
}

BOOST_AUTO_TEST_CASE(invalid_loader_options_are_refused) {
  auto data = std::make_shared<index_dataset>(10, 1);
  loader_options options;
  options.batch_size = 0;
  BOOST_TEST(loader::create(data, make_sampler(10), options).error().code() ==
             error_code::invalid_argument);
  options = {};
  options.prefetch = -1;
  BOOST_TEST(loader::create(data, make_sampler(10), options).error().code() ==
             error_code::invalid_argument);
  auto wrong_size = loader::create(data, make_sampler(11), {});
  BOOST_TEST(wrong_size.error().code() == error_code::invalid_argument);
  BOOST_TEST(wrong_size.error().message().find("index dataset") != std::string::npos,
             wrong_size.error().message());
  BOOST_TEST(loader::create(nullptr, make_sampler(10), {}).error().code() ==
             error_code::invalid_argument);
}

BOOST_AUTO_TEST_CASE(cuda_destination_without_a_device_is_unavailable,
                     *boost::unit_test::precondition(without_cuda)) {
  loader_options options;
  options.where = dtrain::device::cuda(0);
  auto made = loader::create(std::make_shared<index_dataset>(10, 1), make_sampler(10), options);
  BOOST_TEST_REQUIRE(!made.is_ok());
  BOOST_TEST(made.error().code() == error_code::unavailable);
  BOOST_TEST(made.error().message().find("cuda:0") != std::string::npos,
             made.error().message());
}

BOOST_AUTO_TEST_CASE(cuda_loader_delivers_the_same_batches_on_the_device,
                     *boost::unit_test::precondition(with_cuda)) {
  auto data = std::make_shared<index_dataset>(50, 2);
  for (int prefetch : {0, 2}) {
    loader_options options;
    options.batch_size = 8;
    options.prefetch = prefetch;
    options.where = dtrain::device::cuda(0);
    auto made = loader::create(data, make_sampler(50), options);
    BOOST_TEST_REQUIRE(made.is_ok(), made.error().to_string());
    auto& l = **made;
    l.begin_epoch(4);
    const batch* first = l.next();
    BOOST_TEST_REQUIRE(first != nullptr);
    BOOST_TEST(first->features.is_cuda());
    BOOST_TEST(first->targets.is_cuda());
    l.begin_epoch(4);
    BOOST_TEST((drain(l) == make_sampler(50).indices(4)));
  }
}

BOOST_AUTO_TEST_SUITE_END()
