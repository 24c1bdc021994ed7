// The shared-memory communicator, N = 1..4 ranks as threads and as
// processes, every operation against a reference computed locally; the
// segment's size against a small /dev/shm (injected free space, and a real
// 16 MiB tmpfs in a mount namespace where the machine allows one).
#include <boost/test/unit_test.hpp>

#include <dirent.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cmath>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <thread>

#include "support/collective_check.hpp"
#include "support/spawn.hpp"
#include "dtrain/comm/shm.hpp"
#include "dtrain/core/check.hpp"
#include "support/test_util.hpp"

using namespace dtrain;
using namespace dtrain::testing;
using std::chrono::milliseconds;

namespace {

comm_factory shm_factory(comm::shm_options options = {}) {
  return [options](int rank, int size, std::shared_ptr<rendezvous::store> store, milliseconds timeout)
             -> result<std::unique_ptr<comm::communicator>> {
    auto c = comm::shm_communicator::create(rank, size, std::move(store), timeout, options);
    if (!c)
      return c.error();
    return std::unique_ptr<comm::communicator>(std::move(*c));
  };
}

comm::shm_options slots_of(int64_t floats) {
  comm::shm_options o;
  o.slot_floats = o.min_slot_floats = floats;
  return o;
}

// A /dev/shm that claims `bytes` free.
comm::shm_options free_space_of(uint64_t bytes) {
  comm::shm_options o;
  o.free_space = [bytes]() -> result<uint64_t> { return bytes; };
  return o;
}

// A segment name prefix no other test (or suite running beside) uses.
std::string own_prefix(const std::string& what) {
  static std::atomic<int> count{0};
  return "dtrain-test-" + what + "-" + std::to_string(getpid()) + "-" + std::to_string(count++);
}

// Entries of /dev/shm whose names start with `prefix`.
int segments_named(const std::string& prefix) {
  int count = 0;
  if (DIR* d = opendir("/dev/shm")) {
    while (dirent* e = readdir(d))
      count += std::strncmp(e->d_name, prefix.c_str(), prefix.size()) == 0;
    closedir(d);
  }
  return count;
}

// Forms an shm group of n thread ranks with `options` and checks exactness;
// every rank's slot size goes to `slots` (for the caller to inspect).
status exact_group(int n, const comm::shm_options& options, std::vector<int64_t>& slots) {
  group_stores stores(rank_mode::threads);
  slots.assign(static_cast<size_t>(n), 0);
  auto outcomes = run_ranks(n, rank_mode::threads, std::chrono::seconds(60), [&](int rank) {
    auto store = stores.for_rank();
    DTRAIN_ASSIGN_OR_RETURN(auto c, comm::shm_communicator::create(rank, n, store,
                                                                   milliseconds(20000), options));
    slots[static_cast<size_t>(rank)] = c->slot_floats();
    return exchange_exact_bytes(*c);
  });
  std::string failed = failures(outcomes);
  return failed.empty() ? status::ok() : status(error_code::internal, failed);
}

// Whether `p` lies in a mapping of a file under /dev/shm (/proc/self/maps).
bool in_dev_shm_mapping(const void* p) {
  FILE* maps = std::fopen("/proc/self/maps", "r");
  if (maps == nullptr)
    return false;
  const auto at = reinterpret_cast<uintptr_t>(p);
  char line[1024];
  bool found = false;
  while (!found && std::fgets(line, sizeof line, maps) != nullptr) {
    unsigned long begin = 0, end = 0;
    if (std::sscanf(line, "%lx-%lx", &begin, &end) == 2 && at >= begin && at < end)
      found = std::strstr(line, "/dev/shm/") != nullptr;
  }
  std::fclose(maps);
  return found;
}

// n thread ranks reduce ranges of their shared_buffer(): sums, averages and
// maxima equal the rank-order reference bit for bit on every rank; whether
// the buffer lies in a /dev/shm mapping goes to `shared` (every rank's).
status shared_buffer_group(int n, const comm::shm_options& options, std::vector<int>& shared) {
  group_stores stores(rank_mode::threads);
  shared.assign(static_cast<size_t>(n), -1);
  constexpr int64_t count = 1003;
  auto value = [](int rank, int64_t i) {
    return static_cast<float>(std::sin(0.37 * static_cast<double>(i) + rank)) * (rank + 1.5f);
  };
  auto outcomes = run_ranks(n, rank_mode::threads, std::chrono::seconds(60), [&](int rank) -> status {
    DTRAIN_ASSIGN_OR_RETURN(auto c, comm::shm_communicator::create(rank, n, stores.for_rank(),
                                                                   milliseconds(20000), options));
    DTRAIN_ASSIGN_OR_RETURN(tensor buf, c->shared_buffer(count));
    shared[static_cast<size_t>(rank)] = in_dev_shm_mapping(buf.data());
    for (int64_t i = 0; i < count; ++i)
      buf.data()[i] = value(rank, i);
    // [0, 100) summed, [100, 801) averaged, [801, count) the maximum.
    DTRAIN_RETURN_IF_ERROR(c->all_reduce(buf.view(0, {100}), comm::reduce_op::sum)->wait());
    DTRAIN_RETURN_IF_ERROR(c->all_reduce(buf.view(100, {701}), comm::reduce_op::average)->wait());
    DTRAIN_RETURN_IF_ERROR(c->all_reduce(buf.view(801, {count - 801}), comm::reduce_op::max)->wait());
    for (int64_t i = 0; i < count; ++i) {
      float want = value(0, i);
      for (int q = 1; q < n; ++q)
        want = i >= 801 ? std::max(want, value(q, i)) : want + value(q, i);
      if (i >= 100 && i < 801)
        want *= 1.0f / static_cast<float>(n);
      if (std::memcmp(&want, buf.data() + i, sizeof want) != 0)
        return status(error_code::internal, "rank " + std::to_string(rank) + " of " +
                                                std::to_string(n) + ": element " + std::to_string(i) +
                                                " is " + std::to_string(buf.data()[i]) + ", want " +
                                                std::to_string(want));
    }
    return status::ok();
  });
  std::string failed = failures(outcomes);
  return failed.empty() ? status::ok() : status(error_code::internal, failed);
}

// A fresh mount namespace whose /dev/shm is a tmpfs of `size` (this
// process only; it must be single-threaded, as a forked child is).
status private_dev_shm(const char* size) {
  if (unshare(CLONE_NEWNS) != 0)
    return unavailable(std::string("unshare(CLONE_NEWNS): ") + std::strerror(errno));
  // Private first, so that the tmpfs never shows in the parent namespace.
  if (mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0)
    return unavailable(std::string("making / private: ") + std::strerror(errno));
  if (mount("tmpfs", "/dev/shm", "tmpfs", 0, (std::string("size=") + size).c_str()) != 0)
    return unavailable(std::string("mounting a tmpfs on /dev/shm: ") + std::strerror(errno));
  return status::ok();
}

// Inside a 16 MiB /dev/shm: 3 ranks fall back from 8 MiB slots (a 64 MiB
// segment) and stay exact, also when statvfs is overruled by a claim of
// 1 GiB free (fallocate then decides); a smallest slot too large for the
// tmpfs is an error naming it; nothing is left behind.
status small_tmpfs_body() {
  DTRAIN_RETURN_IF_ERROR(private_dev_shm("16m"));
  std::vector<int64_t> slots;
  DTRAIN_RETURN_IF_ERROR(exact_group(3, {}, slots).with_context("statvfs sizing"));
  DTRAIN_RETURN_IF_ERROR(expect(slots[0] < comm::shm_options{}.slot_floats && slots[0] == slots[2],
                                "slot of " + std::to_string(slots[0]) + " floats in 16 MiB"));
  DTRAIN_RETURN_IF_ERROR(exact_group(3, free_space_of(uint64_t{1} << 30), slots)
                             .with_context("fallocate sizing"));
  auto store = std::make_shared<rendezvous::memory_store>();
  auto too_big = comm::shm_communicator::create(0, 3, store, milliseconds(1000), slots_of(1 << 20));
  DTRAIN_RETURN_IF_ERROR(expect(!too_big.is_ok() && too_big.error().message().find(
                                                        "/dev/shm") != std::string::npos,
                                "32 MiB in a 16 MiB tmpfs gave " + too_big.to_status().to_string()));
  return expect(segments_named("dtrain") == 0, "a segment was left in the small /dev/shm");
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
  check_all_operations(shm_factory(slots_of(1000)), 3, rank_mode::threads, {100003});
}

BOOST_AUTO_TEST_CASE(a_forced_small_slot_gives_exact_results_for_big_tensors) {
  // 16 KiB slots: a 16 MiB buffer crosses over a thousand pieces.
  check_all_operations(shm_factory(slots_of(4096)), 3, rank_mode::threads, {(4 << 20) + 3});
  check_exact_bytes(shm_factory(slots_of(4096)), 3, rank_mode::processes);
  check_large_all_reduce(shm_factory(slots_of(4096)), 2, rank_mode::processes);
}

BOOST_AUTO_TEST_CASE(every_operation_on_64_mib_matches_the_reference) {
  check_all_operations(shm_factory(), 2, rank_mode::processes, {16 << 20});
}

BOOST_AUTO_TEST_CASE(all_reduce_of_64_mib_is_exact_and_identical_on_every_rank) {
  check_large_all_reduce(shm_factory(), 2, rank_mode::threads);
  check_large_all_reduce(shm_factory(), 2, rank_mode::processes);
  check_large_all_reduce(shm_factory(), 4, rank_mode::processes);
}

BOOST_AUTO_TEST_CASE(every_float_class_travels_bit_exact_through_all_gather_gather_and_broadcast) {
  // Signalling NaNs, -0, denormals, ...: bits, compared with memcmp.
  check_exact_bytes(shm_factory(), 3, rank_mode::threads);
  check_exact_bytes(shm_factory(), 3, rank_mode::processes);
}

BOOST_AUTO_TEST_CASE(a_dev_shm_too_small_for_the_preferred_slot_falls_back_to_a_smaller_one) {
  // 3 ranks want 64 MiB; 20 MiB free leaves room for 2 MiB slots (16 MiB).
  std::vector<int64_t> slots;
  status s = exact_group(3, free_space_of(20 << 20), slots);
  BOOST_TEST(s.is_ok(), s.to_string());
  BOOST_TEST(slots == std::vector<int64_t>(3, 512 << 10));
}

BOOST_AUTO_TEST_CASE(a_dev_shm_too_small_for_the_smallest_slot_is_an_error_naming_both_sizes) {
  group_stores stores(rank_mode::threads);
  auto outcomes = run_ranks(2, rank_mode::threads, std::chrono::seconds(30), [&](int rank) {
    auto start = std::chrono::steady_clock::now();
    auto c = comm::shm_communicator::create(rank, 2, stores.for_rank(), milliseconds(10000),
                                            free_space_of(256 << 10));
    DTRAIN_RETURN_IF_ERROR(expect(!c.is_ok(), "a group formed in 256 KiB"));
    const std::string& m = c.error().message();
    for (const char* needle : {"/dev/shm", "needs at least 413696 bytes", "262144 bytes free",
                               "--shm-size", "backend gloo"})
      DTRAIN_RETURN_IF_ERROR(expect(m.find(needle) != std::string::npos,
                                    "'" + std::string(needle) + "' missing from: " + m));
    // Rank 1 learns it from rank 0 instead of waiting out its timeout.
    return expect(std::chrono::steady_clock::now() - start < milliseconds(5000),
                  "rank " + std::to_string(rank) + " waited for its timeout");
  });
  BOOST_TEST(failures(outcomes).empty(), failures(outcomes));
}

BOOST_AUTO_TEST_CASE(a_real_16_mib_dev_shm_gives_smaller_segments_or_an_error_never_sigbus) {
  auto outcomes = run_ranks(1, rank_mode::processes, std::chrono::seconds(120),
                            [](int) { return small_tmpfs_body(); });
  const status& s = outcomes[0].result;
  if (s.code() == error_code::unavailable) {
    BOOST_TEST_MESSAGE("skipped: this machine allows no mount namespace: " << s.message());
    return;
  }
  BOOST_TEST(failures(outcomes).empty(), failures(outcomes));
}

BOOST_AUTO_TEST_CASE(abort_ends_a_waiting_operation_and_breaks_the_communicator) {
  check_abort(shm_factory());
}

BOOST_AUTO_TEST_CASE(a_rank_that_never_arrives_gives_a_timeout_naming_it) {
  check_missing_rank(shm_factory(), rank_mode::threads);
  check_missing_rank(shm_factory(), rank_mode::processes);
}

BOOST_AUTO_TEST_CASE(a_dead_peer_process_is_noticed_before_the_timeout) {
  check_dead_peer(shm_factory());
}

// Only this test's segments are counted (by their name prefix), so suites
// running beside it do not matter. The prefix is seen while rank 0 waits
// for a rank that never comes, so the count cannot pass for want of a name.
BOOST_AUTO_TEST_CASE(a_shared_buffer_is_reduced_in_place_exactly_for_1_to_4_ranks) {
  for (int n = 1; n <= 4; ++n) {
    std::vector<int> shared;
    comm::shm_options o;
    o.name_prefix = own_prefix("shared");
    o.slot_floats = o.min_slot_floats = 256;  // N > 2 sums through the slot in pieces
    status s = shared_buffer_group(n, o, shared);
    BOOST_TEST(s.is_ok(), "N=" << n << ": " << s.to_string());
    for (int rank = 0; rank < n; ++rank)  // a group of one keeps an ordinary tensor
      BOOST_TEST(shared[static_cast<size_t>(rank)] == (n > 1 ? 1 : 0), "N=" << n << " rank " << rank);
    BOOST_TEST(segments_named(o.name_prefix) == 0);
  }
}

BOOST_AUTO_TEST_CASE(a_shared_buffer_that_does_not_fit_falls_back_to_ordinary_tensors_on_every_rank) {
  // Room for the slots but not for the shared buffer: every rank falls back
  // together (a rank on the in-place path with one on the slot path would
  // reduce garbage), and the results are as exact.
  comm::shm_options o;
  o.name_prefix = own_prefix("noroom");
  o.slot_floats = o.min_slot_floats = 1024;
  // Plenty of room when the group forms, none when the buffer is asked for.
  auto asked = std::make_shared<std::atomic<int>>(0);
  o.free_space = [asked]() -> result<uint64_t> {
    return asked->fetch_add(1) == 0 ? uint64_t{1} << 30 : 0;
  };
  std::vector<int> shared;
  status s = shared_buffer_group(3, o, shared);
  BOOST_TEST(s.is_ok(), s.to_string());
  BOOST_TEST((shared == std::vector<int>{0, 0, 0}));
  BOOST_TEST(segments_named(o.name_prefix) == 0);
}

BOOST_AUTO_TEST_CASE(no_segment_is_left_in_dev_shm) {
  comm::shm_options options;
  options.name_prefix = own_prefix("leak");
  std::atomic<bool> seen{false}, done{false};
  std::thread watcher([&] {
    while (!done.load() && !seen.load()) {
      seen.store(segments_named(options.name_prefix) > 0);
      std::this_thread::sleep_for(milliseconds(5));
    }
  });
  check_all_operations(shm_factory(options), 2, rank_mode::processes, {17});
  check_missing_rank(shm_factory(options), rank_mode::processes);
  done.store(true);
  watcher.join();
  BOOST_TEST(seen.load(), "no segment named " << options.name_prefix << "-* was ever seen");
  BOOST_TEST(segments_named(options.name_prefix) == 0);
}

// A process killed after creating its segment and before every rank had
// mapped it (a node killed during the rendezvous) leaves the segment named;
// the next group with that prefix removes it, and nothing of a live process.
BOOST_AUTO_TEST_CASE(a_segment_left_by_a_dead_creator_is_removed_by_the_next_group) {
  comm::shm_options options;
  options.name_prefix = own_prefix("orphan");
  pid_t dead = fork();
  if (dead == 0)
    _exit(0);
  BOOST_REQUIRE(dead > 0);
  waitpid(dead, nullptr, 0);
  const std::string orphan = "/dev/shm/" + options.name_prefix + "-" + std::to_string(dead) + "-1";
  const std::string live = "/dev/shm/" + options.name_prefix + "-" + std::to_string(getpid()) + "-1";
  write_file(orphan, "x");
  write_file(live, "x");
  BOOST_REQUIRE(segments_named(options.name_prefix) == 2);
  check_all_operations(shm_factory(options), 2, rank_mode::threads, {17});
  BOOST_TEST(segments_named(options.name_prefix) == 1);  // the live process's stays
  BOOST_TEST(read_file(live) == "x");
  std::remove(live.c_str());
}

BOOST_AUTO_TEST_SUITE_END()
