// ZeRO stages 1 to 3 (zero/shard_layout.hpp, zero/parameter_shards.hpp):
// the layout splits every bucket, sharded training equals unsharded
// training bit for bit on shm (and to float precision on Gloo and
// hierarchical groups), each rank keeps 1/N of the optimizer state (and at
// stage 3 of the parameters), and checkpoints restore into any stage and
// any number of replicas.
#include <boost/test/unit_test.hpp>

#include <sys/mman.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "dtrain/comm/factory.hpp"
#include "dtrain/comm/gradient_sync.hpp"
#include "dtrain/core/check.hpp"
#include "dtrain/nn/layers.hpp"
#include "dtrain/nn/loss.hpp"
#include "dtrain/serialization/capnp_checkpoint.hpp"
#include "dtrain/zero/parameter_shards.hpp"
#include "dtrain/zero/shard_layout.hpp"
#include "support/collective_check.hpp"
#include "support/replica_group.hpp"
#include "support/test_util.hpp"

using namespace dtrain;
using namespace dtrain::testing;

namespace {

// An MLP of 52,650 parameters in 16 KiB buckets: about a dozen buckets,
// boundaries inside parameters, and for 3 ranks a padded last bucket.
train::replica_options mlp(const std::string& optimizer, int stage, int64_t batch = 256) {
  config_map config{{"hidden", "64,32"}, {"data_dir", fashion_mnist_dir()},
                    {"optimizer", optimizer}, {"lr", optimizer == "sgd" ? "0.05" : "0.002"}};
  if (optimizer == "sgd")
    config["momentum"] = "0.9";
  auto options = options_for("mlp_classifier", config, batch);
  options.bucket_bytes = 16 << 10;
  options.zero_stage = stage;
  return options;
}

// Trains `epochs` epochs on an n-replica group; rank 0's parameters, after
// checking that every rank holds the same.
struct run_outcome {
  std::vector<float> parameters;
  std::vector<train::epoch_metrics> metrics;  // per rank, the last epoch
};

run_outcome train_group(int n, const train::replica_options& options, int epochs,
                        const std::string& backend = "shm",
                        rank_mode mode = rank_mode::threads) {
  temp_dir dir;
  run_outcome out;
  out.metrics.resize(static_cast<size_t>(n));
  run_group(
      n, mode, options,
      [&](int rank, runner_t& r) -> status {
        train::epoch_metrics m;
        for (int e = 0; e < epochs; ++e) {
          DTRAIN_ASSIGN_OR_RETURN(m, r.train_epoch());
        }
        out.metrics[static_cast<size_t>(rank)] = m;  // threads only
        // At stage 3 every rank gathers them at once.
        DTRAIN_ASSIGN_OR_RETURN(std::vector<float> values, r.parameter_values());
        const auto* raw = reinterpret_cast<const char*>(values.data());
        const std::string bytes(raw, raw + values.size() * sizeof(float));
        write_file(dir.file("rank" + std::to_string(rank)), std::string(bytes.begin(), bytes.end()));
        return status::ok();
      },
      backend);
  const std::string first = read_file(dir.file("rank0"));
  for (int q = 1; q < n; ++q)
    BOOST_TEST((read_file(dir.file("rank" + std::to_string(q))) == first),
               "rank " << q << " holds other parameters than rank 0");
  out.parameters.resize(first.size() / sizeof(float));
  std::memcpy(out.parameters.data(), first.data(), first.size());
  return out;
}

// The largest |a - b| / max(|a|, 1e-3) over the parameters.
double max_relative_difference(const std::vector<float>& a, const std::vector<float>& b) {
  BOOST_REQUIRE_EQUAL(a.size(), b.size());
  double worst = 0;
  for (size_t i = 0; i < a.size(); ++i)
    worst = std::max(worst, std::fabs(static_cast<double>(a[i]) - b[i]) /
                                std::max(std::fabs(static_cast<double>(a[i])), 1e-3));
  return worst;
}

// A checkpoint's buffers, whole, read with the codec.
std::map<std::string, std::vector<float>> read_checkpoint(const std::string& dir) {
  auto codec = serialization::default_checkpoint_codec();
  auto m = codec->read_manifest(dir);
  BOOST_REQUIRE_MESSAGE(m.is_ok(), m.error().message());
  std::map<std::string, std::vector<float>> out;
  std::vector<checkpoint::buffer_target> targets;
  for (const auto& [name, count] : m->buffers)
    out[name].resize(static_cast<size_t>(count));
  for (auto& [name, values] : out)
    targets.push_back({name, values.data(), static_cast<int64_t>(values.size()), {}});
  status read = codec->read_buffers(dir, *m, targets);
  BOOST_REQUIRE_MESSAGE(read.is_ok(), read.message());
  return out;
}

// One rank of an n-rank shared-memory group.
result<std::unique_ptr<comm::communicator>> shm_rank(group_stores& stores, int rank, int n) {
  comm::group_options go;
  go.rank = rank;
  go.size = n;
  go.store = stores.for_rank();
  go.backend = "shm";
  return comm::make_communicator(go);
}

// 784 -> 2048 -> 2048 -> 10: 5.8 M parameters, 23 MB in float32; the same
// initial values on every rank.
result<std::unique_ptr<nn::model>> wide_mlp() {
  nn::mlp_spec spec{784, {2048, 2048}, 10, ops::activation::relu, 0.0f};
  return nn::model::create(nn::make_mlp(spec), {784, device::cpu(), 3});
}

// A batch of 8 inputs and labels of its own for each rank.
std::pair<tensor, tensor> batch_of(int rank) {
  tensor x = tensor::empty({8, 784}), y = tensor::empty({8});
  for (int64_t i = 0; i < x.numel(); ++i)
    x.data()[i] = test_value(rank, i);
  for (int64_t i = 0; i < 8; ++i)
    y.data()[i] = static_cast<float>((rank + i) % 10);
  return {x, y};
}

// Bytes of `t`'s memory the kernel holds in memory now (mincore).
result<double> resident_bytes(const tensor& t) {
  const size_t page = 4096, bytes = static_cast<size_t>(t.numel()) * 4;
  auto* base = reinterpret_cast<unsigned char*>(const_cast<float*>(t.data()));
  std::vector<unsigned char> in_core((bytes + page - 1) / page);
  if (mincore(base, bytes, in_core.data()) != 0)
    return status(error_code::io_error, "mincore failed");
  return static_cast<double>(std::count_if(in_core.begin(), in_core.end(),
                                           [](unsigned char v) { return v & 1; })) * page;
}

} // namespace

