// Checkpoints of a replica group never lose the last valid one: a re-save
// of an epoch killed or failing half-way leaves the previous checkpoint
// restorable with its exact contents, later saves of one epoch go to new
// directories and win on restore, and a newest checkpoint whose manifest
// records a wrong checksum does not get the older good one deleted. A
// restore under other hyperparameters keeps the optimizer state and takes
// the new learning rate.
#include <boost/test/unit_test.hpp>

#include <signal.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <filesystem>

#include "support/collective_check.hpp"
#include "dtrain/core/check.hpp"
#include "dtrain/serialization/capnp_checkpoint.hpp"
#include "support/test_util.hpp"
#include "support/replica_group.hpp"
#include "support/step_operators.hpp"

using namespace dtrain;
using namespace dtrain::testing;

namespace {

/// A fault-injecting checkpoint codec: the Cap'n Proto codec, except that
/// write_shard() does what `mode` says once armed. Thread-safe (the mode
/// is atomic); forked children see the mode of the fork.
class faulty_codec final : public checkpoint::codec {
public:
  enum class fault {
    none,
    kill_after_shard,    // SIGKILL this process once its shard is durable
    fail_rank_1,         // rank 1 fails without writing anything
    misrecord_checksum,  // the shard is fine, its recorded CRC is not
  };
  void arm(fault f) { mode_.store(f); }

