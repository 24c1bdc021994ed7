// What plugin/loader.cpp links against from the training stack, which the
// plugin_tag harness never reaches (it reads tags; it loads no library and
// makes no operator): each aborts if called, so that the harness links
// without libdtrain's tensors, models and collectives.
#include <cstdio>
#include <cstdlib>

#include "dtrain/train/operator.hpp"

namespace dtrain::train {

namespace {
[[noreturn]] void unreachable(const char* what) {
  std::fprintf(stderr, "fuzz stub: %s called: not part of the harness\n", what);
  std::abort();
}
} // namespace

// training_operator's key function: its vtable and typeinfo come with it.
result<step_result> training_operator::train_step(step_context&) { unreachable("train_step"); }
result<step_result> training_operator::validation_step(step_context&) {
  unreachable("validation_step");
}
result<std::unique_ptr<training_operator>> make_operator(const std::string&) {
  unreachable("make_operator");
}

} // namespace dtrain::train
