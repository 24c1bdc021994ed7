#include "dtrain/train/fashion_mnist.hpp"

#include "dtrain/core/check.hpp"
#include "dtrain/data/idx.hpp"

namespace dtrain::train {

namespace {

result<std::unique_ptr<data::loader>> make_loader(std::shared_ptr<data::tensor_dataset> set,
                                                  const classifier_run_options& options,
                                                  bool shuffle) {
  DTRAIN_ASSIGN_OR_RETURN(auto sampler,
                          data::shard_sampler::create({set->size(), 1, 0, shuffle, false,
                                                       options.seed}));
  data::loader_options lo;
  lo.batch_size = options.batch_size;
  lo.prefetch = options.prefetch;
  lo.where = options.where;
  return data::loader::create(std::move(set), std::move(sampler), lo);
}

} // namespace

result<epoch_report> run_fashion_mnist(const classifier_run_options& options,
                                       const std::function<void(const epoch_report&)>& on_epoch) {
  if (options.epochs < 1 || options.batch_size < 1)
    return invalid_argument("epochs and batch_size must be >= 1");
  std::string dir = options.data_dir.empty() ? data::default_fashion_mnist_dir()
                                             : options.data_dir;
  DTRAIN_ASSIGN_OR_RETURN(auto train_set, data::load_fashion_mnist(dir, data::split::train));
  DTRAIN_ASSIGN_OR_RETURN(auto test_set, data::load_fashion_mnist(dir, data::split::test));
  DTRAIN_ASSIGN_OR_RETURN(auto train_loader, make_loader(train_set, options, true));
  DTRAIN_ASSIGN_OR_RETURN(auto test_loader, make_loader(test_set, options, false));

  nn::model_options mo{options.model.inputs, options.where, options.seed};
  mo.compute = options.compute;
  DTRAIN_ASSIGN_OR_RETURN(auto model, nn::model::create(nn::make_mlp(options.model), mo));
  loss_scaler scaler(options.loss_scaling, options.compute == precision::fp16);
  loop_options train_options;
  train_options.scaler = &scaler;
  DTRAIN_ASSIGN_OR_RETURN(auto opt, optim::make_optimizer(options.optimizer));
  DTRAIN_ASSIGN_OR_RETURN(auto schedule, optim::make_schedule(options.schedule,
                                                              options.optimizer.lr,
                                                              options.epochs));
  nn::cross_entropy_loss loss;
  epoch_report report;
  for (int64_t epoch = 0; epoch < options.epochs; ++epoch) {
    report.epoch = epoch + 1;
    report.lr = schedule->lr(epoch);
    train_loader->begin_epoch(epoch);
    DTRAIN_ASSIGN_OR_RETURN(report.train, train_epoch(*model, loss, *opt, *train_loader,
                                                      report.lr, train_options));
    test_loader->begin_epoch(0);
    DTRAIN_ASSIGN_OR_RETURN(report.test, evaluate(*model, loss, *test_loader, {}));
    if (on_epoch)
      on_epoch(report);
  }
  return report;
}

} // namespace dtrain::train
