// Replica groups through replica_runner over the shm communicator: the
// epoch loop keeps replicas bitwise identical, N replicas at batch B/N train
// as one at batch B, the metrics add up, sharded checkpoints round-trip
// (also into another number of replicas), reject damage by file name and
// fall back to the newest valid one, retention keeps the last K and the
// best, bad configurations are refused by name, and the replica context's
// small collectives agree across ranks.
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <limits>
#include <map>

#include "support/collective_check.hpp"
#include "support/spawn.hpp"
#include "dtrain/core/check.hpp"
#include "dtrain/optim/factory.hpp"
#include "dtrain/train/replica.hpp"
#include "support/test_util.hpp"
#include "support/replica_group.hpp"
#include "support/step_operators.hpp"

using namespace dtrain;
using namespace dtrain::testing;

namespace {

// Creating the replicas of an n-replica group fails on every rank with
// `code` and a message holding every one of `needles`.
void check_refused(int n, const train::replica_options& options, error_code code,
                   const std::vector<std::string>& needles) {
  group_stores stores(rank_mode::threads);
  const auto deadline = std::chrono::seconds(60);
  auto outcomes = run_ranks(n, rank_mode::threads, deadline, [&](int rank) -> status {
    auto runner = make_runner(rank, n, stores.for_rank(), options);
    const status s = runner.to_status();
    DTRAIN_RETURN_IF_ERROR(expect(s.code() == code, "expected " + std::string(to_string(code)) +
                                                        ", got " + s.to_string()));
    for (auto& needle : needles)
      DTRAIN_RETURN_IF_ERROR(expect(s.message().find(needle) != std::string::npos,
                                    "'" + needle + "' missing from: " + s.message()));
    return status::ok();
  });
  std::string failed = failures(outcomes);
  BOOST_TEST(failed.empty(), failed);
}

status expect_same_parameters_everywhere(runner_t& r, const std::string& when) {
  DTRAIN_ASSIGN_OR_RETURN(auto all, r.context().all_gather(bytes_of(r.parameters())));
  for (size_t q = 1; q < all.size(); ++q)
    DTRAIN_RETURN_IF_ERROR(expect(all[q] == all[0], "replica " + std::to_string(q) +
                                                        "'s parameters differ from replica "
                                                        "0's " + when));
  return status::ok();
}

status train_two_epochs_in_lockstep(int, runner_t& r) {
  const train::bytes initial = bytes_of(r.parameters());
  for (int64_t e = 1; e <= 2; ++e) {
    DTRAIN_ASSIGN_OR_RETURN(auto m, r.train_epoch());
    DTRAIN_RETURN_IF_ERROR(expect(m.epoch == e && r.epochs_done() == e,
                                  "epoch " + std::to_string(m.epoch) + " reported in epoch " +
                                      std::to_string(e)));
    DTRAIN_RETURN_IF_ERROR(
        expect_same_parameters_everywhere(r, "after epoch " + std::to_string(e)));
  }
  return expect(bytes_of(r.parameters()) != initial, "two epochs left the parameters unchanged");
}

// Rank 0's parameters before and after one epoch of an n-replica group.
std::pair<std::vector<float>, std::vector<float>> one_epoch(int n,
                                                           const train::replica_options& o) {
  std::pair<std::vector<float>, std::vector<float>> before_after;
  run_group(n, rank_mode::threads, o, [&](int rank, runner_t& r) -> status {
    auto before = r.parameters().to_vector();
    DTRAIN_RETURN_IF_ERROR(r.train_epoch().to_status());
    if (rank == 0)
      before_after = {before, r.parameters().to_vector()};
    return status::ok();
  });
  return before_after;
}

// Restoring `path` fails with `code` and an error naming `file`.
status expect_refused(runner_t& r, const std::string& path, error_code code,
                      const std::string& file) {
  const status s = r.restore(path);
  DTRAIN_RETURN_IF_ERROR(expect(s.code() == code, "restoring " + path + " gave " + s.to_string()));
  return expect(s.message().find(file) != std::string::npos,
                "the error does not name " + file + ": " + s.message());
}

std::string checkpoint_in(const temp_dir& root, int64_t epoch) {
  return root.file(checkpoint::checkpoint_name(epoch));
}

} // namespace

BOOST_AUTO_TEST_SUITE(replica_runner)

