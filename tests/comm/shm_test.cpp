// The shared-memory communicator, N = 1..4 ranks as threads and as
// processes, every operation against a reference computed locally.
#include <boost/test/unit_test.hpp>

#include <dirent.h>
#include <unistd.h>

#include <chrono>
#include <cstring>

#include "comm/collective_check.hpp"
#include "comm/spawn.hpp"
#include "dtrain/comm/shm.hpp"
#include "test_util.hpp"

using namespace dtrain;
using namespace dtrain::testing;
using std::chrono::milliseconds;

namespace {

comm_factory shm_factory(int64_t slot_floats = 2 << 20) {
  return [slot_floats](int rank, int size, std::shared_ptr<comm::store> store, milliseconds timeout)
             -> result<std::unique_ptr<comm::communicator>> {
    auto c = comm::shm_communicator::create(rank, size, std::move(store), timeout, slot_floats);
    if (!c)
      return c.error();
    return std::unique_ptr<comm::communicator>(std::move(*c));
  };
}

int dev_shm_entries() {
  int count = 0;
  if (DIR* d = opendir("/dev/shm")) {
    while (dirent* e = readdir(d))
      count += std::strncmp(e->d_name, "dtrain-", 7) == 0;
    closedir(d);
  }
  return count;
}

} // namespace

BOOST_AUTO_TEST_SUITE(shm_communicator)

BOOST_AUTO_TEST_CASE(every_operation_matches_the_reference_for_1_to_4_thread_ranks) {
  for (int n = 1; n <= 4; ++n)
    check_all_operations(shm_factory(), n, rank_mode::threads, {0, 1, 100003});
}

BOOST_AUTO_TEST_CASE(every_operation_matches_the_reference_for_1_to_4_process_ranks) {
  for (int n = 1; n <= 4; ++n)
    check_all_operations(shm_factory(), n, rank_mode::processes, {0, 1, 100003});
}

BOOST_AUTO_TEST_CASE(pieces_larger_than_a_slot_are_split_correctly) {
  // Slots of 1000 floats: an odd 100003-value buffer crosses 101 pieces.
  check_all_operations(shm_factory(1000), 3, rank_mode::threads, {100003});
}

BOOST_AUTO_TEST_CASE(every_operation_on_64_mib_matches_the_reference) {
  check_all_operations(shm_factory(), 2, rank_mode::processes, {16 << 20});
}

BOOST_AUTO_TEST_CASE(all_reduce_of_64_mib_is_exact_and_identical_on_every_rank) {
  check_large_all_reduce(shm_factory(), 2, rank_mode::threads);
  check_large_all_reduce(shm_factory(), 2, rank_mode::processes);
  check_large_all_reduce(shm_factory(), 4, rank_mode::processes);
}

BOOST_AUTO_TEST_CASE(a_rank_that_never_arrives_gives_a_timeout_naming_it) {
  check_missing_rank(shm_factory(), rank_mode::threads);
  check_missing_rank(shm_factory(), rank_mode::processes);
}

BOOST_AUTO_TEST_CASE(a_dead_peer_process_is_noticed_before_the_timeout) {
  check_dead_peer(shm_factory());
}

BOOST_AUTO_TEST_CASE(abort_ends_a_waiting_operation_and_breaks_the_communicator) {
  check_abort(shm_factory());
}

BOOST_AUTO_TEST_CASE(no_segment_is_left_in_dev_shm) {
  int before = dev_shm_entries();
  check_all_operations(shm_factory(), 2, rank_mode::processes, {17});
  check_missing_rank(shm_factory(), rank_mode::processes);
  BOOST_TEST(dev_shm_entries() == before);
}

BOOST_AUTO_TEST_SUITE_END()