  result<checkpoint::shard_info> write_shard(
      const std::string& dir, int rank, int world_size,
      const std::vector<checkpoint::buffer_view>& buffers) override {
    const fault f = mode_.load();
    if (f == fault::fail_rank_1 && rank == 1)
      return io_error("injected: rank 1 cannot write its shard in " + dir);
    auto info = inner_.write_shard(dir, rank, world_size, buffers);
    if (f == fault::kill_after_shard)
      ::raise(SIGKILL);
    if (f == fault::misrecord_checksum && info.is_ok())
      info->checksum ^= 1;
    return info;
  }
  status write_manifest(const std::string& dir, const checkpoint::manifest& m) override {
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
  serialization::capnp_codec inner_;
  std::atomic<fault> mode_{fault::none};
};

using fault = faulty_codec::fault;

// Linear regression of 2000 samples at batch `batch`: an epoch is long
// enough for a preemption (checked every 16 steps) to stop it half-way.
train::replica_options with_codec(std::shared_ptr<faulty_codec> codec, int64_t batch = 10) {
  auto options = options_for("linear_regression", {{"samples", "2000"}, {"lr", "0.01"}}, batch);
  options.codec = std::move(codec);
  return options;
}

// Restoring `path` into a fresh group of n gives `epoch` and `parameters`
// on every replica.
void expect_restores(int n, const train::replica_options& options, const std::string& path,
                     int64_t epoch, const train::bytes& parameters) {
  run_group(n, rank_mode::threads, options, [&](int rank, runner_t& r) -> status {
    DTRAIN_RETURN_IF_ERROR(r.restore(path));
    return expect(r.epochs_done() == epoch && bytes_of(r.parameters()) == parameters,
                  "rank " + std::to_string(rank) + " restored epoch " +
                      std::to_string(r.epochs_done()) + " from " + r.last_checkpoint() +
                      (bytes_of(r.parameters()) == parameters ? "" : ", other parameters") +
                      "; expected epoch " + std::to_string(epoch) + " from " + path);
  });
}

// Trains epoch 1 and saves it (keeping 1) in a group of n: the parameters.
train::bytes save_epoch_1(int n, const train::replica_options& options, const std::string& root) {
  train::bytes saved;
  run_group(n, rank_mode::threads, options, [&](int rank, runner_t& r) -> status {
    DTRAIN_RETURN_IF_ERROR(r.train_epoch().to_status());
    DTRAIN_RETURN_IF_ERROR(r.save(root, {}, 1, ""));
    if (rank == 0)
      saved = bytes_of(r.parameters());
    return status::ok();
  });
  return saved;
}

// Restores `root` and trains until preempted (16 steps into the epoch
// after): the parameters move, the epoch count does not.
status restore_and_train_until_preempted(runner_t& r, const std::string& root,
                                         const train::bytes& saved) {
  DTRAIN_RETURN_IF_ERROR(r.restore(root));
  if (r.context().rank() == 0)
    r.request_preemption();
  DTRAIN_ASSIGN_OR_RETURN(auto m, r.train_epoch());
  return expect(m.preempted && r.epochs_done() == 1 && bytes_of(r.parameters()) != saved,
                "the preempted epoch did not stop half-way with new parameters");
}

} // namespace

BOOST_AUTO_TEST_SUITE(replica_checkpoints)

BOOST_AUTO_TEST_CASE(a_kill_during_a_re_save_of_an_epoch_leaves_the_previous_checkpoint_restorable) {
  temp_dir root;
  auto codec = std::make_shared<faulty_codec>();
  const auto options = with_codec(codec);
  const train::bytes saved = save_epoch_1(1, options, root.path());
  BOOST_REQUIRE(!saved.empty());
  // A child process re-saves epoch 1 (preempted half-way through epoch 2)
  // and is killed with SIGKILL right after its shard is on disk.
  codec->arm(fault::kill_after_shard);
  group_stores stores(rank_mode::processes);
  auto outcomes = run_ranks(1, rank_mode::processes, std::chrono::seconds(60), [&](int) -> status {
    DTRAIN_ASSIGN_OR_RETURN(auto r, make_runner(0, 1, stores.for_rank(), options));
    DTRAIN_RETURN_IF_ERROR(restore_and_train_until_preempted(*r, root.path(), saved));
    return r->save(root.path(), {}, 1, "");
  });
  codec->arm(fault::none);
  BOOST_TEST(!outcomes[0].killed);
  BOOST_TEST(outcomes[0].result.message().find("wait status 9") != std::string::npos,
             "the child was not killed by the codec: " << outcomes[0].result.to_string());
  auto newest = checkpoint::newest_valid(*codec, root.path());
  BOOST_TEST(newest.is_ok(), newest.to_status().to_string());
  expect_restores(1, options, root.path(), 1, saved);
  // The next save (keeping 1) is the newest, and retention clears the
  // killed save's leftovers.
  train::bytes resaved;
  run_group(1, rank_mode::threads, options, [&](int, runner_t& r) -> status {
    DTRAIN_RETURN_IF_ERROR(restore_and_train_until_preempted(r, root.path(), saved));
    resaved = bytes_of(r.parameters());
    return r.save(root.path(), {}, 1, "");
  });
  BOOST_TEST(entries(root.path()).size() == 1u);
  expect_restores(1, options, root.path(), 1, resaved);
}

BOOST_AUTO_TEST_CASE(a_re_save_that_fails_on_one_replica_leaves_the_previous_checkpoint_alone) {
  temp_dir root;
  auto codec = std::make_shared<faulty_codec>();
  const auto options = with_codec(codec, 20);
  const train::bytes saved = save_epoch_1(2, options, root.path());
  const auto before = entries(root.path());
  BOOST_REQUIRE(before.size() == 1u);
  codec->arm(fault::fail_rank_1);  // rank 0 writes its shard, rank 1 fails
  run_group(2, rank_mode::threads, options, [&](int rank, runner_t& r) -> status {
    DTRAIN_RETURN_IF_ERROR(restore_and_train_until_preempted(r, root.path(), saved));
    const status s = r.save(root.path(), {}, 1, "");
    return expect(s.code() == error_code::io_error && s.message().find("rank 1") != std::string::npos,
                  "rank " + std::to_string(rank) + "'s save gave " + s.to_string());
  });
  codec->arm(fault::none);
  // Nothing of the failed save is left, and the previous one is intact.
  BOOST_TEST(entries(root.path()) == before);
  expect_restores(2, options, root.path(), 1, saved);
}

BOOST_AUTO_TEST_CASE(saves_of_the_same_epoch_go_to_new_directories_and_restore_takes_the_latest) {
  temp_dir root;
  auto codec = std::make_shared<faulty_codec>();
  const auto options = with_codec(codec);
  std::vector<train::bytes> saved;
  std::vector<std::string> dirs;
  // Epoch 1 ends, then epoch 2 is preempted twice: three saves of epoch 1.
  run_group(1, rank_mode::threads, options, [&](int, runner_t& r) -> status {
    DTRAIN_RETURN_IF_ERROR(r.train_epoch().to_status());
    for (int save = 0; save < 3; ++save) {
      if (save > 0) {
        r.request_preemption();
        DTRAIN_ASSIGN_OR_RETURN(auto m, r.train_epoch());
        DTRAIN_RETURN_IF_ERROR(expect(m.preempted, "epoch 2 was not preempted"));
      }
      DTRAIN_RETURN_IF_ERROR(r.save(root.path(), {}, 0, ""));
      saved.push_back(bytes_of(r.parameters()));
      dirs.push_back(r.last_checkpoint());
    }
    return status::ok();
  });
  BOOST_REQUIRE(dirs.size() == 3u);
  BOOST_TEST(entries(root.path()).size() == 3u);
  BOOST_TEST((dirs[0] != dirs[1] && dirs[1] != dirs[2] && dirs[0] != dirs[2]));
  BOOST_TEST((saved[0] != saved[1] && saved[1] != saved[2]));
  expect_restores(1, options, root.path(), 1, saved[2]);
  for (size_t i = 0; i < dirs.size(); ++i)
    expect_restores(1, options, dirs[i], 1, saved[i]);
}

BOOST_AUTO_TEST_CASE(a_newest_checkpoint_recorded_with_a_wrong_checksum_does_not_cost_the_older_one) {
  temp_dir root;
  auto codec = std::make_shared<faulty_codec>();
  const auto options = with_codec(codec, 20);
  const train::bytes saved = save_epoch_1(2, options, root.path());
  codec->arm(fault::misrecord_checksum);
  run_group(2, rank_mode::threads, options, [&](int, runner_t& r) -> status {
    DTRAIN_RETURN_IF_ERROR(r.restore(root.path()));
    DTRAIN_RETURN_IF_ERROR(r.train_epoch().to_status());
    (void)r.save(root.path(), {}, 1, "");  // epoch 2, unrestorable
    return status::ok();
  });
  codec->arm(fault::none);
  expect_restores(2, options, root.path(), 1, saved);
}

// A PBT exploit restores another trial's checkpoint into a group set up
// with new hyperparameters: the optimizer's state (Adam's moments, its
// step count) comes from the checkpoint, the learning rate and its
// schedule from the new hyperparameters.
BOOST_AUTO_TEST_CASE(a_restore_keeps_the_optimizer_state_but_takes_the_new_learning_rate) {
  temp_dir root, resaved;
  auto with_lr = [](const std::string& lr) {
    return options_for("linear_regression", {{"samples", "2000"}, {"lr", lr}}, 20);
  };
  save_epoch_1(1, with_lr("0.1"), root.path());
  // The parameters one more epoch moves from the checkpoint, at each lr.
  auto step_from_checkpoint = [&](const std::string& lr, float& reported) {
    double moved = 0;
    run_group(1, rank_mode::threads, with_lr(lr), [&](int, runner_t& r) -> status {
      DTRAIN_RETURN_IF_ERROR(r.restore(root.path()));
      if (lr == "0.01")  // what the restored group holds, saved again untouched
        DTRAIN_RETURN_IF_ERROR(r.save(resaved.path(), {}, 0, ""));
      const std::vector<float> before = r.parameters().to_vector();
      DTRAIN_ASSIGN_OR_RETURN(auto m, r.train_epoch());
      reported = m.lr;
      const std::vector<float> after = r.parameters().to_vector();
      for (size_t i = 0; i < before.size(); ++i)
        moved += std::abs(double(after[i]) - double(before[i]));
      return status::ok();
    });
    return moved;
  };
  float old_lr = 0, new_lr = 0;
  const double at_old = step_from_checkpoint("0.1", old_lr);
  const double at_new = step_from_checkpoint("0.01", new_lr);
  BOOST_TEST(old_lr == 0.1f);
  BOOST_TEST(new_lr == 0.01f);
  BOOST_TEST(at_new < 0.5 * at_old, "moved " << at_new << " at lr 0.01, " << at_old << " at 0.1");
  // The moments and the step count are the checkpoint's.
  auto codec = serialization::default_checkpoint_codec();
  const std::string original = checkpoint::newest_valid(*codec, root.path()).value();
  const std::string copy = checkpoint::newest_valid(*codec, resaved.path()).value();
  const auto m1 = codec->read_manifest(original).value();
  const auto m2 = codec->read_manifest(copy).value();
  BOOST_TEST(m1.step == m2.step);
  BOOST_TEST(m1.step > 0);
  for (const auto& [name, count] : m1.buffers) {
    std::vector<float> a(static_cast<size_t>(count)), b(static_cast<size_t>(count));
    BOOST_REQUIRE(codec->read_buffers(original, m1, {{name, a.data(), count}}).is_ok());
    BOOST_REQUIRE(codec->read_buffers(copy, m2, {{name, b.data(), count}}).is_ok());
    BOOST_TEST(a == b, name);
  }
}

BOOST_AUTO_TEST_CASE(running_statistics_are_averaged_across_replicas_each_epoch_and_checkpointed) {
  register_step_operators();
  temp_dir root;
  auto options = options_for("batch_norm_regression", {{"samples", "400"}, {"lr", "0.01"}}, 20);
  std::vector<float> initial(8, 0.0f);
  initial.resize(16, 1.0f);  // running_mean 0, running_var 1
  train::bytes saved;
  run_group(2, rank_mode::threads, options, [&](int rank, runner_t& r) -> status {
    DTRAIN_RETURN_IF_ERROR(r.train_epoch().to_status());
    // Each replica normalized its own half of the data; the epoch's end
    // makes their running statistics one.
    DTRAIN_ASSIGN_OR_RETURN(auto all, r.context().all_gather(bytes_of(r.model_buffers())));
    DTRAIN_RETURN_IF_ERROR(expect(all[0] == all[1], "rank " + std::to_string(rank) +
                                                        ": the replicas' buffers differ"));
    DTRAIN_RETURN_IF_ERROR(expect(r.model_buffers().to_vector() != initial,
                                  "the running statistics did not move"));
    DTRAIN_RETURN_IF_ERROR(r.save(root.path(), {}, 1, ""));
    if (rank == 0)
      saved = bytes_of(r.model_buffers());
    return status::ok();
  });
  auto codec = serialization::default_checkpoint_codec();
  const auto m = codec->read_manifest(checkpoint::newest_valid(*codec, root.path()).value()).value();
  auto held = std::find_if(m.buffers.begin(), m.buffers.end(),
                           [](const auto& b) { return b.first == "model_buffers"; });
  BOOST_REQUIRE(held != m.buffers.end());
  BOOST_TEST(held->second == 16);
  run_group(2, rank_mode::threads, options, [&](int rank, runner_t& r) -> status {
    DTRAIN_RETURN_IF_ERROR(r.restore(root.path()));
    return expect(bytes_of(r.model_buffers()) == saved,
                  "rank " + std::to_string(rank) + " restored other running statistics");
  });
}

// Global batch 3 over 3 replicas: a batch of 1 on each, which only a
// synchronized BatchNorm can train on (one value per channel otherwise).
BOOST_AUTO_TEST_CASE(synchronized_batch_norm_trains_replicas_of_batch_1_that_agree_on_everything) {
  register_step_operators();
  auto options = options_for("batch_norm_regression",
                             {{"samples", "60"}, {"lr", "0.01"}, {"sync_batch_norm", "true"}}, 3);
  run_group(3, rank_mode::threads, options, [&](int rank, runner_t& r) -> status {
    for (int epoch = 0; epoch < 2; ++epoch) {
      DTRAIN_ASSIGN_OR_RETURN(auto m, r.train_epoch());
      DTRAIN_RETURN_IF_ERROR(expect(std::isfinite(m.loss), "a non-finite loss"));
    }
    DTRAIN_ASSIGN_OR_RETURN(auto params, r.context().all_gather(bytes_of(r.parameters())));
    DTRAIN_ASSIGN_OR_RETURN(auto state, r.context().all_gather(bytes_of(r.model_buffers())));
    for (int q = 1; q < 3; ++q)
      DTRAIN_RETURN_IF_ERROR(expect(params[q] == params[0] && state[q] == state[0],
                                    "rank " + std::to_string(rank) + ": replica " +
                                        std::to_string(q) + " disagrees"));
    return status::ok();
  });
  options.config = train::hyperparameters({{"samples", "60"}, {"lr", "0.01"}});
  group_stores stores(rank_mode::threads);
  auto outcomes = run_ranks(3, rank_mode::threads, std::chrono::seconds(60), [&](int rank) {
    DTRAIN_ASSIGN_OR_RETURN(auto r, make_runner(rank, 3, stores.for_rank(), options));
    return r->train_epoch().to_status();
  });
  BOOST_TEST(failures(outcomes).find("more than one value per channel") != std::string::npos,
             failures(outcomes));
}

BOOST_AUTO_TEST_SUITE_END()