BOOST_AUTO_TEST_SUITE(zero_sharding)

BOOST_AUTO_TEST_CASE(the_layout_splits_every_bucket_and_covers_the_buffer_once) {
  const std::vector<std::pair<int64_t, int64_t>> buckets{{96, 103}, {0, 48}, {48, 96}};
  std::vector<int> owners(103, 0);
  int64_t total = 0;
  for (int r = 0; r < 3; ++r) {
    auto layout = zero::shard_layout::plan(103, 3, r, buckets);
    BOOST_REQUIRE_MESSAGE(layout.is_ok(), layout.error().message());
    total += layout->owned_count();
    for (const optim::span& s : layout->owned())
      for (int64_t i = s.begin; i < s.begin + s.count; ++i)
        ++owners[static_cast<size_t>(i)];
    BOOST_TEST(layout->buckets().size() == 3u);
    BOOST_TEST(layout->buckets()[0].chunk == 16);   // 48 / 3
    BOOST_TEST(layout->buckets()[2].chunk == 3);    // ceil(7 / 3): padded to 9
    BOOST_TEST(layout->buckets()[2].padded(3));
    BOOST_TEST(!layout->buckets()[1].padded(3));
  }
  BOOST_TEST(total == 103);
  BOOST_TEST(std::all_of(owners.begin(), owners.end(), [](int c) { return c == 1; }));
  auto last = zero::shard_layout::plan(103, 3, 2, buckets);
  BOOST_TEST(last->owned().back().begin == 102);  // rank 2 owns one element of the last bucket
  BOOST_TEST(last->owned().back().count == 1);
  auto gap = zero::shard_layout::plan(103, 3, 0, {{0, 48}, {50, 103}});
  BOOST_REQUIRE(!gap.is_ok());
  BOOST_TEST(gap.error().message().find("[50, 103)") != std::string::npos, gap.error().message());
}

