#pragma once

// What the multi-process tests ask of a trainer and its cluster, once:
// training to an epoch count, and the head's view as `dtrain status` sees it.
#include <boost/test/unit_test.hpp>

#include <chrono>
#include <cstdint>
#include <utility>

#include "dtrain/driver/trainer.hpp"

namespace dtrain::testing {

/// Trains until the replicas report `epochs` done (by their epoch count:
/// a recovery may redo one); the final validation accuracy.
inline double train_to_end(actors::trainer& t, int64_t epochs) {
  for (int64_t done = 0; done < epochs;) {
    auto m = t.train();
    BOOST_REQUIRE_MESSAGE(m.is_ok(), m.error().to_string());
    done = m->epoch;
  }
  auto v = t.validate();
  BOOST_REQUIRE_MESSAGE(v.is_ok(), v.error().to_string());
  return v->accuracy;
}

/// The head's view of the cluster, asked as `dtrain status` asks it (an
/// empty one, logged, when the head does not answer within 5 s).
inline actors::cluster_status status_of(actors::cluster& c) {
  caf::scoped_actor self{c.system()};
  actors::cluster_status out;
  self->request(c.head(), std::chrono::seconds(5), actors::status_atom::value, c.session())
      .receive([&](actors::cluster_status& s) { out = std::move(s); },
               [&](caf::error& e) { BOOST_TEST_MESSAGE("status: " << caf::to_string(e)); });
  return out;
}

} // namespace dtrain::testing
