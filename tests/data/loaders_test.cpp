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
                           bool drop_last = false, uint64_t seed = 0, bool shuffle = true,
                           std::vector<int64_t> blocks = {}, int64_t window = 0) {
  shard_options options;
  options.block_starts = std::move(blocks);
  options.window = window;
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
                                    int prefetch, int workers = 1,
                                    dtrain::data::transform_list transforms = {}) {
  loader_options options;
  options.batch_size = batch_size;
  options.prefetch = prefetch;
  options.workers = workers;
  options.transforms = std::move(transforms);
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

// Every rank's loader of a group of `ranks`, from `position` to the end of
// epoch `epoch`: the samples each trained, appended to `seen`.
void run_group(std::shared_ptr<const dtrain::data::dataset> data, int ranks, int64_t per_rank,
               int64_t epoch, int64_t position, int64_t steps, std::vector<int64_t>& seen,
               bool drop_last = false, std::vector<int64_t> blocks = {}, int64_t window = 0) {
  for (int rank = 0; rank < ranks; ++rank) {
    auto l = make_loader(data,
                         make_sampler(data->size(), ranks, rank, drop_last, 7, true, blocks,
                                      window),
                         per_rank, 2);
    l->begin_epoch(epoch, position);
    for (int64_t s = 0; s != steps; ++s) {
      const batch* b = l->next();
      if (b == nullptr)
        break;
      seen.insert(seen.end(), b->samples.begin(), b->samples.end());
    }
  }
}

BOOST_AUTO_TEST_CASE(global_batches_of_all_ranks_cover_the_epoch_exactly_once) {
  for (int ranks = 1; ranks <= 4; ++ranks) {
    for (int64_t size : {0, 1, 5, 12, 13, 100, 101}) {
      for (bool drop_last : {false, true}) {
        BOOST_TEST_CONTEXT("ranks " << ranks << ", size " << size << ", drop_last "
                                    << drop_last) {
          auto data = std::make_shared<index_dataset>(size, 1);
          std::vector<int64_t> seen;
          run_group(data, ranks, 3, 5, 0, -1, seen, drop_last);
          const int64_t global = 3 * ranks;
          const int64_t trained = drop_last ? size - size % global : size;
          BOOST_TEST(static_cast<int64_t>(seen.size()) == trained);
          std::set<int64_t> unique(seen.begin(), seen.end());
          BOOST_TEST(unique.size() == seen.size());  // no repeats, no padding
          if (!drop_last)
            BOOST_TEST((sorted(seen) == iota(size)));
        }
      }
    }
  }
}

BOOST_AUTO_TEST_CASE(a_resume_at_any_step_with_another_group_size_trains_each_sample_once) {
  // Three replicas stop after some steps; two (or one, or four) go on from
  // the position saved: the epoch is trained exactly once, as by one group.
  auto data = std::make_shared<index_dataset>(1003, 1);
  const int64_t global = 24;
  for (auto [before, after] : std::vector<std::pair<int, int>>{{3, 2}, {2, 3}, {3, 1}, {4, 3}}) {
    for (int64_t steps : {0, 1, 17, 41}) {
      BOOST_TEST_CONTEXT(before << " replicas for " << steps << " steps, then " << after) {
        std::vector<int64_t> seen;
        run_group(data, before, global / before, 2, 0, steps, seen);
        const int64_t position = std::min<int64_t>(steps * global, 1003);
        BOOST_TEST(static_cast<int64_t>(seen.size()) == position);
        run_group(data, after, global / after, 2, position, -1, seen);
        BOOST_TEST((sorted(seen) == iota(1003)));
      }
    }
  }
}

BOOST_AUTO_TEST_CASE(a_loader_reports_the_position_a_resume_starts_from) {
  auto data = std::make_shared<index_dataset>(50, 1);
  auto l = make_loader(data, make_sampler(50, 2, 1), 4, 2);
  l->begin_epoch(0, 0);
  BOOST_TEST(l->position() == 0);
  l->next();
  l->next();
  BOOST_TEST(l->position() == 16);  // two steps of 2 x 4
  l->begin_epoch(0, 45);
  BOOST_TEST(l->batches_per_epoch() == 7);
  BOOST_TEST(l->next() != nullptr);  // positions 45..49: rank 1 takes 46, 48
  BOOST_TEST(l->position() == 50);
  BOOST_TEST(l->next() == nullptr);
}

BOOST_AUTO_TEST_CASE(the_short_last_step_weighs_each_rank_by_its_share) {
  // 18 samples, 4 ranks of 2: step 2 holds 2 samples, for ranks 0 and 1.
  auto data = std::make_shared<index_dataset>(18, 1);
  for (int rank = 0; rank < 4; ++rank) {
    BOOST_TEST_CONTEXT("rank " << rank) {
      auto l = make_loader(data, make_sampler(18, 4, rank), 2, 0);
      l->begin_epoch(0);
      BOOST_TEST(l->next()->weight == 1.0f);
      BOOST_TEST(l->next()->weight == 1.0f);
      const batch* last = l->next();
      BOOST_TEST_REQUIRE(last != nullptr);
      BOOST_TEST(last->size() == 1);  // a filler row for ranks 2 and 3
      BOOST_TEST(last->weight == (rank < 2 ? 2.0f : 0.0f));
      BOOST_TEST(last->samples.size() == (rank < 2 ? 1u : 0u));
      BOOST_TEST(l->next() == nullptr);
    }
  }
}

BOOST_AUTO_TEST_CASE(the_order_depends_on_seed_and_epoch_only) {
  auto sampler = make_sampler(1000);
  BOOST_TEST((sampler.order(0) != sampler.order(1)));
  BOOST_TEST((sampler.order(1) != sampler.order(2)));
  BOOST_TEST((sorted(sampler.order(0)) == iota(1000)));
  for (int ranks = 2; ranks <= 4; ++ranks)
    BOOST_TEST((make_sampler(1000, ranks, ranks - 1).order(3) == sampler.order(3)));
  auto a = make_sampler(1000, 2, 1, false, 17).order(3);
  auto b = make_sampler(1000, 2, 1, false, 17).order(3);
  auto c = make_sampler(1000, 2, 1, false, 18).order(3);
  BOOST_TEST((a == b));
  BOOST_TEST((a != c));
}

BOOST_AUTO_TEST_CASE(shuffle_off_strides_through_each_global_batch) {
  auto data = std::make_shared<index_dataset>(10, 1);
  auto l = make_loader(data, make_sampler(10, 3, 1, false, 0, false), 2, 0);
  l->begin_epoch(7);
  std::vector<int64_t> seen;
  while (const batch* b = l->next())
    seen.insert(seen.end(), b->samples.begin(), b->samples.end());
  BOOST_TEST(seen == (std::vector<int64_t>{1, 4, 7}), boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(a_block_order_reads_few_blocks_at_a_time_and_covers_the_epoch) {
  // 10 blocks of 100 (the last 97), a shuffle buffer of 200 samples: each
  // window of 200 consecutive positions draws from at most 3 blocks.
  std::vector<int64_t> starts;
  for (int64_t b = 0; b < 10; ++b)
    starts.push_back(100 * b);
  auto sampler = make_sampler(997, 1, 0, false, 5, true, starts, 200);
  auto order = sampler.order(4);
  BOOST_TEST((sorted(order) == iota(997)));
  BOOST_TEST((order != sampler.order(5)));
  BOOST_TEST((order != iota(997)));
  for (size_t first = 0; first < order.size(); first += 200) {
    std::set<int64_t> blocks;
    for (size_t i = first; i < std::min(order.size(), first + 200); ++i)
      blocks.insert(order[i] / 100);
    BOOST_TEST(blocks.size() <= 3u);
  }
  // The same exactly-once resume holds for a block order.
  auto data = std::make_shared<index_dataset>(997, 1);
  std::vector<int64_t> seen;
  run_group(data, 3, 8, 1, 0, 10, seen, false, starts, 200);
  run_group(data, 2, 12, 1, 240, -1, seen, false, starts, 200);
  BOOST_TEST((sorted(seen) == iota(997)));
}

BOOST_AUTO_TEST_CASE(bad_block_layouts_are_invalid_arguments) {
  for (auto blocks : std::vector<std::vector<int64_t>>{{1, 5}, {0, 5, 5}, {0, 20}}) {
    shard_options options;
    options.size = 10;
    options.block_starts = blocks;
    auto made = shard_sampler::create(options);
    BOOST_TEST_REQUIRE(!made.is_ok());
    BOOST_TEST(made.error().message().find("block_starts") != std::string::npos);
  }
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
  for (auto [prefetch, workers] :
       std::vector<std::pair<int, int>>{{0, 1}, {1, 1}, {2, 1}, {5, 1}, {2, 2}, {5, 3}}) {
    BOOST_TEST_CONTEXT("prefetch " << prefetch << ", workers " << workers) {
      auto l = make_loader(data, make_sampler(103), 10, prefetch, workers);
      BOOST_TEST(l->batches_per_epoch() == 11);
      for (int64_t epoch = 0; epoch < 3; ++epoch) {
        l->begin_epoch(epoch);
        std::vector<int64_t> sizes;
        auto seen = drain(*l, &sizes);
        BOOST_TEST((sorted(seen) == iota(103)));
        BOOST_TEST((seen == make_sampler(103).order(epoch)));  // the sampler's order
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
    auto l = make_loader(data, make_sampler(103, 1, 0, true), 10, prefetch);
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
  // prefetch ring entries + one held by the consumer.
  BOOST_TEST(buffers.size() <= 3u);
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
      BOOST_TEST((seen == make_sampler(97).order(1)));
      // And straight back to an epoch already seen, abandoned at its start.
      l->begin_epoch(0);
      l->begin_epoch(0);
      BOOST_TEST((drain(*l) == make_sampler(97).order(0)));
    }
  }
}

// Adds a draw of the sample's generator to every feature: what a sample
// gets says which generator the loader seeded for it.
class add_noise final : public dtrain::data::transform {
public:
  std::string name() const override { return "add_noise"; }
  void apply(float* features, const std::vector<int64_t>& shape,
             dtrain::rng& gen) const override {
    for (int64_t i = 0; i < shape.at(0); ++i)
      features[i] += gen.uniform();
  }
};

// sample -> its features' first value, over an epoch of every rank.
std::map<int64_t, float> transformed(int ranks, int64_t position, int workers) {
  auto data = std::make_shared<index_dataset>(200, 1);
  std::map<int64_t, float> out;
  for (int rank = 0; rank < ranks; ++rank) {
    auto l = make_loader(data, make_sampler(200, ranks, rank), 12 / ranks, 2, workers,
                         {std::make_shared<add_noise>()});
    l->begin_epoch(3, position);
    while (const batch* b = l->next()) {
      auto x = b->features.to_vector();
      for (size_t i = 0; i < b->samples.size(); ++i)
        out[b->samples[i]] = x[3 * i];
    }
  }
  return out;
}

BOOST_AUTO_TEST_CASE(transforms_draw_per_sample_whatever_the_ranks_or_resume) {
  auto one = transformed(1, 0, 1);
  BOOST_TEST_REQUIRE(one.size() == 200u);
  for (auto& [sample, value] : one) {
    BOOST_TEST_REQUIRE(value >= static_cast<float>(sample));  // noise was added
    BOOST_TEST_REQUIRE(value < static_cast<float>(sample) + 1.0f);
  }
  BOOST_TEST(transformed(3, 0, 2) == one);
  auto resumed = transformed(2, 96, 1);  // the last 104 samples of the epoch
  BOOST_TEST(resumed.size() == 104u);
  for (auto& [sample, value] : resumed)
    BOOST_TEST_REQUIRE(value == one.at(sample));
}

// Fails to gather sample `bad`, naming it.
class failing_dataset final : public dtrain::data::dataset {
public:
  explicit failing_dataset(int64_t bad) : bad_(bad) {}
  int64_t size() const override { return 100; }
  int64_t feature_count() const override { return 1; }
  int64_t target_count() const override { return 1; }
  std::string name() const override { return "failing"; }
  dtrain::status gather(const int64_t* indices, int64_t n, float* features,
                        float* targets) const override {
    for (int64_t i = 0; i < n; ++i) {
      if (indices[i] == bad_)
        return dtrain::corrupt_data("file.bin: record " + std::to_string(bad_) + " is torn");
      features[i] = targets[i] = 0;
    }
    return dtrain::status::ok();
  }

private:
  int64_t bad_;
};

BOOST_AUTO_TEST_CASE(a_failed_gather_ends_the_epoch_with_the_datasets_error) {
  for (int prefetch : {0, 3}) {
    BOOST_TEST_CONTEXT("prefetch " << prefetch) {
      auto l = make_loader(std::make_shared<failing_dataset>(42), make_sampler(100, 1, 0, false,
                                                                               0, false),
                           10, prefetch, 2);
      l->begin_epoch(0);
      int batches = 0;
      while (l->next() != nullptr)
        ++batches;
      BOOST_TEST(batches == 4);  // samples 0..39
      BOOST_TEST(l->error().code() == error_code::corrupt_data);
      BOOST_TEST(l->error().message().find("record 42") != std::string::npos);
      BOOST_TEST(l->next() == nullptr);
      l->begin_epoch(1);  // a new epoch starts clean
      BOOST_TEST(l->error().is_ok());
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
  options.workers = 0;
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
    BOOST_TEST((drain(l) == make_sampler(50).order(4)));
  }
}

BOOST_AUTO_TEST_SUITE_END()
