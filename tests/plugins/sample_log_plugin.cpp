// A plugin for the sample-accounting tests: operator sample_log trains a
// one-weight linear model on `samples` samples whose feature is their index,
// and appends the dataset indices of every batch it trains to a file of its
// own under `log_dir` (one line per step: "EPOCH id id ..."), so that a test
// can count, across every replica of every generation, how often each
// sample of each epoch was trained. A step counts once its gradient sync
// succeeded, which the operator learns when the next step begins or when
// validation runs (the test validates after every train()): the line is
// written then. A step whose sync failed (the group lost a replica) is
// never written: the replica goes (checkpoint-restart) or is told the step
// was abandoned (live recovery, step_abandoned()). `step_ms` slows each step so
// that a test can preempt an epoch half-way.
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <memory>
#include <string>
#include <thread>

#include "dtrain/core/check.hpp"
#include "dtrain/nn/layers.hpp"
#include "dtrain/nn/linear.hpp"
#include "dtrain/nn/loss.hpp"
#include "dtrain/nn/model.hpp"
#include "dtrain/optim/factory.hpp"
#include "dtrain/plugin/plugin.hpp"

namespace {

class sample_log final : public dtrain::train::training_operator {
public:
  ~sample_log() override {
    if (log_ != nullptr)
      std::fclose(log_);
  }

  dtrain::status setup(const dtrain::train::hyperparameters& hp,
                       dtrain::train::replica_context& ctx,
                       dtrain::train::operator_parts& parts) override {
    using namespace dtrain;
    DTRAIN_RETURN_IF_ERROR(
        hp.check_known({"samples", "log_dir", "step_ms"}, "operator 'sample_log'"));
    DTRAIN_ASSIGN_OR_RETURN(int64_t samples, hp.get_int("samples", 1000));
    DTRAIN_ASSIGN_OR_RETURN(std::string dir, hp.get_string("log_dir", ""));
    DTRAIN_ASSIGN_OR_RETURN(step_ms_, hp.get_int("step_ms", 0));
    const std::string path = dir + "/ids-" + std::to_string(::getpid()) + "-" +
                             std::to_string(ctx.rank()) + "-" + std::to_string(++instances_) +
                             ".txt";
    log_ = std::fopen(path.c_str(), "a");
    if (log_ == nullptr)
      return io_error("sample_log: cannot open " + path);
    tensor x = tensor::empty({samples, 1});
    for (int64_t i = 0; i < samples; ++i)
      x.data()[i] = static_cast<float>(i) / static_cast<float>(samples);
    DTRAIN_ASSIGN_OR_RETURN(auto set, data::tensor_dataset::create(x, tensor::zeros({samples}),
                                                                   "sample_log"));
    auto net = std::make_unique<nn::sequential>();
    net->add(std::make_unique<nn::linear>(1, 1));
    DTRAIN_ASSIGN_OR_RETURN(parts.model,
                            nn::model::create(std::move(net), {1, ctx.where(), ctx.seed()}));
    DTRAIN_ASSIGN_OR_RETURN(parts.optimizer, optim::make_optimizer({"sgd"}));
    parts.loss = std::make_unique<nn::mse_loss>();
    parts.train_data = set;
    parts.validation_data = set;
    parts.classification = false;
    return status::ok();
  }

  dtrain::result<dtrain::train::step_result> train_step(
      dtrain::train::step_context& ctx) override {
    commit_pending();  // the previous step's sync succeeded, or we would not be here
    pending_ = std::to_string(ctx.epoch);
    for (int64_t id : ctx.batch.samples)
      pending_ += " " + std::to_string(id);
    pending_ += "\n";
    if (step_ms_ > 0)
      std::this_thread::sleep_for(std::chrono::milliseconds(step_ms_));
    return dtrain::train::standard_train_step(ctx);
  }

  // Live recovery trains the failed step's batch again: it never counted.
  void step_abandoned() override { pending_.clear(); }

  dtrain::result<dtrain::train::step_result> validation_step(
      dtrain::train::step_context& ctx) override {
    commit_pending();
    return dtrain::train::training_operator::validation_step(ctx);
  }

private:
  void commit_pending() {
    if (pending_.empty())
      return;
    std::fputs(pending_.c_str(), log_);
    std::fflush(log_);
    pending_.clear();
  }

  static inline int instances_ = 0;
  std::string pending_;
  std::FILE* log_ = nullptr;
  int64_t step_ms_ = 0;
};

} // namespace

DTRAIN_PLUGIN(registrar) {
  registrar.add_operator("sample_log", [] {
    return std::unique_ptr<dtrain::train::training_operator>(std::make_unique<sample_log>());
  });
}