BOOST_AUTO_TEST_CASE(two_replicas_keep_bitwise_identical_parameters_after_every_epoch) {
  for (auto mode : {rank_mode::threads, rank_mode::processes}) {
    run_group(2, mode, options_for("linear_regression", {}, 64), train_two_epochs_in_lockstep);
    run_group(2, mode, small_mlp(), train_two_epochs_in_lockstep);
  }
}

// The shard sampler gives rank r the positions r, r + N, ... of the epoch's
// order, so step k of N replicas at B/N covers positions [kB, (k+1)B): the
// batch one replica at B takes. With plain SGD the averaged gradient is then
// the same mean (up to rounding). 2000 samples keep the last, partial
// batches equal too (2000 % 64 = 16 = 2 x (1000 % 32)).
BOOST_AUTO_TEST_CASE(two_replicas_at_half_the_batch_train_like_one_at_the_whole_batch) {
  auto options = options_for("linear_regression", {{"samples", "2000"}, {"planted", "true"},
                                                   {"optimizer", "sgd"}, {"lr", "0.05"}},
                             64, 11);
  auto [initial, one] = one_epoch(1, options);
  auto [initial2, two] = one_epoch(2, options);
  BOOST_REQUIRE_EQUAL(one.size(), 11u);
  BOOST_REQUIRE_EQUAL(two.size(), 11u);
  BOOST_TEST(initial == initial2);
  BOOST_TEST(max_relative_error(one, initial) > 1e-2);  // it did train
  BOOST_TEST_MESSAGE("1 vs 2 replicas after one epoch: max relative error "
                     << max_relative_error(two, one));
  BOOST_TEST(max_relative_error(two, one) < 1e-4);
}

BOOST_AUTO_TEST_CASE(train_epoch_counts_every_sample_and_the_loss_falls_over_epochs) {
  // 4000 samples on 2 replicas of 32: 2000 each, 63 steps (the last of 16).
  auto options = options_for("linear_regression", {{"samples", "4000"}, {"planted", "true"},
                                                   {"lr", "0.02"}},
                             64);
  run_group(2, rank_mode::threads, options, [](int, runner_t& r) -> status {
    double previous = std::numeric_limits<double>::infinity(), first = 0;
    for (int e = 1; e <= 3; ++e) {
      DTRAIN_ASSIGN_OR_RETURN(auto m, r.train_epoch());
      first = e == 1 ? m.loss : first;
      const std::string at = " in epoch " + std::to_string(e);
      DTRAIN_RETURN_IF_ERROR(
          expect(m.samples == 4000, "samples " + std::to_string(m.samples) + at));
      DTRAIN_RETURN_IF_ERROR(expect(m.steps == 63, "steps " + std::to_string(m.steps) + at));
      DTRAIN_RETURN_IF_ERROR(expect(std::isfinite(m.loss) && m.loss < previous,
                                    "loss " + std::to_string(m.loss) + " after " +
                                        std::to_string(previous) + at));
      DTRAIN_RETURN_IF_ERROR(expect(m.lr > 0 && m.seconds > 0, "no lr or time" + at));
      previous = m.loss;
    }
    DTRAIN_ASSIGN_OR_RETURN(auto v, r.validate());
    return expect(v.samples == 4000 && v.loss < first,
                  "validation: " + std::to_string(v.samples) + " samples, loss " +
                      std::to_string(v.loss) + " against " + std::to_string(first) +
                      " in epoch 1");
  });
}

// Without an `lr`, a built-in operator and one that sets no schedule (the
// replica gives it a constant one) train at the same, one default rate;
// an `lr` given is what both use.
BOOST_AUTO_TEST_CASE(without_an_lr_every_operator_trains_at_the_one_default_rate) {
  register_step_operators();
  const float fallback = static_cast<float>(optim::default_learning_rate);
  for (const std::string op : {"linear_regression", "unscheduled_regression"}) {
    for (const auto& [given, want] :
         std::vector<std::pair<std::string, float>>{{"", fallback}, {"0.03", 0.03f}}) {
      config_map config{{"samples", "256"}};
      if (!given.empty())
        config["lr"] = given;
      run_group(1, rank_mode::threads, options_for(op, config, 64), [&](int, runner_t& r) -> status {
        DTRAIN_ASSIGN_OR_RETURN(auto m, r.train_epoch());
        return expect(m.lr == want, op + " with lr '" + given + "' trained at " +
                                        std::to_string(m.lr) + ", not " + std::to_string(want));
      });
    }
  }
}