BOOST_AUTO_TEST_CASE(unknown_stages_are_refused_by_name) {
  BOOST_TEST(zero::check_stage(3, "optimizations.zero_stage").is_ok());
  status seven = zero::check_stage(7, "zero_stage");
  BOOST_TEST(seven.message().find("must be 0, 1, 2 or 3, got 7") != std::string::npos, seven.message());
  status negative = zero::check_stage(-1, "optimizations.zero_stage");
  BOOST_TEST(negative.message().find("optimizations.zero_stage must be") != std::string::npos,
             negative.message());
  group_stores stores(rank_mode::threads);
  auto r = make_runner(0, 1, stores.for_rank(), mlp("adam", 5));
  BOOST_REQUIRE(!r.is_ok());
  BOOST_TEST(r.error().message().find("zero_stage must be 0, 1, 2 or 3, got 5") != std::string::npos,
             r.error().message());
}

BOOST_AUTO_TEST_CASE(stages_1_to_3_equal_unsharded_training_bit_for_bit_on_shm) {
  // One epoch of Fashion-MNIST: 235 or 236 steps of a global batch of 256.
  for (const std::string opt : {"sgd", "adam"})
    for (int n : {2, 3}) {
      const run_outcome plain = train_group(n, mlp(opt, 0), 1);
      BOOST_TEST(plain.metrics[0].steps >= 200);
      for (int stage : {1, 2, 3}) {
        const run_outcome sharded = train_group(n, mlp(opt, stage), 1);
        BOOST_TEST((sharded.parameters == plain.parameters),
                   opt << ", " << n << " replicas, stage " << stage << ": differs by up to "
                       << max_relative_difference(plain.parameters, sharded.parameters));
        BOOST_TEST(sharded.metrics[0].loss == plain.metrics[0].loss);
      }
    }
}

BOOST_AUTO_TEST_CASE(each_rank_keeps_its_share_of_the_optimizer_state) {
  const int64_t parameters = 784 * 64 + 64 + 64 * 32 + 32 + 32 * 10 + 10;
  for (int n : {2, 3}) {
    for (int stage : {0, 1, 2, 3}) {
      const run_outcome out = train_group(n, mlp("adam", stage), 1);
      double total = 0;
      for (int q = 0; q < n; ++q) {
        const auto& extra = out.metrics[static_cast<size_t>(q)].extra;
        const double state = extra.at("memory.optimizer_bytes");
        const double grads = extra.at("memory.gradients_bytes");
        BOOST_TEST(extra.at("memory.parameters_bytes") == 4.0 * parameters);
        total += state;
        if (stage == 0) {
          BOOST_TEST(state == 8.0 * parameters);
          continue;
        }
        // Adam's two moments of 1/N of the parameters, give or take the
        // padded bucket's few elements.
        BOOST_TEST(std::fabs(state - 8.0 * parameters / n) <= 8.0 * n,
                   "stage " << stage << " rank " << q << " of " << n << ": " << state);
        // Chunks of these 16 KiB buckets hold no whole 2 MiB page: nothing
        // to give back (the next cases give back).
        BOOST_TEST(grads == 4.0 * parameters);
      }
      if (stage > 0)
        BOOST_TEST(total == 8.0 * parameters);  // every element's state once
    }
  }
}

