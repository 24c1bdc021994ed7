// Step-granular asynchronous checkpoints (train/async_checkpoint.hpp) in
// replica groups run as threads: a save every K steps restores to a state
// from which training continues bit for bit as in the run that saved it; a
// writer slower than the interval never has two saves in flight while the
// steps go on; a failed background write leaves the previous checkpoint;
// an abandoned save is never published.
#include <boost/test/unit_test.hpp>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <mutex>
#include <vector>

#include "dtrain/core/check.hpp"
#include "dtrain/serialization/capnp_checkpoint.hpp"
#include "support/replica_group.hpp"
#include "support/test_util.hpp"

using namespace dtrain;
using namespace dtrain::testing;
using std::chrono::milliseconds;

namespace {

/// The Cap'n Proto codec, recording the order in which shards and
/// manifests are written (to tell overlapping saves), and failing rank 1's
/// shards once armed. Thread-safe.
class recording_codec final : public checkpoint::codec {
public:
  struct event {
    std::string dir;  // the save's temporary directory
    bool manifest = false;
  };
  void fail_rank_1(bool on) { fail_rank_1_.store(on); }
  std::vector<event> events() {
    std::lock_guard<std::mutex> lock(mutex_);
    return events_;
  }

  result<checkpoint::shard_info> write_shard(
      const std::string& dir, int rank, int world_size,
      const std::vector<checkpoint::buffer_view>& buffers) override {
    record({dir, false});
    if (fail_rank_1_.load() && rank == 1)
      return io_error("injected: rank 1 cannot write its shard in " + dir);
    return inner_.write_shard(dir, rank, world_size, buffers);
  }
  status write_manifest(const std::string& dir, const checkpoint::manifest& m) override {
    record({dir, true});
    return inner_.write_manifest(dir, m);
  }
  result<checkpoint::manifest> read_manifest(const std::string& dir) override {
    return inner_.read_manifest(dir);
  }
  status verify_shard(const std::string& dir, const checkpoint::shard_info& shard) override {
    return inner_.verify_shard(dir, shard);
  }
  status read_buffers(const std::string& dir, const checkpoint::manifest& m,
                      const std::vector<checkpoint::buffer_target>& targets) override {
    return inner_.read_buffers(dir, m, targets);
  }

private:
  void record(event e) {
    std::lock_guard<std::mutex> lock(mutex_);
    events_.push_back(std::move(e));
  }
  serialization::capnp_codec inner_;
  std::atomic<bool> fail_rank_1_{false};
  std::mutex mutex_;
  std::vector<event> events_;
};

// Linear regression, `samples` samples at a global batch of 20 (Adam's
// state travels with the checkpoint), saving every `steps` steps under
// `root` and keeping every checkpoint.
train::replica_options saving_every(int64_t steps, const std::string& root,
                                    std::shared_ptr<checkpoint::codec> codec,
                                    int64_t samples = 2000) {
  auto options = options_for("linear_regression",
                             {{"samples", std::to_string(samples)}, {"lr", "0.01"}}, 20);
  options.codec = std::move(codec);
  options.async_checkpoint.root = root;
  options.async_checkpoint.every_steps = steps;
  options.async_checkpoint.keep_last = 0;
  return options;
}

// The valid checkpoints under `root` with their manifests, oldest first.
std::vector<std::pair<std::string, checkpoint::manifest>> checkpoints_in(const std::string& root) {
  serialization::capnp_codec codec;
  std::vector<std::pair<std::string, checkpoint::manifest>> out;
  for (const std::string& name : entries(root)) {
    auto m = codec.read_manifest(root + "/" + name);
    if (m.is_ok())
      out.emplace_back(root + "/" + name, *m);
  }
  std::sort(out.begin(), out.end(),
            [](const auto& a, const auto& b) { return a.second.step < b.second.step; });
  return out;
}

// The number of entries under `root` that are a save's temporary directory.
size_t temporary_dirs(const std::string& root) {
  size_t n = 0;
  for (const std::string& name : entries(root))
    n += checkpoint::is_temporary_name(name) ? 1 : 0;
  return n;
}

// What r's asynchronous checkpoints did (all 0 when none ever ran).
train::async_checkpointer::counts counts_of(const runner_t& r) {
  return r.async_checkpoints() ? r.async_checkpoints()->counters()
                               : train::async_checkpointer::counts{};
}

} // namespace

BOOST_AUTO_TEST_SUITE(async_checkpoints)