BOOST_AUTO_TEST_CASE(an_uneven_dataset_is_trained_once_and_every_replica_runs_the_same_steps) {
  // 1001 samples on 2 replicas, 64 a step: 15 full steps, then 41 samples
  // split 21 + 20. Nothing is padded or repeated (the group's count).
  auto options = options_for("linear_regression", {{"samples", "1001"}}, 64);
  run_group(2, rank_mode::threads, options, [](int, runner_t& r) -> status {
    DTRAIN_ASSIGN_OR_RETURN(auto m, r.train_epoch());
    return expect(m.samples == 1001 && m.steps == 16,
                  std::to_string(m.samples) + " samples in " + std::to_string(m.steps) + " steps");
  });
}

BOOST_AUTO_TEST_CASE(the_noop_operator_runs_the_normal_loop_and_leaves_its_model_alone) {
  // 1000 samples on 2 replicas of 5: 100 steps each.
  run_group(2, rank_mode::threads, options_for("noop", {{"samples", "1000"}}, 10),
            [](int, runner_t& r) -> status {
              const train::bytes initial = bytes_of(r.parameters());
              DTRAIN_ASSIGN_OR_RETURN(auto m, r.train_epoch());
              DTRAIN_RETURN_IF_ERROR(expect(m.samples == 1000 && m.steps == 100 &&
                                                std::isfinite(m.loss),
                                            std::to_string(m.samples) + " samples in " +
                                                std::to_string(m.steps) + " steps"));
              return expect(r.parameters().numel() == 1 && bytes_of(r.parameters()) == initial,
                            "lr 0 changed the parameters");
            });
}

BOOST_AUTO_TEST_CASE(an_mlp_classifier_validates_above_half_accuracy_after_one_epoch) {
  run_group(2, rank_mode::threads, small_mlp(), [](int, runner_t& r) -> status {
    DTRAIN_ASSIGN_OR_RETURN(auto m, r.train_epoch());
    DTRAIN_RETURN_IF_ERROR(expect(m.samples == 60000 && m.accuracy > 0.5,
                                  "training: " + std::to_string(m.samples) + " samples, accuracy " +
                                      std::to_string(m.accuracy)));
    DTRAIN_ASSIGN_OR_RETURN(auto v, r.validate());
    return expect(v.samples == 10000 && v.accuracy > 0.5 && std::isfinite(v.loss),
                  "validation: " + std::to_string(v.samples) + " samples, accuracy " +
                      std::to_string(v.accuracy));
  });
}

BOOST_AUTO_TEST_CASE(save_then_restore_into_a_fresh_group_reproduces_parameters_and_epoch) {
  temp_dir root;
  auto options = options_for("linear_regression", {{"samples", "2000"}, {"planted", "true"},
                                                   {"lr", "0.01"}},
                             64);
  train::bytes saved, continued;  // rank 0's, after epochs 1 and 2
  run_group(2, rank_mode::threads, options, [&](int rank, runner_t& r) -> status {
    DTRAIN_ASSIGN_OR_RETURN(auto m, r.train_epoch());
    DTRAIN_RETURN_IF_ERROR(r.save(root.path(), {{"loss", m.loss}}, 0, ""));
    DTRAIN_RETURN_IF_ERROR(expect(r.last_checkpoint() == checkpoint_in(root, 1),
                                  "saved into " + r.last_checkpoint()));
    if (rank == 0)
      saved = bytes_of(r.parameters());
    DTRAIN_RETURN_IF_ERROR(r.train_epoch().to_status());
    if (rank == 0)
      continued = bytes_of(r.parameters());
    return status::ok();
  });
  BOOST_REQUIRE(!saved.empty());
  BOOST_TEST((entries(checkpoint_in(root, 1)) ==
              std::vector<std::string>{"manifest.capnp", "shard-0-of-2.capnp",
                                       "shard-1-of-2.capnp"}));
  for (const std::string& path : {root.path(), checkpoint_in(root, 1)}) {
    run_group(2, rank_mode::threads, options, [&](int, runner_t& r) -> status {
      DTRAIN_RETURN_IF_ERROR(r.restore(path));
      DTRAIN_RETURN_IF_ERROR(expect(r.epochs_done() == 1, "restored epoch " +
                                                              std::to_string(r.epochs_done())));
      DTRAIN_RETURN_IF_ERROR(expect(bytes_of(r.parameters()) == saved, "restored parameters differ"));
      // The optimizer state came back too: the next epoch is the original's.
      DTRAIN_ASSIGN_OR_RETURN(auto m, r.train_epoch());
      return expect(m.epoch == 2 && bytes_of(r.parameters()) == continued,
                    "the resumed epoch differs from the original's");
    });
  }
}

