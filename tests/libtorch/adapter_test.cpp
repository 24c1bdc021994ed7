// The libtorch adapter: a torch::nn::Module's parameters, gradients and
// buffers are the dtrain model's flat buffers; replicas trained through
// dtrain's replica runner stay bitwise identical and train like one
// process at the whole batch; checkpoints of the module and of libtorch's
// optimizers restore into any number of replicas.
#include <boost/test/unit_test.hpp>

#include <cstring>

#include "dtrain/core/check.hpp"
#include "dtrain/libtorch/module.hpp"
#include "dtrain/libtorch/optimizer.hpp"
#include "libtorch/torch_operators.hpp"
#include "test_util.hpp"
#include "train/replica_group.hpp"

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

} // namespace

BOOST_FIXTURE_TEST_SUITE(libtorch_module, registered)

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

BOOST_AUTO_TEST_SUITE_END()

BOOST_FIXTURE_TEST_SUITE(libtorch_data_parallel, registered)

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

BOOST_AUTO_TEST_SUITE_END()

BOOST_FIXTURE_TEST_SUITE(libtorch_checkpoints, registered)

// The module's parameters, BatchNorm's statistics, num_batches_tracked and
// libtorch's optimizer state go through the sharded checkpoint: restored
// into 2 replicas the group continues bit for bit as the original did; into
// 1 or 3 it holds the same values and, without BatchNorm (whose batch
// statistics depend on each replica's share), continues like it.
BOOST_AUTO_TEST_CASE(a_checkpoint_of_2_replicas_restores_into_1_or_3_and_continues_alike) {
  for (const char* opt : {"sgd", "adam"})
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