BOOST_AUTO_TEST_CASE(saves_every_k_steps_restore_to_a_run_that_continues_bit_for_bit) {
  temp_dir root;
  const auto options = saving_every(30, root.path(), std::make_shared<recording_codec>());
  train::bytes final_parameters;
  int64_t published = 0;
  // Two epochs of 100 steps: saves at steps 30, 60, 90, 120, ... unless
  // one is still being written (the steps are faster than an fsync): then
  // at the first step after it. At least the first of each epoch.
  run_group(2, rank_mode::threads, options, [&](int rank, runner_t& r) -> status {
    for (int epoch = 0; epoch < 2; ++epoch)
      DTRAIN_RETURN_IF_ERROR(r.train_epoch().to_status());
    if (rank == 0) {
      final_parameters = bytes_of(r.parameters());
      published = counts_of(r).published;
    }
    return status::ok();
  });
  const auto saved = checkpoints_in(root.path());
  BOOST_TEST_REQUIRE(saved.size() >= 2u, saved.size() << " checkpoints");
  BOOST_TEST(published == static_cast<int64_t>(saved.size()));
  BOOST_TEST(temporary_dirs(root.path()) == 0u);
  int mid_epoch = 0;
  auto plain = options;
  plain.async_checkpoint = {};  // the restored groups save nothing
  for (const auto& [dir, m] : saved) {
    mid_epoch += m.metrics.count("dtrain.resume_position") ? 1 : 0;
    // A new group (of the same size: the same float sums) restores it and
    // trains to the end of epoch 2.
    run_group(2, rank_mode::threads, plain, [&, dir = dir](int, runner_t& r) -> status {
      DTRAIN_RETURN_IF_ERROR(r.restore(dir));
      while (r.epochs_done() < 2)
        DTRAIN_RETURN_IF_ERROR(r.train_epoch().to_status());
      return expect(bytes_of(r.parameters()) == final_parameters,
                    "training on from " + dir + " ended with other parameters");
    });
  }
  BOOST_TEST(mid_epoch >= 2, mid_epoch << " checkpoints taken in the middle of an epoch");
}

BOOST_AUTO_TEST_CASE(a_writer_slower_than_the_interval_never_overlaps_saves_and_training_goes_on) {
  temp_dir root;
  auto codec = std::make_shared<recording_codec>();
  // A save every 2 steps of the small MLP's epoch (235 steps of a few ms),
  // each write held 500 ms: far longer than 2 steps, even on a busy host.
  auto options = small_mlp(256);
  options.codec = codec;
  options.async_checkpoint.root = root.path();
  options.async_checkpoint.every_steps = 2;
  options.async_checkpoint.keep_last = 0;
  options.async_checkpoint.test_write_delay = milliseconds(500);
  std::vector<train::async_checkpointer::counts> counts(2);
  run_group(2, rank_mode::threads, options, [&](int rank, runner_t& r) -> status {
    for (int epoch = 0; epoch < 3; ++epoch) {  // each epoch's first save at least
      DTRAIN_ASSIGN_OR_RETURN(auto m, r.train_epoch());
      DTRAIN_RETURN_IF_ERROR(expect(m.steps == 235, "an epoch took " +
                                                        std::to_string(m.steps) + " steps, not 235"));
    }
    counts[static_cast<size_t>(rank)] = counts_of(r);
    return status::ok();
  });
  for (const auto& c : counts) {
    BOOST_TEST(c.max_in_flight == 1);  // the writer never held two jobs
    BOOST_TEST(c.waited > 0);          // due saves waited for the one in flight
    BOOST_TEST(c.steps_in_flight > 0);  // steps committed while a save was written
    BOOST_TEST(c.started >= 3);
    BOOST_TEST(c.started < 3 * 117);    // not one per 2 steps: they waited
    BOOST_TEST(c.failed == 0);
  }
  BOOST_TEST(counts[0].published == counts[0].started);
  // In the codec's order: every save's shards come after the previous
  // save's manifest.
  std::vector<std::string> finished;
  std::string open;
  for (const auto& e : codec->events()) {
    if (e.manifest) {
      BOOST_TEST(e.dir == open);
      finished.push_back(e.dir);
      open.clear();
    } else if (e.dir != open) {
      BOOST_TEST(open.empty(), "a shard of " << e.dir << " while " << open << " was in flight");
      open = e.dir;
    }
  }
  BOOST_TEST(open.empty());
  BOOST_TEST(static_cast<int64_t>(finished.size()) == counts[0].published);
  BOOST_TEST(checkpoints_in(root.path()).size() == finished.size());
}