BOOST_AUTO_TEST_CASE(a_checkpoint_of_2_replicas_restores_into_1_or_3) {
  temp_dir root;
  auto options = options_for("linear_regression", {{"samples", "600"}, {"lr", "0.01"}}, 60);
  train::bytes saved;
  run_group(2, rank_mode::threads, options, [&](int rank, runner_t& r) -> status {
    DTRAIN_RETURN_IF_ERROR(r.train_epoch().to_status());
    DTRAIN_RETURN_IF_ERROR(r.save(root.path(), {}, 0, ""));
    if (rank == 0)
      saved = bytes_of(r.parameters());
    return status::ok();
  });
  BOOST_REQUIRE(!saved.empty());
  for (int n : {1, 3}) {
    run_group(n, rank_mode::threads, options, [&](int, runner_t& r) -> status {
      DTRAIN_RETURN_IF_ERROR(r.restore(root.path()));
      DTRAIN_RETURN_IF_ERROR(expect(r.epochs_done() == 1 && bytes_of(r.parameters()) == saved,
                                    "the parameters or the epoch differ after restoring"));
      DTRAIN_RETURN_IF_ERROR(expect_same_parameters_everywhere(r, "after restoring"));
      return r.train_epoch().to_status();
    });
  }
}

BOOST_AUTO_TEST_CASE(a_checkpoint_saved_before_the_first_step_restores) {
  temp_dir root;
  auto options = options_for("linear_regression", {{"samples", "100"}}, 10);  // Adam
  run_group(1, rank_mode::threads, options, [&](int, runner_t& r) -> status {
    return r.save(root.path(), {}, 1, "");
  });
  run_group(1, rank_mode::threads, options, [&](int, runner_t& r) -> status {
    DTRAIN_RETURN_IF_ERROR(r.restore(root.path()));
    DTRAIN_RETURN_IF_ERROR(expect(r.epochs_done() == 0, "restored a non-zero epoch"));
    return r.train_epoch().to_status();
  });
}

BOOST_AUTO_TEST_CASE(a_failed_save_fails_every_replica_at_once_and_the_group_goes_on) {
  temp_dir dir;
  const std::string root = dir.file("a-file");  // not a directory: nothing can go under it
  write_file(root, "x");
  auto options = options_for("linear_regression", {{"samples", "100"}}, 20);
  run_group(2, rank_mode::threads, options, [&](int rank, runner_t& r) -> status {
    auto start = std::chrono::steady_clock::now();
    const status s = r.save(root, {}, 3, "");
    const auto waited = std::chrono::steady_clock::now() - start;
    DTRAIN_RETURN_IF_ERROR(expect(s.code() == error_code::io_error &&
                                      s.message().find(root) != std::string::npos,
                                  "rank " + std::to_string(rank) + " got " + s.to_string()));
    DTRAIN_RETURN_IF_ERROR(expect(waited < std::chrono::seconds(5), "the save waited"));
    return r.train_epoch().to_status();  // the replicas are still in step
  });
}

BOOST_AUTO_TEST_CASE(without_a_codec_save_and_restore_are_unavailable) {
  temp_dir root;
  auto options = options_for("linear_regression", {{"samples", "100"}}, 10);
  options.codec = nullptr;
  run_group(1, rank_mode::threads, options, [&](int, runner_t& r) -> status {
    DTRAIN_RETURN_IF_ERROR(expect(r.save(root.path(), {}, 1, "").code() == error_code::unavailable,
                                  "save without a codec"));
    return expect(r.restore(root.path()).code() == error_code::unavailable,
                  "restore without a codec");
  });
}