BOOST_AUTO_TEST_CASE(stage_2_gives_back_the_gradient_pages_other_ranks_own) {
  // 784 -> 2048 -> 2048 -> 10: 5.8 M parameters, 23 MB of gradients.
  const int n = 2;
  std::vector<double> released(n, 0), resident(n, 0), owned(n, 0);
  group_stores stores(rank_mode::threads);
  auto ranks = run_ranks(n, rank_mode::threads, std::chrono::seconds(120), [&](int rank) -> status {
    DTRAIN_ASSIGN_OR_RETURN(auto c, shm_rank(stores, rank, n));
    DTRAIN_ASSIGN_OR_RETURN(auto m, wide_mlp());
    comm::gradient_sync_options so;
    so.bucket_bytes = 25 << 20;
    so.zero_stage = 2;
    DTRAIN_ASSIGN_OR_RETURN(auto sync, comm::gradient_sync::create(*m, *c, so));
    auto [x, y] = batch_of(rank);
    nn::cross_entropy_loss loss;
    (void)sync->begin_micro_batch();
    DTRAIN_ASSIGN_OR_RETURN(const tensor* out, m->forward(x, true));
    DTRAIN_RETURN_IF_ERROR(loss.compute(*out, y, true).to_status());
    DTRAIN_RETURN_IF_ERROR(m->backward(loss.grad(), false));
    DTRAIN_RETURN_IF_ERROR(sync->finish().to_status());
    released[static_cast<size_t>(rank)] = static_cast<double>(sync->released_bytes());
    owned[static_cast<size_t>(rank)] = 4.0 * static_cast<double>(sync->layout()->owned_count());
    // What the kernel says: pages of the buffer still in memory.
    DTRAIN_ASSIGN_OR_RETURN(resident[static_cast<size_t>(rank)], resident_bytes(m->gradients()));
    return status::ok();
  });
  BOOST_TEST(failures(ranks).empty(), failures(ranks));
  const double total = 4.0 * (784 * 2048 + 2048 + 2048 * 2048 + 2048 + 2048 * 10 + 10);
  for (int q = 0; q < n; ++q) {
    BOOST_TEST_MESSAGE("rank " << q << ": " << released[q] / (1 << 20) << " MiB given back, "
                               << resident[q] / (1 << 20) << " MiB resident of " << total / (1 << 20));
    BOOST_TEST(released[q] >= 0.8 * (total - owned[q]));  // all but the chunks' edge pages
    BOOST_TEST(resident[q] <= total - released[q] + 4096);
  }
}

BOOST_AUTO_TEST_CASE(stage_3_holds_its_own_parameters_and_a_layer_or_two_of_the_others) {
  // 784 -> 2048 -> 2048 -> 10 in 8 MiB buckets: one bucket per layer (the
  // middle one 16 MiB on its own), so a pass holds one or two layers of
  // the others' parameters at a time.
  const int n = 2;
  std::vector<double> released(n, 0), resident(n, 0), owned(n, 0);
  std::vector<int> peak(n, 0);
  std::vector<int64_t> gathers(n, 0);
  // One char per rank, not std::vector<bool>: the rank threads write at
  // once, and vector<bool>'s bits share words (a lost update otherwise).
  std::vector<char> same_loss(n, 0);
  group_stores stores(rank_mode::threads);
  auto ranks = run_ranks(n, rank_mode::threads, std::chrono::seconds(120), [&](int rank) -> status {
    DTRAIN_ASSIGN_OR_RETURN(auto c, shm_rank(stores, rank, n));
    DTRAIN_ASSIGN_OR_RETURN(auto m, wide_mlp());
    DTRAIN_ASSIGN_OR_RETURN(auto whole, wide_mlp());
    comm::gradient_sync_options so;
    so.bucket_bytes = 8 << 20;
    so.zero_stage = 3;
    DTRAIN_ASSIGN_OR_RETURN(auto sync, comm::gradient_sync::create(*m, *c, so));
    DTRAIN_ASSIGN_OR_RETURN(auto shards, zero::parameter_shards::create(*m, *c, *sync->layout()));
    auto [x, y] = batch_of(rank);
    // The sharded model computes what the whole one does, bit for bit.
    nn::cross_entropy_loss loss, reference;
    DTRAIN_ASSIGN_OR_RETURN(const tensor* expected, whole->forward(x, true));
    DTRAIN_ASSIGN_OR_RETURN(auto want, reference.compute(*expected, y, true));
    (void)sync->begin_micro_batch();
    DTRAIN_ASSIGN_OR_RETURN(const tensor* out, m->forward(x, true));
    DTRAIN_ASSIGN_OR_RETURN(auto got, loss.compute(*out, y, true));
    same_loss[static_cast<size_t>(rank)] = got == want;
    DTRAIN_RETURN_IF_ERROR(m->backward(loss.grad(), false));
    DTRAIN_RETURN_IF_ERROR(sync->finish().to_status());
    shards->reshard();  // as after an optimizer step
    released[static_cast<size_t>(rank)] = static_cast<double>(shards->released_bytes());
    owned[static_cast<size_t>(rank)] = 4.0 * static_cast<double>(sync->layout()->owned_count());
    peak[static_cast<size_t>(rank)] = shards->peak_gathered();
    gathers[static_cast<size_t>(rank)] = shards->gathers();
    DTRAIN_ASSIGN_OR_RETURN(resident[static_cast<size_t>(rank)], resident_bytes(m->parameters()));
    return status::ok();
  });
  BOOST_TEST(failures(ranks).empty(), failures(ranks));
  const double total = 4.0 * (784 * 2048 + 2048 + 2048 * 2048 + 2048 + 2048 * 10 + 10);
  for (int q = 0; q < n; ++q) {
    BOOST_TEST_MESSAGE("rank " << q << ": " << resident[q] / (1 << 20) << " MiB of parameters resident of "
                               << total / (1 << 20) << ", " << gathers[q] << " all-gathers, at most "
                               << peak[q] << " buckets gathered at once");
    BOOST_TEST(same_loss[q], "rank " << q << ": the sharded forward computed another loss");
    // All but the pages the chunks' edges cut (three buckets here).
    BOOST_TEST(released[q] >= 0.7 * (total - owned[q]));
    BOOST_TEST(resident[q] <= total - released[q] + 4096);
    BOOST_TEST(peak[q] <= 2);         // this layer's and the prefetched next one's
    BOOST_TEST(gathers[q] >= 4);      // forward and again backward
  }
}

