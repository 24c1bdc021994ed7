// The libtorch adapter: a torch::nn::Module's parameters, gradients and
// buffers are the dtrain model's flat buffers; replicas trained through
// dtrain's replica runner stay bitwise identical and train like one
// process at the whole batch; checkpoints of the module and of libtorch's
// optimizers restore into any number of replicas.
#include <boost/test/unit_test.hpp>

#include <cstring>

#include <chrono>
#include <mutex>

#include "support/collective_check.hpp"
#include "dtrain/comm/factory.hpp"
#include "dtrain/comm/gradient_sync.hpp"
#include "dtrain/comm/observed.hpp"
#include "dtrain/core/check.hpp"
#include "dtrain/core/threads.hpp"
#include "dtrain/libtorch/module.hpp"
#include "dtrain/libtorch/optimizer.hpp"
#include "support/torch_operators.hpp"
#include "support/test_util.hpp"
#include "support/replica_group.hpp"

using namespace dtrain;
using namespace dtrain::testing;

namespace {

struct registered {
  registered() { register_torch_operators(); }
};

train::replica_options net_options(config_map config, int64_t global_batch = 64) {
  return options_for("torch_net", std::move(config), global_batch, 5);
}

// Rank 0's parameters before and after `epochs` epochs of an n-replica group,
// checking after each that every replica holds the same bytes.
std::pair<std::vector<float>, std::vector<float>> train_group(int n,
                                                             const train::replica_options& o,
                                                             int epochs = 1) {
  std::pair<std::vector<float>, std::vector<float>> before_after;
  run_group(n, rank_mode::threads, o, [&](int rank, runner_t& r) -> status {
    auto before = r.parameters().to_vector();
    for (int e = 0; e < epochs; ++e) {
      DTRAIN_RETURN_IF_ERROR(r.train_epoch().to_status());
      auto all = r.context().all_gather(bytes_of(r.parameters()));
      DTRAIN_RETURN_IF_ERROR(all.to_status());
      for (const auto& other : *all)
        DTRAIN_RETURN_IF_ERROR(expect(other == all->front(), "replicas differ after epoch " +
                                                                 std::to_string(e + 1)));
    }
    if (rank == 0)
      before_after = {before, r.parameters().to_vector()};
    return status::ok();
  });
  return before_after;
}

using clock_type = std::chrono::steady_clock;

/// An MLP of four 1024-wide layers: a backward of several milliseconds.
struct wide_mlp_impl : torch::nn::Module {
  wide_mlp_impl() {
    for (int i = 0; i < 4; ++i)
      layers.push_back(register_module("fc" + std::to_string(i),
                                       torch::nn::Linear(i == 0 ? 256 : 1024, 1024)));
    head = register_module("head", torch::nn::Linear(1024, 10));
  }
  at::Tensor forward(at::Tensor x) {
    for (auto& l : layers)
      x = torch::relu(l(x));
    return head(x);
  }
  std::vector<torch::nn::Linear> layers;
  torch::nn::Linear head{nullptr};
};
TORCH_MODULE_IMPL(wide_mlp, wide_mlp_impl);

} // namespace

// The file's suite; CTest runs each suite inside it on its own (libtorch_adapter/NAME).
BOOST_AUTO_TEST_SUITE(libtorch_adapter)

BOOST_FIXTURE_TEST_SUITE(module, registered)