// Two replicas save epochs 1 and 2; copies of epoch 2's checkpoint with a
// truncated shard, a flipped byte, a missing shard or a missing manifest
// are refused naming the file; restoring the root with epoch 2 damaged
// falls back to epoch 1.
BOOST_AUTO_TEST_CASE(a_damaged_checkpoint_names_the_file_and_the_root_falls_back_to_a_valid_one) {
  namespace fs = std::filesystem;
  temp_dir root, copies;
  auto options = options_for("linear_regression", {{"samples", "100"}}, 10);
  train::bytes first;
  run_group(2, rank_mode::threads, options, [&](int rank, runner_t& r) -> status {
    for (int e = 1; e <= 2; ++e) {
      DTRAIN_RETURN_IF_ERROR(r.train_epoch().to_status());
      DTRAIN_RETURN_IF_ERROR(r.save(root.path(), {}, 0, ""));
      if (rank == 0 && e == 1)
        first = bytes_of(r.parameters());
    }
    return status::ok();
  });
  const std::string newest = checkpoint_in(root, 2);
  auto damaged = [&](const std::string& name, const std::string& file, auto damage) {
    const std::string dir = copies.file(name);
    fs::copy(newest, dir, fs::copy_options::recursive);
    damage(dir + "/" + file);
    return std::make_pair(dir, dir + "/" + file);
  };
  const std::vector<std::pair<std::string, std::string>> cases = {
    damaged("cut", "shard-1-of-2.capnp", [](auto f) { fs::resize_file(f, fs::file_size(f) - 5); }),
    damaged("flipped", "shard-0-of-2.capnp", [](auto f) {
      std::string content = read_file(f);
      content[content.size() / 2] ^= 0x40;
      write_file(f, content);
    }),
    damaged("gone", "shard-1-of-2.capnp", [](auto f) { fs::remove(f); }),
  };
  const auto no_manifest = damaged("no-manifest", "manifest.capnp", [](auto f) { fs::remove(f); });
  run_group(2, rank_mode::threads, options, [&](int, runner_t& r) -> status {
    for (auto& [dir, file] : cases)
      DTRAIN_RETURN_IF_ERROR(expect_refused(r, dir, error_code::corrupt_data, file));
    DTRAIN_RETURN_IF_ERROR(
        expect_refused(r, no_manifest.first, error_code::not_found, no_manifest.second));
    return status::ok();
  });
  // Damage the newest in place: the root restores epoch 1.
  std::string content = read_file(newest + "/shard-1-of-2.capnp");
  content[content.size() - 20] ^= 0x01;
  write_file(newest + "/shard-1-of-2.capnp", content);
  run_group(2, rank_mode::threads, options, [&](int, runner_t& r) -> status {
    DTRAIN_RETURN_IF_ERROR(r.restore(root.path()));
    return expect(r.epochs_done() == 1 && bytes_of(r.parameters()) == first &&
                      r.last_checkpoint() == checkpoint_in(root, 1),
                  "restoring the root did not fall back to epoch 1");
  });
}

BOOST_AUTO_TEST_CASE(saves_keep_the_last_k_checkpoints_and_the_best_by_the_metric) {
  temp_dir root;
  const std::vector<double> loss = {0.1, 0.5, 0.4, 0.3, 0.35};
  run_group(1, rank_mode::threads, options_for("linear_regression", {{"samples", "100"}}, 10),
            [&](int, runner_t& r) -> status {
              for (double l : loss) {
                DTRAIN_RETURN_IF_ERROR(r.train_epoch().to_status());
                DTRAIN_RETURN_IF_ERROR(r.save(root.path(), {{"loss", l}}, 2, "loss"));
              }
              return status::ok();
            });
  BOOST_TEST((entries(root.path()) == std::vector<std::string>{checkpoint::checkpoint_name(1),
                                                                checkpoint::checkpoint_name(4),
                                                                checkpoint::checkpoint_name(5)}));
}

BOOST_AUTO_TEST_CASE(a_checkpoint_of_another_model_names_both_parameter_counts) {
  temp_dir root;
  // 10 features: 11 parameters; 4 features: 5.
  run_group(1, rank_mode::threads, options_for("linear_regression", {{"samples", "100"}}, 10),
            [&](int, runner_t& r) -> status { return r.save(root.path(), {}, 1, ""); });
  run_group(1, rank_mode::threads,
            options_for("linear_regression", {{"samples", "100"}, {"features", "4"}}, 10),
            [&](int, runner_t& r) -> status {
              const status s = r.restore(root.path());
              return expect(!s.is_ok() && s.message().find(checkpoint_in(root, 0)) != std::string::npos &&
                                s.message().find("11 parameters") != std::string::npos &&
                                s.message().find("has 5") != std::string::npos,
                            "restoring another model's checkpoint gave " + s.to_string());
            });
}

