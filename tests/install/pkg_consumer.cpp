// A program built with nothing but `pkg-config --cflags --libs dtrain`: it
// calls into each of dtrain's three libraries and into CAF.
#include <cstdio>

#include "dtrain/cluster/errors.hpp"
#include "dtrain/cluster/messages.hpp"
#include "dtrain/build_config.hpp"
#include "dtrain/serialization/capnp_checkpoint.hpp"

int main() {
  caf::actor_system_config cfg;
  dtrain::actors::register_types(cfg);
  auto codec = dtrain::serialization::make_capnp_codec();
  auto back = dtrain::actors::from_caf(dtrain::actors::to_caf(dtrain::invalid_argument("x")), "");
  std::printf("dtrain %s: %s, codec %s\n", DTRAIN_VERSION, back.to_string().c_str(),
              codec ? "made" : "missing");
  return codec && back.code() == dtrain::error_code::invalid_argument ? 0 : 1;
}
