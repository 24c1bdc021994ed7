// The store actor and its rendezvous::store adapter: parked requests stay
// bounded however often askers retry, old ones are answered at their
// deadline, and retrying is decided by error codes.
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <thread>

#include "dtrain/driver/cluster.hpp"
#include "dtrain/cluster/errors.hpp"
#include "dtrain/cluster/rendezvous_actor.hpp"

using namespace dtrain;
using namespace dtrain::actors;
using std::chrono::milliseconds;

namespace {

struct store_fixture {
  system_config config;
  caf::actor_system sys{config};
  rendezvous_actor store = spawn_store(sys);

  ~store_fixture() { caf::anon_send_exit(store, caf::exit_reason::user_shutdown); }

  int32_t parked() {
    caf::scoped_actor self{sys};
    int32_t out = -1;
    self->request(store, std::chrono::seconds(5), status_atom::value)
        .receive([&](int32_t n) { out = n; }, [](caf::error&) {});
    return out;
  }
};

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

} // namespace

BOOST_AUTO_TEST_SUITE(rendezvous_parking)

BOOST_FIXTURE_TEST_CASE(parked_requests_stay_bounded_over_many_retries, store_fixture) {
  actor_store client(sys, store);
  std::atomic<bool> done{false};
  // Two askers, each retrying about 15 times over 3 s.
  std::thread getter([&] {
    auto r = client.get("never", milliseconds(3000));
    BOOST_TEST(!r.is_ok());
    BOOST_TEST((r.error().code() == error_code::timeout));
    BOOST_TEST(r.error().message().find("'never'") != std::string::npos, r.error().message());
  });
  std::thread waiter([&] {
    auto s = client.wait({"a", "b"}, milliseconds(3000));
    BOOST_TEST((s.code() == error_code::timeout));
    done.store(true);
  });
  int32_t most = 0;
  while (!done.load()) {
    most = std::max(most, parked());
    std::this_thread::sleep_for(milliseconds(50));
  }
  getter.join();
  waiter.join();
  BOOST_TEST_MESSAGE("most parked at once: " << most);
  BOOST_TEST(most >= 1);  // the probe saw them
  BOOST_TEST(most <= 4);  // at most two per asker, not one per retry (about 30)
  std::this_thread::sleep_for(store_park_limit * 3);
  BOOST_TEST(parked() == 0);
}

BOOST_FIXTURE_TEST_CASE(a_parked_request_is_answered_with_a_timeout_at_its_deadline,
                        store_fixture) {
  caf::scoped_actor self{sys};
  auto start = std::chrono::steady_clock::now();
  status answer;
  self->request(store, std::chrono::seconds(30), caf::get_atom::value, std::string("missing"))
      .receive([&](std::vector<char>&) { answer = status::ok(); },
               [&](caf::error& e) { answer = from_caf(e, "get"); });
  double took = seconds_since(start);
  BOOST_TEST((answer.code() == error_code::timeout));
  BOOST_TEST(answer.message().find("'missing': not set yet") != std::string::npos,
             answer.message());
  BOOST_TEST(took < 5.0);  // the store's park limit (0.2 s), not the asker's 30 s
  BOOST_TEST(parked() == 0);
}

BOOST_FIXTURE_TEST_CASE(a_value_set_after_several_retries_is_still_delivered, store_fixture) {
  actor_store client(sys, store);
  std::thread setter([&] {
    std::this_thread::sleep_for(store_park_limit * 4);
    BOOST_TEST(client.set("late", rendezvous::bytes{'x'}, milliseconds(2000)).is_ok());
  });
  auto r = client.get("late", milliseconds(5000));
  setter.join();
  BOOST_REQUIRE_MESSAGE(r.is_ok(), r.error().to_string());
  BOOST_TEST((*r == rendezvous::bytes{'x'}));
  BOOST_TEST(client.wait({"late"}, milliseconds(1000)).is_ok());
}

BOOST_FIXTURE_TEST_CASE(a_store_that_is_gone_fails_at_once_instead_of_being_retried,
                        store_fixture) {
  actor_store client(sys, store);
  caf::anon_send_exit(store, caf::exit_reason::kill);
  std::this_thread::sleep_for(milliseconds(100));
  auto start = std::chrono::steady_clock::now();
  auto r = client.get("k", milliseconds(5000));
  BOOST_REQUIRE(!r.is_ok());
  BOOST_TEST((r.error().code() == error_code::aborted), r.error().to_string());
  BOOST_TEST(seconds_since(start) < 2.0);
}

BOOST_AUTO_TEST_SUITE_END()