BOOST_AUTO_TEST_CASE(an_unknown_operator_is_refused_by_name) {
  check_refused(1, options_for("no_such_operator", {}, 10), error_code::not_found,
                {"no_such_operator", "linear_regression", "mlp_classifier", "noop"});
}

BOOST_AUTO_TEST_CASE(an_unknown_hyperparameter_is_refused_by_name) {
  for (const char* op : {"linear_regression", "mlp_classifier", "cnn_classifier", "noop"})
    check_refused(1, options_for(op, {{"lernrate", "0.1"}}, 10), error_code::invalid_argument,
                  {"lernrate", op});
}

BOOST_AUTO_TEST_CASE(a_bad_hyperparameter_value_is_refused_naming_the_key) {
  check_refused(1, options_for("linear_regression", {{"samples", "many"}}, 10),
                error_code::invalid_argument, {"samples", "many"});
  check_refused(1, options_for("mlp_classifier", {{"activation", "sigmoid"}}, 10),
                error_code::invalid_argument, {"sigmoid"});
  check_refused(1, options_for("cnn_classifier", {{"conv", "16,0"}}, 10),
                error_code::invalid_argument, {"conv", "0"});
  // Four 2x2 pools leave 28x28 at 1x1; a fifth does not fit: the error
  // names the layer.
  check_refused(1, options_for("cnn_classifier", {{"conv", "2,2,2,2,2"}}, 10),
                error_code::invalid_argument, {"max_pool2d(2x1x1"});
}

BOOST_AUTO_TEST_CASE(a_global_batch_smaller_than_the_replica_count_is_refused) {
  check_refused(3, options_for("noop", {{"samples", "30"}}, 2), error_code::invalid_argument,
                {"global_batch_size 2", "3 replicas"});
}

BOOST_AUTO_TEST_CASE(the_context_gathers_broadcasts_and_agrees_on_preemption_across_3_ranks) {
  auto value_of = [](int rank) { return bytes_of(std::string(5 * rank, char('a' + rank))); };
  train::bytes every_byte;
  for (int i = 0; i < 1000; ++i)
    every_byte.push_back(static_cast<char>(i % 256));  // NaN patterns must survive
  run_group(3, rank_mode::threads, options_for("noop", {{"samples", "30"}}, 3),
            [&](int rank, runner_t& r) -> status {
    auto& ctx = r.context();
    DTRAIN_RETURN_IF_ERROR(expect(ctx.rank() == rank && ctx.world_size() == 3, "rank or size"));
    DTRAIN_ASSIGN_OR_RETURN(auto all, ctx.all_gather(value_of(rank)));
    DTRAIN_RETURN_IF_ERROR(expect(all == std::vector<train::bytes>{value_of(0), value_of(1),
                                                                   value_of(2)}, "all_gather"));
    DTRAIN_ASSIGN_OR_RETURN(auto empties, ctx.all_gather({}));
    DTRAIN_RETURN_IF_ERROR(expect(empties == std::vector<train::bytes>(3), "empty all_gather"));
    DTRAIN_ASSIGN_OR_RETURN(auto at2, ctx.gather(value_of(rank), 2));
    DTRAIN_RETURN_IF_ERROR(expect(at2.size() == (rank == 2 ? 3u : 0u), "gather to rank 2"));
    DTRAIN_ASSIGN_OR_RETURN(auto b, ctx.broadcast(rank == 1 ? every_byte : value_of(rank), 1));
    DTRAIN_RETURN_IF_ERROR(expect(b == every_byte, "broadcast from rank 1"));
    // Too large on one rank: every rank fails (none is left waiting).
    auto huge = ctx.all_gather(train::bytes(
        rank == 1 ? train::comm_replica_context::max_value_bytes + 1 : 1, 'x'));
    DTRAIN_RETURN_IF_ERROR(expect(!huge.is_ok() && huge.error().message().find("rank 1") !=
                                                       std::string::npos,
                                  "an oversized value gave " + huge.error().to_string()));
    DTRAIN_ASSIGN_OR_RETURN(bool before, ctx.should_preempt());
    DTRAIN_RETURN_IF_ERROR(expect(!before, "preempted before anyone asked"));
    if (rank == 0)
      r.request_preemption();
    DTRAIN_ASSIGN_OR_RETURN(bool after, ctx.should_preempt());
    return expect(after, "rank " + std::to_string(rank) + " missed the chief's preemption");
  });
}

BOOST_AUTO_TEST_SUITE_END()