BOOST_AUTO_TEST_CASE(node_processes_gloo_and_hierarchical_groups_match_unsharded) {
  // Processes on shm: the same bits as threads.
  const run_outcome threads = train_group(2, mlp("adam", 0), 1);
  const run_outcome processes =
      train_group(2, mlp("adam", 2), 1, "shm", rank_mode::processes);
  BOOST_TEST((processes.parameters == threads.parameters));
  const run_outcome processes3 =
      train_group(2, mlp("adam", 3), 1, "shm", rank_mode::processes);
  BOOST_TEST((processes3.parameters == threads.parameters));
  // Gloo's ring reduces each element in an order that depends on where it
  // lies in its bucket; unsharded and sharded buckets have the same
  // boundaries (multiples of the group's size), so every stage sums every
  // element alike: bit for bit, as on shm. The two-level group, whose
  // leaders reduce whole host sums, is exact too.
  for (const std::string opt : {"sgd", "adam"}) {
    const run_outcome plain = train_group(3, mlp(opt, 0), 1, "gloo");
    const run_outcome one = train_group(3, mlp(opt, 1), 1, "gloo");
    const run_outcome two = train_group(3, mlp(opt, 2), 1, "gloo");
    const run_outcome three = train_group(3, mlp(opt, 3), 1, "gloo");
    const double moved = max_relative_difference(plain.parameters, one.parameters);
    const double sharded = max_relative_difference(one.parameters, two.parameters);
    BOOST_TEST_MESSAGE("gloo " << opt << ": stage 1 vs 0 " << moved << ", stage 2 vs 1 " << sharded);
    BOOST_TEST((one.parameters == plain.parameters), opt << ": stage 1 vs 0 " << moved);
    BOOST_TEST((two.parameters == one.parameters), opt << ": stage 2 vs 1 " << sharded);
    // Stage 3's gathers copy bits: the same run as stage 2.
    BOOST_TEST((three.parameters == two.parameters), "gloo " << opt << " stage 3 vs 2: "
                   << max_relative_difference(two.parameters, three.parameters));
    const run_outcome h0 = train_group(4, mlp(opt, 0), 1, "hierarchical");
    for (int stage : {2, 3}) {
      const run_outcome h = train_group(4, mlp(opt, stage), 1, "hierarchical");
      BOOST_TEST((h.parameters == h0.parameters), "hierarchical " << opt << " stage " << stage
                     << ": " << max_relative_difference(h0.parameters, h.parameters));
    }
  }
}