BOOST_AUTO_TEST_CASE(a_failed_background_write_leaves_the_previous_checkpoint) {
  temp_dir root;
  auto codec = std::make_shared<recording_codec>();
  auto options = saving_every(10, root.path(), codec);
  train::bytes previous;
  run_group(2, rank_mode::threads, options, [&](int rank, runner_t& r) -> status {
    DTRAIN_RETURN_IF_ERROR(r.train_epoch().to_status());  // saves that succeed
    if (rank == 0)
      previous = bytes_of(r.parameters());
    return r.save(root.path(), {}, 0, "");
  });
  // The newest checkpoint is the end of epoch 1: what the failures must keep.
  auto before = checkpoints_in(root.path());
  BOOST_TEST_REQUIRE(!before.empty());
  BOOST_TEST_REQUIRE(before.back().second.epoch == 1);
  const std::vector<std::string> names = entries(root.path());
  codec->fail_rank_1(true);
  run_group(2, rank_mode::threads, options, [&](int rank, runner_t& r) -> status {
    DTRAIN_RETURN_IF_ERROR(r.restore(root.path()));
    int64_t steps = 0;
    for (int epoch = 0; epoch < 2; ++epoch) {  // the failures do not stop them
      DTRAIN_ASSIGN_OR_RETURN(auto m, r.train_epoch());
      steps += m.steps;
    }
    const auto c = counts_of(r);
    return expect(steps == 200 && c.started >= 2 && c.failed == c.started &&
                      c.published == 0,
                  "rank " + std::to_string(rank) + ": " + std::to_string(steps) +
                      " steps, " + std::to_string(c.started) + " saves started, " +
                      std::to_string(c.failed) + " failed, " + std::to_string(c.published) +
                      " published");
  });
  codec->fail_rank_1(false);
  BOOST_TEST(entries(root.path()) == names, boost::test_tools::per_element());
  run_group(1, rank_mode::threads, options, [&](int, runner_t& r) -> status {
    DTRAIN_RETURN_IF_ERROR(r.restore(root.path()));
    return expect(r.epochs_done() == 1 && bytes_of(r.parameters()) == previous,
                  "the restore did not give epoch 1's checkpoint");
  });
}

BOOST_AUTO_TEST_CASE(an_abandoned_save_is_never_published) {
  temp_dir root;
  auto codec = std::make_shared<recording_codec>();
  auto options = saving_every(20, root.path(), codec);
  options.async_checkpoint.test_write_delay = milliseconds(300);
  runner_t* runner = nullptr;
  bool abandoned = false;
  // One replica: abandoning needs no agreement. The progress callback runs
  // on the training thread between steps: it abandons the first save in
  // flight, as a group re-forming after a failure would.
  options.progress_seconds = 1e-9;
  options.on_progress = [&](const train::step_progress&) {
    if (runner == nullptr || abandoned)
      return;
    const auto c = runner->async_checkpoints() ? runner->async_checkpoints()->counters()
                                               : train::async_checkpointer::counts{};
    if (c.started == 1) {
      abandoned = true;
      runner->abandon_async_checkpoint();
    }
  };
  run_group(1, rank_mode::threads, options, [&](int, runner_t& r) -> status {
    runner = &r;
    DTRAIN_RETURN_IF_ERROR(r.train_epoch().to_status());
    runner = nullptr;
    // Once the abandoned write is over (the writer holds one job at a
    // time), the next save publishes.
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (counts_of(r).published == 0 && std::chrono::steady_clock::now() < deadline)
      DTRAIN_RETURN_IF_ERROR(r.train_epoch().to_status());
    const auto c = counts_of(r);
    return expect(abandoned && c.abandoned == 1 && c.published == c.started - 1 &&
                      c.published >= 1,
                  std::to_string(c.started) + " saves started, " +
                      std::to_string(c.abandoned) + " abandoned, " +
                      std::to_string(c.published) + " published");
  });
  // The abandoned save's directory went with it; the first checkpoint
  // published holds a later step than the abandoned one (20).
  BOOST_TEST(temporary_dirs(root.path()) == 0u);
  const auto saved = checkpoints_in(root.path());
  BOOST_TEST_REQUIRE(!saved.empty());
  BOOST_TEST(saved.front().second.step > 20);
}

BOOST_AUTO_TEST_CASE(seconds_of_training_are_counted_by_the_chief_and_saves_follow) {
  temp_dir root;
  auto options = saving_every(0, root.path(), std::make_shared<recording_codec>(), 10000);
  options.async_checkpoint.every_seconds = 0.001;
  // At least the first poll of every epoch finds a save due and none in flight.
  run_group(2, rank_mode::threads, options, [&](int, runner_t& r) -> status {
    for (int epoch = 0; epoch < 3; ++epoch)
      DTRAIN_RETURN_IF_ERROR(r.train_epoch().to_status());
    const auto c = counts_of(r);
    return expect(c.started >= 3 && c.failed == 0,
                  std::to_string(c.started) + " saves started, " + std::to_string(c.failed) +
                      " failed");
  });
  BOOST_TEST(checkpoints_in(root.path()).size() >= 3u);
}

BOOST_AUTO_TEST_SUITE_END()
