// Several "hosts" on one machine (distinct host names): shared memory
// inside each, Gloo between their leaders, chosen by the factory.
#include <boost/test/unit_test.hpp>

#include "support/collective_check.hpp"
#include "dtrain/comm/factory.hpp"

using namespace dtrain;
using namespace dtrain::testing;
using std::chrono::milliseconds;

namespace {

// Ranks are spread over `hosts` hosts, round robin, so hosts hold
// non-contiguous ranks and unequal counts when size % hosts != 0.
comm_factory hierarchical_factory(int hosts) {
  return [hosts](int rank, int size, std::shared_ptr<rendezvous::store> store, milliseconds timeout)
             -> result<std::unique_ptr<comm::communicator>> {
    comm::group_options o;
    o.rank = rank;
    o.size = size;
    o.store = std::move(store);
    o.timeout = timeout;
    o.host = "host" + std::to_string(rank % hosts);
    return comm::make_communicator(o);
  };
}

} // namespace

BOOST_AUTO_TEST_SUITE(hierarchical_communicator)

BOOST_AUTO_TEST_CASE(auto_backend_is_hierarchical_across_hosts_and_shm_on_one) {
  auto store = std::make_shared<rendezvous::memory_store>();
  auto one = hierarchical_factory(1)(0, 1, store, milliseconds(5000));
  BOOST_REQUIRE(one.is_ok());
  BOOST_TEST(one.value()->backend() == "shm");
}

BOOST_AUTO_TEST_CASE(every_operation_matches_the_reference_over_two_hosts) {
  check_all_operations(hierarchical_factory(2), 2, rank_mode::threads, {0, 1, 100003}, false);
  check_all_operations(hierarchical_factory(2), 3, rank_mode::threads, {1, 100003}, false);
  check_all_operations(hierarchical_factory(2), 4, rank_mode::processes, {1, 100003}, false);
}

BOOST_AUTO_TEST_CASE(large_all_reduce_is_identical_on_every_rank_over_two_hosts) {
  check_large_all_reduce(hierarchical_factory(2), 4, rank_mode::processes, false);
}

BOOST_AUTO_TEST_CASE(a_rank_that_never_arrives_gives_a_timeout_naming_it) {
  check_missing_rank(hierarchical_factory(2), rank_mode::threads);
}

BOOST_AUTO_TEST_CASE(every_float_class_travels_bit_exact_through_all_gather_gather_and_broadcast) {
  // Signalling NaNs, -0, denormals, ...: bits, compared with memcmp.
  check_exact_bytes(hierarchical_factory(2), 3, rank_mode::threads);
  check_exact_bytes(hierarchical_factory(2), 3, rank_mode::processes);
  check_exact_bytes(hierarchical_factory(2), 4, rank_mode::processes);
}

BOOST_AUTO_TEST_SUITE_END()