BOOST_AUTO_TEST_CASE(clipping_aggregation_and_fp16_scaling_work_under_stages_2_and_3) {
  auto clipped = [](int stage) {
    auto o = mlp("sgd", stage);
    o.clip_grad_norm = 0.25f;
    o.aggregation_frequency = 2;
    return o;
  };
  const run_outcome plain = train_group(2, clipped(0), 1);
  const run_outcome sharded = train_group(2, clipped(2), 1);
  const run_outcome sharded3 = train_group(2, clipped(3), 1);
  // The norm adds the shards' squares in another order: float precision.
  const double diff = max_relative_difference(plain.parameters, sharded.parameters);
  BOOST_TEST(diff <= 1e-4, diff);
  BOOST_TEST((sharded3.parameters == sharded.parameters));
  const double norm0 = plain.metrics[0].extra.at("grad_norm");
  BOOST_TEST(std::fabs(sharded.metrics[0].extra.at("grad_norm") - norm0) <= 1e-4 * norm0);
  BOOST_TEST(norm0 > 0.25);  // the clip did something
  const run_outcome unclipped = train_group(2, [] {
    auto o = mlp("sgd", 0);
    o.aggregation_frequency = 2;
    return o;
  }(), 1);
  BOOST_TEST(max_relative_difference(plain.parameters, unclipped.parameters) > 1e-3);
  // fp16 compute with dynamic loss scaling: the overflow check and the
  // unscale of each shard agree with the unsharded run.
  auto half = [](int stage) {
    auto o = mlp("adam", stage);
    o.compute = precision::fp16;
    o.loss_scaling.growth_interval = 50;
    return o;
  };
  const run_outcome h0 = train_group(2, half(0), 1);
  for (int stage : {2, 3}) {
    const run_outcome h = train_group(2, half(stage), 1);
    BOOST_TEST((h.parameters == h0.parameters), "fp16, stage " << stage);
    BOOST_TEST(h.metrics[0].extra.at("loss_scale") == h0.metrics[0].extra.at("loss_scale"));
  }
}

BOOST_AUTO_TEST_CASE(checkpoints_restore_into_any_stage_and_replica_count) {
  temp_dir dir;
  struct group { int stage, n; };
  const std::vector<group> sources{{2, 2}, {1, 3}, {0, 1}, {3, 2}};
  const std::vector<group> targets{{0, 1}, {1, 1}, {2, 1}, {0, 2}, {1, 2}, {2, 2},
                                   {3, 2}, {0, 3}, {1, 3}, {2, 3}, {3, 3}};
  int saved = 0;
  for (const group& from : sources) {
    const std::string root = dir.file("from-" + std::to_string(saved++));
    run_group(from.n, rank_mode::threads, mlp("adam", from.stage), [&](int, runner_t& r) {
      DTRAIN_RETURN_IF_ERROR(r.train_epoch().to_status());
      return r.save(root, {}, 0, "");
    });
    const std::string original = checkpoint::newest_valid(*serialization::default_checkpoint_codec(), root).value();
    const auto expected = read_checkpoint(original);
    int restored = 0;
    for (const group& to : targets) {
      // Restored and saved again in the new layout: the same state, bit
      // for bit (each rank read and wrote only its own shard of it).
      const std::string again = dir.file("again-" + std::to_string(saved) + "-" + std::to_string(restored++));
      // A char per rank: the rank threads write at once, and a
      // vector<bool>'s neighbouring bits share a word.
      std::vector<char> whole(static_cast<size_t>(to.n), 0);
      run_group(to.n, rank_mode::threads, mlp("adam", to.stage), [&](int rank, runner_t& r) {
        DTRAIN_RETURN_IF_ERROR(r.restore(original));
        // What the model computes with (gathered, at stage 3), not only
        // what it writes back, is the checkpoint's.
        DTRAIN_ASSIGN_OR_RETURN(auto values, r.parameter_values());
        whole[static_cast<size_t>(rank)] = values == expected.at("parameters");
        return r.save(again, {}, 0, "");
      });
      for (int q = 0; q < to.n; ++q)
        BOOST_TEST(whole[static_cast<size_t>(q)], "stage " << from.stage << " x " << from.n
                       << " restored as stage " << to.stage << " x " << to.n << ": rank " << q
                       << " holds other parameters");
      const auto got = read_checkpoint(checkpoint::newest_valid(*serialization::default_checkpoint_codec(), again).value());
      BOOST_TEST((got == expected), "stage " << from.stage << " x " << from.n << " restored as stage "
                                             << to.stage << " x " << to.n);
    }
  }
}

