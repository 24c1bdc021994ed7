// A user's plugin as the tests build it: one operator, plugin_linear (a
// linear regression on planted data, like the built-in linear_regression
// but written only against the public headers).
//
// Variants compiled from this file (tests/CMakeLists.txt):
//   DTRAIN_TEST_MISSING_SYMBOL  calls a function defined nowhere, so that
//                               dlopen(RTLD_NOW) refuses the library;
//   (an include directory with another dtrain/build_config.hpp first) the same
//                               plugin built against "dtrain 9.9.9".
// Every variant writes the file named by $DTRAIN_TEST_PLUGIN_MARKER from a
// static initializer: a test proves that a refused library never ran.
#include <cstdio>
#include <cstdlib>
#include <memory>

#include "dtrain/core/check.hpp"
#include "dtrain/data/synthetic.hpp"
#include "dtrain/nn/layers.hpp"
#include "dtrain/nn/linear.hpp"
#include "dtrain/nn/loss.hpp"
#include "dtrain/nn/model.hpp"
#include "dtrain/optim/factory.hpp"
#include "dtrain/plugin/plugin.hpp"

#ifdef DTRAIN_TEST_MISSING_SYMBOL
extern "C" int dtrain_test_symbol_defined_nowhere();
#endif

namespace {

const bool marker_written = [] {
  if (const char* path = std::getenv("DTRAIN_TEST_PLUGIN_MARKER"))
    if (std::FILE* f = std::fopen(path, "w")) {
      std::fputs("loaded\n", f);
      std::fclose(f);
    }
  return true;
}();

class plugin_linear final : public dtrain::train::training_operator {
public:
  dtrain::status setup(const dtrain::train::hyperparameters& hp,
                       dtrain::train::replica_context& ctx,
                       dtrain::train::operator_parts& parts) override {
    using namespace dtrain;
    DTRAIN_RETURN_IF_ERROR(hp.check_known({"samples", "features", "lr"}, "operator 'plugin_linear'"));
    data::linear_regression_options lo;
    DTRAIN_ASSIGN_OR_RETURN(lo.samples, hp.get_int("samples", 2048));
    DTRAIN_ASSIGN_OR_RETURN(lo.features, hp.get_int("features", 8));
    lo.planted = true;
    lo.seed = ctx.seed();
    DTRAIN_ASSIGN_OR_RETURN(auto set, data::make_linear_regression(lo));
    auto net = std::make_unique<nn::sequential>();
    net->add(std::make_unique<nn::linear>(lo.features, 1));
    DTRAIN_ASSIGN_OR_RETURN(parts.model,
                            nn::model::create(std::move(net), {lo.features, ctx.where(), ctx.seed()}));
    optim::optimizer_spec spec;
    spec.name = "sgd";
    DTRAIN_ASSIGN_OR_RETURN(double lr, hp.get_double("lr", 0.05));
    spec.lr = static_cast<float>(lr);
    DTRAIN_ASSIGN_OR_RETURN(parts.optimizer, optim::make_optimizer(spec));
    parts.loss = std::make_unique<nn::mse_loss>();
    parts.train_data = set;
    parts.validation_data = set;
    parts.classification = false;
    return status::ok();
  }
};

} // namespace

DTRAIN_PLUGIN(registrar) {
  (void)marker_written;
  registrar.add_operator("plugin_linear", [] {
#ifdef DTRAIN_TEST_MISSING_SYMBOL
    if (dtrain_test_symbol_defined_nowhere() != 0)
      return std::unique_ptr<dtrain::train::training_operator>();
#endif
    return std::unique_ptr<dtrain::train::training_operator>(std::make_unique<plugin_linear>());
  });
}