BOOST_AUTO_TEST_CASE(parameters_and_gradients_are_views_of_the_flat_buffers) {
  torch::manual_seed(3);
  torch_net net(true);
  torch_net reference(true);
  {
    torch::NoGradGuard no_grad;
    for (size_t i = 0; i < net->parameters().size(); ++i)
      reference->parameters()[i].copy_(net->parameters()[i]);
  }
  auto made = libtorch::make_model(torch::nn::AnyModule(net), {{1, 8, 8}, device::cpu()});
  BOOST_REQUIRE_MESSAGE(made.is_ok(), made.error().to_string());
  nn::model& m = **made;
  BOOST_TEST(m.input_features() == 64);
  BOOST_TEST(m.output_features() == 5);
  auto* layer = libtorch::layer_of(m);
  BOOST_REQUIRE(layer != nullptr);
  BOOST_TEST(m.parameter_count() == 4 * 9 + 4 + 4 + 4 + 64 * 32 + 32 + 32 * 5 + 5);
  // BatchNorm's running mean and variance are the float buffers.
  BOOST_TEST(m.buffer_count() == 8);
  BOOST_TEST(m.buffers().to_vector()[4] == 1.0f);  // running_var starts at 1
  for (size_t i = 0; i < layer->parameters().size(); ++i) {
    BOOST_TEST(layer->parameters()[i].data_ptr<float>() ==
               m.parameters().data() + layer->offsets()[i]);
    BOOST_TEST(layer->parameters()[i].grad().data_ptr<float>() ==
               m.gradients().data() + layer->offsets()[i]);
  }
  // A step through the model gives libtorch's own gradients, in place.
  auto [x, y] = torch_net_data(16);
  tensor features = tensor::from_vector(
      std::vector<float>(x.data_ptr<float>(), x.data_ptr<float>() + x.numel()), {16, 64});
  auto out = m.forward(features, true);
  BOOST_REQUIRE(out.is_ok());
  tensor dy = tensor::full({16, 5}, 0.1f);
  BOOST_REQUIRE(m.backward(dy, false).is_ok());
  reference->train();
  at::Tensor ref_out = reference->forward(x.view({16, 1, 8, 8}));
  ref_out.backward(torch::full({16, 5}, 0.1f));
  std::vector<float> expected;
  for (auto& p : reference->parameters())
    for (int64_t i = 0; i < p.numel(); ++i)
      expected.push_back(p.grad().data_ptr<float>()[i]);
  BOOST_TEST(max_relative_error(m.gradients().to_vector(), expected) < 1e-6);
  // The running statistics moved in the model's buffer.
  BOOST_TEST(m.buffers().to_vector()[4] != 1.0f);
  // accumulate = false overwrites: a second backward gives the same values.
  BOOST_REQUIRE(m.forward(features, true).is_ok());
  BOOST_REQUIRE(m.backward(dy, false).is_ok());
  BOOST_TEST(max_relative_error(m.gradients().to_vector(), expected) < 1e-6);
}

BOOST_AUTO_TEST_CASE(bad_modules_and_optimizers_are_refused_by_name) {
  torch_net net(false);
  auto wrong = libtorch::make_model(torch::nn::AnyModule(net), {{1, 7, 7}, device::cpu()});
  BOOST_REQUIRE(!wrong.is_ok());
  BOOST_TEST(wrong.error().message().find("[1, 7, 7]") != std::string::npos, wrong.error().to_string());
  auto empty = libtorch::make_model(torch::nn::AnyModule(net), {{}, device::cpu()});
  BOOST_TEST(!empty.is_ok());
  auto made = libtorch::make_model(torch::nn::AnyModule(net), {{1, 8, 8}, device::cpu()});
  BOOST_REQUIRE(made.is_ok());
  // A batch of the wrong width, and dtrain's mixed precision, are errors.
  auto narrow = (*made)->forward(tensor::zeros({2, 63}), true);
  BOOST_REQUIRE(!narrow.is_ok());
  BOOST_TEST(narrow.error().message().find("[batch, 64]") != std::string::npos,
             narrow.error().to_string());
  (*made)->set_compute_precision(precision::bf16);
  auto mixed = (*made)->forward(tensor::zeros({2, 64}), true);
  BOOST_REQUIRE(!mixed.is_ok());
  BOOST_TEST(mixed.error().message().find("must be fp32, not bf16") != std::string::npos,
             mixed.error().to_string());
  (*made)->set_compute_precision(precision::fp32);
  BOOST_TEST((*made)->forward(tensor::zeros({2, 64}), true).is_ok());
  torch::Tensor stray = torch::zeros({3}, torch::requires_grad());
  auto other = libtorch::torch_optimizer::create(
      std::make_unique<torch::optim::SGD>(std::vector<torch::Tensor>{stray},
                                          torch::optim::SGDOptions(0.1)),
      *libtorch::layer_of(**made));
  BOOST_REQUIRE(!other.is_ok());
  BOOST_TEST(other.error().message().find("not a trainable parameter") != std::string::npos);
  auto lbfgs = libtorch::torch_optimizer::create(
      std::make_unique<torch::optim::LBFGS>(net->parameters()), *libtorch::layer_of(**made));
  BOOST_REQUIRE(!lbfgs.is_ok());
  BOOST_TEST(lbfgs.error().message().find("SGD, Adam, AdamW, RMSprop or Adagrad") !=
             std::string::npos);
}