BOOST_AUTO_TEST_CASE(asynchronous_step_checkpoints_of_sharded_state_restore_in_other_layouts) {
  // Every 100 steps a stage-2 group of 3 snapshots its shards and writes
  // them in the background. The newest (step 200), restored unsharded on
  // one replica and at stage 1 on two and saved again, is the same state
  // bit for bit: every element of the optimizer state was written once.
  temp_dir dir;
  auto options = mlp("adam", 2);
  options.async_checkpoint.root = dir.file("async");
  options.async_checkpoint.every_steps = 100;
  options.async_checkpoint.keep_last = 1;
  run_group(3, rank_mode::threads, options,
            [&](int, runner_t& r) { return r.train_epoch().to_status(); });
  auto codec = serialization::default_checkpoint_codec();
  const std::string async = checkpoint::newest_valid(*codec, dir.file("async")).value();
  const auto saved = read_checkpoint(async);
  BOOST_TEST(codec->read_manifest(async)->step == 200);
  const auto& moment = saved.at("optimizer/exp_avg_sq");
  BOOST_TEST(std::count(moment.begin(), moment.end(), 0.0f) < static_cast<long>(moment.size() / 10));
  int again = 0;
  for (const auto& [stage, n] : std::vector<std::pair<int, int>>{{0, 1}, {1, 2}, {3, 2}}) {
    const std::string root = dir.file("again" + std::to_string(again++));
    run_group(n, rank_mode::threads, mlp("adam", stage), [&](int, runner_t& r) {
      DTRAIN_RETURN_IF_ERROR(r.restore(async));
      return r.save(root, {}, 0, "");
    });
    BOOST_TEST((read_checkpoint(checkpoint::newest_valid(*codec, root).value()) == saved),
               "restored as stage " << stage << " x " << n);
  }
}

BOOST_AUTO_TEST_CASE(a_stage_2_run_of_2_resumes_as_stage_1_or_3_of_3_and_unsharded_on_1) {
  temp_dir dir;
  const std::string root = dir.file("ckpt");
  run_group(2, rank_mode::threads, mlp("adam", 2), [&](int, runner_t& r) {
    DTRAIN_RETURN_IF_ERROR(r.train_epoch().to_status());
    return r.save(root, {}, 0, "");
  });
  // The original run, continued: a second epoch at stage 2 on 2.
  std::vector<double> accuracy;
  for (const auto& [stage, n] : std::vector<std::pair<int, int>>{{2, 2}, {1, 3}, {0, 1}, {3, 3}}) {
    double acc = 0;
    int64_t steps = 0;
    run_group(n, rank_mode::threads, mlp("adam", stage), [&](int rank, runner_t& r) {
      DTRAIN_RETURN_IF_ERROR(r.restore(root));
      DTRAIN_RETURN_IF_ERROR(r.train_epoch().to_status());
      DTRAIN_ASSIGN_OR_RETURN(auto v, r.validate());
      if (rank == 0) {
        acc = v.accuracy;
        steps = r.epochs_done();
      }
      return status::ok();
    });
    BOOST_TEST(steps == 2);
    accuracy.push_back(acc);
  }
  BOOST_TEST_MESSAGE("accuracy after resuming: " << accuracy[0] << " (stage 2 x 2), " << accuracy[1]
                                                 << " (stage 1 x 3), " << accuracy[2] << " (1), "
                                                 << accuracy[3] << " (stage 3 x 3)");
  BOOST_TEST(accuracy[0] > 0.8);
  for (size_t i = 1; i < accuracy.size(); ++i)
    BOOST_TEST(std::fabs(accuracy[i] - accuracy[0]) <= 0.005, i << ": " << accuracy[i]);
}

BOOST_AUTO_TEST_SUITE_END()