// A .grad that autograd replaced instead of accumulating into (here: set
// to none before backward) would leave the replica training on gradients
// nobody syncs; backward says so, naming the parameter.
BOOST_AUTO_TEST_CASE(a_replaced_gradient_is_an_error_naming_the_parameter) {
  torch_net net(false);
  auto made = libtorch::make_model(torch::nn::AnyModule(net), {{1, 8, 8}, device::cpu()});
  BOOST_REQUIRE(made.is_ok());
  nn::model& m = **made;
  BOOST_REQUIRE(m.forward(tensor::zeros({4, 64}), true).is_ok());
  BOOST_REQUIRE(m.backward(tensor::full({4, 5}, 0.1f), false).is_ok());
  net->zero_grad(/*set_to_none=*/true);
  BOOST_REQUIRE(m.forward(tensor::zeros({4, 64}), true).is_ok());
  status s = m.backward(tensor::full({4, 5}, 0.1f), false);
  BOOST_REQUIRE(!s.is_ok());
  BOOST_TEST(s.message().find("parameter 'conv.weight'") != std::string::npos, s.to_string());
}

// Parameter groups keep the ratio of their learning rates under dtrain's
// schedule (which sets the first group's).
BOOST_AUTO_TEST_CASE(parameter_groups_keep_their_learning_rate_ratio) {
  torch_net net(false);
  std::vector<torch::optim::OptimizerParamGroup> groups;
  groups.emplace_back(net->conv->parameters(), std::make_unique<torch::optim::SGDOptions>(0.1));
  std::vector<at::Tensor> rest = net->fc1->parameters();
  for (auto& p : net->fc2->parameters())
    rest.push_back(p);
  groups.emplace_back(rest, std::make_unique<torch::optim::SGDOptions>(0.01));
  auto sgd = std::make_unique<torch::optim::SGD>(groups, torch::optim::SGDOptions(0.1));
  auto* raw = sgd.get();
  auto made = libtorch::make_model(torch::nn::AnyModule(net), {{1, 8, 8}, device::cpu()});
  BOOST_REQUIRE(made.is_ok());
  auto opt = libtorch::torch_optimizer::create(std::move(sgd), *libtorch::layer_of(**made));
  BOOST_REQUIRE_MESSAGE(opt.is_ok(), opt.error().to_string());
  BOOST_REQUIRE((*opt)->step((*made)->parameters(), (*made)->gradients(), 0.2f).is_ok());
  BOOST_TEST(raw->param_groups()[0].options().get_lr() == 0.2f, boost::test_tools::tolerance(1e-6));
  BOOST_TEST(raw->param_groups()[1].options().get_lr() == 0.02f, boost::test_tools::tolerance(1e-6));
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_FIXTURE_TEST_SUITE(data_parallel, registered)

// Every optimizer and loss path: after each epoch all replicas hold the
// same bytes, and 2 replicas at half the batch end where one does at the
// whole batch (the shard sampler gives step k of both the same samples).
BOOST_AUTO_TEST_CASE(replicas_stay_bitwise_identical_and_train_like_one_process) {
  for (const char* opt : {"sgd", "adam", "dtrain_adam"})
    for (const char* loss : {"torch", "dtrain"}) {
      BOOST_TEST_CONTEXT("optimizer " << opt << ", loss " << loss) {
        auto options = net_options({{"optimizer", opt}, {"loss", loss}, {"lr", "0.01"}});
        auto [initial1, one] = train_group(1, options, 2);
        auto [initial2, two] = train_group(2, options, 2);
        BOOST_TEST(initial1 == initial2);
        BOOST_TEST(max_relative_error(one, initial1) > 1e-3);  // it trained
        BOOST_TEST_MESSAGE(opt << "/" << loss << ": 1 vs 2 replicas after 2 epochs: max "
                               << "relative error " << max_relative_error(two, one));
        BOOST_TEST(max_relative_error(two, one) < 1e-4);
      }
    }
}

// The buckets of the last layers are all-reduced while autograd still
// computes the first ones: by the clock, the first all_reduce is issued
// well before backward returns, on both ranks, in every step after the
// first (and every bucket before it returns, in every step: the model
// reports the rest as it ends).
BOOST_AUTO_TEST_CASE(buckets_start_while_autograd_runs_backward) {
  group_stores stores(rank_mode::threads);
  std::mutex mutex;
  std::vector<std::string> lines;
  auto outcomes = run_ranks(2, rank_mode::threads, std::chrono::seconds(120), [&](int rank) -> status {
    set_blas_threads(1);
    at::set_num_threads(1);
    comm::group_options go;
    go.rank = rank;
    go.size = 2;
    go.store = stores.for_rank();
    go.backend = "shm";
    go.timeout = std::chrono::milliseconds(20000);
    DTRAIN_ASSIGN_OR_RETURN(auto inner, comm::make_communicator(go));
    std::mutex launches_mutex;
    std::vector<clock_type::time_point> launched;
    comm::observed_communicator timing(std::move(inner), [&](int64_t) {
      std::lock_guard<std::mutex> lock(launches_mutex);
      launched.push_back(clock_type::now());
    });
    torch::manual_seed(1);
    wide_mlp net;
    DTRAIN_ASSIGN_OR_RETURN(auto m, libtorch::make_model(torch::nn::AnyModule(net),
                                                         {{256}, device::cpu()}));
    comm::gradient_sync_options so;
    so.bucket_bytes = 1 << 20;
    so.first_bucket_bytes = 1 << 20;
    DTRAIN_ASSIGN_OR_RETURN(auto sync, comm::gradient_sync::create(*m, timing, so));
    const size_t buckets = sync->bucket_count();
    // When autograd reaches the first layer's weight: backward's last
    // gradient (the layer nearest the input), three wide layers after the
    // first bucket's (the head and the last layer's bias).
    clock_type::time_point first_layer_grad;
    net->layers[0]->weight.register_hook([&](const at::Tensor&) {
      std::lock_guard<std::mutex> lock(launches_mutex);
      first_layer_grad = clock_type::now();
    });
    tensor x = random_tensor({64, 256}, 10 + rank);
    tensor dy = random_tensor({64, 10}, 20 + rank, 0.01f);
    for (int step = 0; step < 5; ++step) {
      {
        std::lock_guard<std::mutex> lock(launches_mutex);
        launched.clear();
      }
      auto mb = sync->begin_micro_batch();
      DTRAIN_RETURN_IF_ERROR(m->forward(x, true).to_status());
      const auto begin = clock_type::now();
      DTRAIN_RETURN_IF_ERROR(m->backward(dy, mb.accumulate));
      const auto end = clock_type::now();
      DTRAIN_RETURN_IF_ERROR(sync->finish().to_status());
      std::vector<clock_type::time_point> launches;
      {
        std::lock_guard<std::mutex> lock(launches_mutex);
        launches = launched;
      }
      DTRAIN_RETURN_IF_ERROR(expect(launches.size() == buckets, "launched " +
                                    std::to_string(launches.size()) + " of " +
                                    std::to_string(buckets) + " buckets"));
      size_t before_end = 0;
      for (auto t : launches)
        before_end += t < end ? 1 : 0;
      auto ms = [&](clock_type::time_point t) {
        return std::chrono::duration<double, std::milli>(t - begin).count();
      };
      if (step == 4) {
        std::lock_guard<std::mutex> lock(mutex);
        lines.push_back("rank " + std::to_string(rank) + ": " + std::to_string(buckets) +
                        " buckets, " + std::to_string(before_end) +
                        " issued before backward ended; the first at " +
                        std::to_string(ms(launches.front())) + " ms of a " +
                        std::to_string(ms(end)) + " ms backward");
      }
      // The first bucket is issued from the hook of the last gradient it
      // waits for, on the thread that runs backward, so it comes before
      // autograd reaches the first layer: an order, not a share of the
      // time, which a loaded machine would stretch (an earlier "before
      // 0.8 of backward" failed once under load). Issuing the buckets at
      // the end of backward would put them after it.
      clock_type::time_point reached_first_layer;
      {
        std::lock_guard<std::mutex> lock(launches_mutex);
        reached_first_layer = first_layer_grad;
      }
      DTRAIN_RETURN_IF_ERROR(expect(reached_first_layer > begin &&
                                        launches.front() < reached_first_layer,
                                    "step " + std::to_string(step) + ": the first bucket was "
                                    "issued at " + std::to_string(ms(launches.front())) +
                                    " ms, autograd reached the first layer at " +
                                    std::to_string(ms(reached_first_layer)) + " ms of a " +
                                    std::to_string(ms(end)) + " ms backward"));
      DTRAIN_RETURN_IF_ERROR(expect(before_end == buckets,
                                    "step " + std::to_string(step) + ": only " +
                                        std::to_string(before_end) + " of " +
                                        std::to_string(buckets) +
                                        " buckets were issued before backward returned"));
    }
    return status::ok();
  });
  for (const auto& line : lines)
    BOOST_TEST_MESSAGE(line);
  BOOST_TEST(failures(outcomes).empty(), failures(outcomes));
}

BOOST_AUTO_TEST_CASE(the_loss_falls_and_validation_reports_accuracy) {
  run_group(2, rank_mode::threads, net_options({{"batch_norm", "1"}, {"lr", "0.05"}, {"samples", "2048"}}),
            [&](int, runner_t& r) -> status {
              DTRAIN_ASSIGN_OR_RETURN(auto first, r.train_epoch());
              train::epoch_metrics last;
              for (int e = 0; e < 4; ++e) {
                DTRAIN_ASSIGN_OR_RETURN(last, r.train_epoch());
              }
              DTRAIN_ASSIGN_OR_RETURN(auto v, r.validate());
              DTRAIN_RETURN_IF_ERROR(expect(last.loss < 0.8 * first.loss,
                                            "loss " + std::to_string(first.loss) + " -> " +
                                                std::to_string(last.loss)));
              return expect(v.accuracy > 0.4 && v.samples == 128,  // chance: 0.2
                            "validation accuracy " + std::to_string(v.accuracy));
            });
}

BOOST_AUTO_TEST_CASE(zero_stages_1_and_2_step_libtorch_optimizers_bit_for_bit_as_unsharded) {
  // libtorch's SGD (momentum), Adam and Adagrad, rebuilt over each rank's
  // shard of the flat buffer (views cut at parameter boundaries), update
  // every element as the whole optimizer does; 1 KiB buckets cut
  // parameters.
  for (const std::string opt : {"sgd", "adam", "adagrad"})
    for (int n : {2, 3}) {
      auto o = net_options({{"optimizer", opt}, {"lr", opt == "sgd" ? "0.05" : "0.005"}});
      o.bucket_bytes = 1024;
      const auto plain = train_group(n, o).second;
      for (int stage : {1, 2}) {
        o.zero_stage = stage;
        const auto sharded = train_group(n, o).second;
        BOOST_TEST((sharded == plain), opt << ", " << n << " replicas, stage " << stage);
      }
      o.zero_stage = 0;
    }
  // Adagrad makes its state when it is built, from its initial
  // accumulator: a sharded run restored from a checkpoint must continue
  // from the saved sums, not from fresh ones. Two epochs at stage 2 equal
  // one, a save, a restore and one more, bit for bit.
  auto adagrad = net_options({{"optimizer", "adagrad"}, {"lr", "0.02"}});
  adagrad.bucket_bytes = 1024;
  adagrad.zero_stage = 2;
  const auto straight = train_group(2, adagrad, 2).second;
  dtrain::testing::temp_dir dir;
  std::vector<float> resumed;
  run_group(2, rank_mode::threads, adagrad, [&](int, runner_t& r) -> status {
    DTRAIN_RETURN_IF_ERROR(r.train_epoch().to_status());
    return r.save(dir.file("ckpt"), {}, 0, "");
  });
  run_group(2, rank_mode::threads, adagrad, [&](int rank, runner_t& r) -> status {
    DTRAIN_RETURN_IF_ERROR(r.restore(dir.file("ckpt")));
    DTRAIN_RETURN_IF_ERROR(r.train_epoch().to_status());
    if (rank == 0)
      resumed = r.parameters().to_vector();
    return status::ok();
  });
  BOOST_TEST((resumed == straight), "Adagrad at stage 2, resumed: max relative error "
                                        << max_relative_error(resumed, straight));
  // Stage 3 takes dtrain's own optimizers only: refused by name.
  auto three = net_options({{"optimizer", "adam"}});
  three.zero_stage = 3;
  group_stores stores(rank_mode::threads);
  auto r = make_runner(0, 1, stores.for_rank(), three);
  BOOST_REQUIRE(!r.is_ok());
  BOOST_TEST(r.error().message().find("zero_stage 3 needs an optimizer") != std::string::npos,
             r.error().message());
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_FIXTURE_TEST_SUITE(checkpoints, registered)

// The module's parameters, BatchNorm's statistics, num_batches_tracked and
// libtorch's optimizer state go through the sharded checkpoint: restored
// into 2 replicas the group continues bit for bit as the original did; into
// 1 or 3 it holds the same values and, without BatchNorm (whose batch
// statistics depend on each replica's share), continues like it.
BOOST_AUTO_TEST_CASE(a_checkpoint_of_2_replicas_restores_into_1_or_3_and_continues_alike) {
  for (const char* opt : {"sgd", "adam", "adagrad", "rmsprop"})
  for (const char* bn : {"0", "1"}) {
    BOOST_TEST_CONTEXT("optimizer " << opt << ", batch_norm " << bn) {
      temp_dir root;
      auto options = net_options({{"optimizer", opt}, {"batch_norm", bn}, {"lr", "0.01"},
                                {"samples", "384"}}, 48);
      train::bytes saved, continued, saved_buffers;
      run_group(2, rank_mode::threads, options, [&](int rank, runner_t& r) -> status {
        DTRAIN_RETURN_IF_ERROR(r.train_epoch().to_status());
        DTRAIN_RETURN_IF_ERROR(r.save(root.path(), {}, 0, ""));
        if (rank == 0) {
          saved = bytes_of(r.parameters());
          saved_buffers = bytes_of(r.model_buffers());
        }
        DTRAIN_RETURN_IF_ERROR(r.train_epoch().to_status());
        if (rank == 0)
          continued = bytes_of(r.parameters());
        return status::ok();
      });
      BOOST_REQUIRE(!saved.empty());
      for (int n : {1, 2, 3}) {
        BOOST_TEST_CONTEXT(n << " replicas") {
          std::vector<float> after;
          run_group(n, rank_mode::threads, options, [&](int rank, runner_t& r) -> status {
            DTRAIN_RETURN_IF_ERROR(r.restore(root.path()));
            DTRAIN_RETURN_IF_ERROR(expect(bytes_of(r.parameters()) == saved &&
                                              bytes_of(r.model_buffers()) == saved_buffers,
                                          "restored parameters or buffers differ"));
            DTRAIN_RETURN_IF_ERROR(r.train_epoch().to_status());
            if (rank == 0)
              after = r.parameters().to_vector();
            return status::ok();
          });
          std::vector<float> original(saved.size() / 4);
          std::memcpy(original.data(), continued.data(), continued.size());
          // The same group size continues bit for bit; others sum the same
          // gradients in another order.
          if (n == 2)
            BOOST_TEST(after == original);
          else if (std::string(bn) == "0")
            BOOST_TEST(max_relative_error(after, original) < 1e-4);
        }
      }
    }
  }
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE_END()  // libtorch_adapter
