// The Gloo communicator over TCP on loopback: N = 1..4 ranks as threads and
// as processes through the conformance checks shared by the backends, every
// operation on 64 MiB buffers, and what timeouts and failures leave behind.
#include <boost/test/unit_test.hpp>

#include <arpa/inet.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "support/collective_check.hpp"
#include "support/spawn.hpp"
#include "dtrain/core/net.hpp"
#include "dtrain/comm/gloo.hpp"
#include "dtrain/rendezvous/store.hpp"
#include "dtrain/core/check.hpp"
#include "support/test_util.hpp"

using namespace dtrain;
using namespace dtrain::testing;
using std::chrono::milliseconds;
using clock_type = std::chrono::steady_clock;

namespace {

comm_factory gloo_factory() {
  return [](int rank, int size, std::shared_ptr<rendezvous::store> store, milliseconds timeout)
             -> result<std::unique_ptr<comm::communicator>> {
    auto c = comm::gloo_communicator::create(rank, size, std::move(store), timeout);
    if (!c)
      return c.error();
    return std::unique_ptr<comm::communicator>(std::move(*c));
  };
}

result<std::unique_ptr<comm::gloo_communicator>> join(int rank, int size,
                                                      std::shared_ptr<rendezvous::store> store,
                                                      milliseconds timeout) {
  return comm::gloo_communicator::create(rank, size, std::move(store), timeout);
}

// Whole numbers in [-1000, 1000]: sums of up to 4 of them are exact in float
// in any order, so ring reductions must match the reference bit for bit.
float whole_value(int rank, int64_t i) {
  auto h = static_cast<uint64_t>(i) * 2654435761u + static_cast<uint64_t>(rank) * 40503u;
  return static_cast<float>(static_cast<int>(h % 2001) - 1000);
}

float whole_reduced(int n, int64_t i, comm::reduce_op op) {
  return reference_reduce(n, i, op, whole_value);
}

tensor whole_filled(int rank, int64_t n) {
  tensor t = tensor::empty({n});
  for (int64_t i = 0; i < n; ++i)
    t.data()[i] = whole_value(rank, i);
  return t;
}

template <class Want>
status expect_values(const tensor& t, Want want, const std::string& what) {
  const float* p = t.data();
  for (int64_t i = 0; i < t.numel(); ++i) {
    float w = want(i);
    if (std::memcmp(&p[i], &w, sizeof w) != 0) {
      char text[128];
      std::snprintf(text, sizeof text, ": element %lld is %.9g, expected %.9g",
                    static_cast<long long>(i), static_cast<double>(p[i]),
                    static_cast<double>(w));
      return status(error_code::internal, what + text);
    }
  }
  return status::ok();
}

/// Every operation on `count` floats (all_reduce, broadcast) or `count`
/// floats in all (the gathers' outputs, reduce_scatter's input).
status check_every_operation(comm::communicator& c, int64_t count) {
  const int me = c.rank(), n = c.size();
  const int64_t per = count / n;
  for (auto op : {comm::reduce_op::sum, comm::reduce_op::average, comm::reduce_op::min,
                  comm::reduce_op::max}) {
    tensor buf = whole_filled(me, count);
    DTRAIN_RETURN_IF_ERROR(c.all_reduce(buf, op)->wait());
    DTRAIN_RETURN_IF_ERROR(expect_values(buf, [&](int64_t i) { return whole_reduced(n, i, op); },
                                         std::string("all_reduce ") + comm::to_string(op)));
  }
  {
    tensor buf = whole_filled(me, count);
    DTRAIN_RETURN_IF_ERROR(c.broadcast(buf, n - 1)->wait());
    DTRAIN_RETURN_IF_ERROR(
        expect_values(buf, [&](int64_t i) { return whole_value(n - 1, i); }, "broadcast"));
  }
  tensor in = whole_filled(me, per);
  auto gathered = [&](int64_t i) { return whole_value(static_cast<int>(i / per), i % per); };
  {
    tensor all = tensor::empty({n * per});
    DTRAIN_RETURN_IF_ERROR(c.all_gather(in, all)->wait());
    DTRAIN_RETURN_IF_ERROR(expect_values(all, gathered, "all_gather"));
  }
  {
    tensor all = tensor::full({n * per}, 7.0f);
    DTRAIN_RETURN_IF_ERROR(c.gather(in, all, 0)->wait());
    if (me == 0)
      DTRAIN_RETURN_IF_ERROR(expect_values(all, gathered, "gather"));
  }
  {
    tensor scatter_in = whole_filled(me, n * per), out = tensor::empty({per});
    DTRAIN_RETURN_IF_ERROR(c.reduce_scatter(scatter_in, out, comm::reduce_op::max)->wait());
    DTRAIN_RETURN_IF_ERROR(expect_values(
        out, [&](int64_t i) { return whole_reduced(n, me * per + i, comm::reduce_op::max); },
        "reduce_scatter max"));
  }
  return c.barrier()->wait();
}

void check_64_mib(int n, rank_mode mode) {
  group_stores stores(mode);
  auto outcomes = run_ranks(n, mode, std::chrono::seconds(120), [&](int rank) -> status {
    DTRAIN_ASSIGN_OR_RETURN(auto c, join(rank, n, stores.for_rank(), milliseconds(30000)));
    return check_every_operation(*c, int64_t{16} << 20);
  });
  std::string failed = failures(outcomes);
  BOOST_TEST(failed.empty(), "64 MiB, N=" << n << " " << to_string(mode) << ":\n" << failed);
}

milliseconds since(clock_type::time_point start) {
  return std::chrono::duration_cast<milliseconds>(clock_type::now() - start);
}

// Long enough that "at once" (half of it) leaves room for a loaded machine.
const milliseconds kShortTimeout(1000);

/// An all_reduce no peer joins: a timeout at the deadline, then a broken
/// communicator that fails the next operation at once.
status time_out_alone(comm::communicator& c) {
  tensor buf = tensor::full({1000}, 1.0f);
  auto start = clock_type::now();
  status outcome = c.all_reduce(buf, comm::reduce_op::sum)->wait();
  auto elapsed = since(start);
  DTRAIN_RETURN_IF_ERROR(expect(outcome.code() == error_code::timeout,
                                "expected a timeout, got " + outcome.to_string()));
  DTRAIN_RETURN_IF_ERROR(
      expect(elapsed >= kShortTimeout - milliseconds(50) &&
                 elapsed < kShortTimeout + milliseconds(2000),
             "timed out after " + std::to_string(elapsed.count()) + " ms"));
  DTRAIN_RETURN_IF_ERROR(expect(c.broken(), "not broken after a timeout"));
  start = clock_type::now();
  status later = c.barrier()->wait();
  return expect(later.code() == error_code::aborted && since(start) < kShortTimeout / 2,
                "a later barrier gave " + later.to_string());
}

/// The next operation of a rank whose peer 0 gave up fails at once and
/// names rank 0.
status fail_after_the_peer_gave_up(comm::communicator& c) {
  auto start = clock_type::now();
  status outcome = c.barrier()->wait();
  DTRAIN_RETURN_IF_ERROR(expect(!outcome.is_ok() && since(start) < kShortTimeout / 2,
                                "the barrier gave " + outcome.to_string() + " after " +
                                    std::to_string(since(start).count()) + " ms"));
  DTRAIN_RETURN_IF_ERROR(expect(outcome.message().find("rank 0 reported") != std::string::npos,
                                "the error does not name rank 0: " + outcome.to_string()));
  return expect(c.broken(), "not broken after the peer's failure");
}

// Whether a Gloo address record holds an IPv4 sockaddr for `ip` (family,
// any port, then the address, as sockaddr_in lays them out).
bool holds_ipv4(const rendezvous::bytes& record, const std::string& ip) {
  in_addr want{};
  if (inet_pton(AF_INET, ip.c_str(), &want) != 1)
    return false;
  const sa_family_t family = AF_INET;
  for (size_t i = 0; i + 8 <= record.size(); ++i)
    if (std::memcmp(record.data() + i, &family, sizeof family) == 0 &&
        std::memcmp(record.data() + i + 4, &want, 4) == 0)
      return true;
  return false;
}

// Two thread ranks bound to `bind_address`: they form a group and reduce,
// and each published `expect_ip`, never loopback, through the store.
void check_bound_and_published(const std::string& bind_address, const std::string& expect_ip) {
  group_stores stores(rank_mode::threads);
  auto outcomes = run_ranks(2, rank_mode::threads, std::chrono::seconds(60), [&](int rank) {
    auto store = stores.for_rank();
    DTRAIN_ASSIGN_OR_RETURN(auto c, comm::gloo_communicator::create(rank, 2, store,
                                                                    milliseconds(10000),
                                                                    bind_address));
    tensor buf = tensor::full({10}, 1.0f);
    DTRAIN_RETURN_IF_ERROR(c->all_reduce(buf, comm::reduce_op::sum)->wait());
    DTRAIN_RETURN_IF_ERROR(expect(buf.to_vector()[0] == 2.0f, "the all_reduce is wrong"));
    DTRAIN_ASSIGN_OR_RETURN(auto record, store->get("gloo/" + std::to_string(rank), milliseconds(1000)));
    DTRAIN_RETURN_IF_ERROR(expect(holds_ipv4(record, expect_ip),
                                  "rank " + std::to_string(rank) + " did not publish " + expect_ip));
    return expect(!holds_ipv4(record, "127.0.0.1"), "rank " + std::to_string(rank) +
                                                         " published loopback");
  });
  BOOST_TEST(failures(outcomes).empty(), "'" << bind_address << "':\n" << failures(outcomes));
}

} // namespace

BOOST_AUTO_TEST_SUITE(gloo_communicator)

BOOST_AUTO_TEST_CASE(every_operation_matches_the_reference_for_1_to_4_thread_ranks) {
  for (int n = 1; n <= 4; ++n)
    check_all_operations(gloo_factory(), n, rank_mode::threads, {0, 1, 100003}, false);
}

BOOST_AUTO_TEST_CASE(every_operation_matches_the_reference_for_1_to_4_process_ranks) {
  for (int n = 1; n <= 4; ++n)
    check_all_operations(gloo_factory(), n, rank_mode::processes, {0, 1, 100003}, false);
}

BOOST_AUTO_TEST_CASE(every_operation_on_64_mib_is_exact) {
  check_64_mib(2, rank_mode::threads);
  check_64_mib(2, rank_mode::processes);
  check_64_mib(4, rank_mode::processes);
}

BOOST_AUTO_TEST_CASE(all_reduce_of_64_mib_leaves_the_same_bits_on_every_rank) {
  check_large_all_reduce(gloo_factory(), 4, rank_mode::processes, false);
}

BOOST_AUTO_TEST_CASE(operations_issued_back_to_back_do_not_mix) {
  group_stores stores(rank_mode::threads);
  const int n = 3, ops = 24;
  auto outcomes = run_ranks(n, rank_mode::threads, std::chrono::seconds(60), [&](int rank) {
    DTRAIN_ASSIGN_OR_RETURN(auto c, join(rank, n, stores.for_rank(), milliseconds(20000)));
    std::vector<tensor> bufs;
    std::vector<comm::work_ptr> works;
    for (int k = 0; k < ops; ++k) {  // all queued before any is waited for
      bufs.push_back(tensor::full({1000 + k}, static_cast<float>(k * (rank + 1))));
      works.push_back(c->all_reduce(bufs.back(), comm::reduce_op::sum));
    }
    for (int k = 0; k < ops; ++k) {
      DTRAIN_RETURN_IF_ERROR(works[k]->wait());
      float want = static_cast<float>(k * (1 + 2 + 3));
      DTRAIN_RETURN_IF_ERROR(expect_values(bufs[k], [&](int64_t) { return want; },
                                           "all_reduce " + std::to_string(k)));
    }
    return status::ok();
  });
  BOOST_TEST(failures(outcomes).empty(), failures(outcomes));
}

BOOST_AUTO_TEST_CASE(a_rank_that_never_arrives_gives_a_timeout_naming_it) {
  check_missing_rank(gloo_factory(), rank_mode::threads);
  check_missing_rank(gloo_factory(), rank_mode::processes);
}

BOOST_AUTO_TEST_CASE(a_dead_peer_process_is_noticed_before_the_timeout) {
  check_dead_peer(gloo_factory());
}

BOOST_AUTO_TEST_CASE(abort_ends_a_waiting_operation_and_breaks_the_communicator) {
  check_abort(gloo_factory());
}

// Rank 1 skips an all_reduce: rank 0 times out at its deadline, is broken,
// and fails later operations at once; rank 1's next operation fails at once
// too, naming rank 0 and why it gave up.
BOOST_AUTO_TEST_CASE(a_timeout_breaks_the_group_and_peers_learn_who_gave_up) {
  for (auto mode : {rank_mode::threads, rank_mode::processes}) {
    group_stores stores(mode);
    auto outcomes = run_ranks(2, mode, std::chrono::seconds(30), [&](int rank) -> status {
      auto store = stores.for_rank();
      DTRAIN_ASSIGN_OR_RETURN(auto c, join(rank, 2, store, kShortTimeout));
      DTRAIN_RETURN_IF_ERROR(c->barrier()->wait());
      if (rank == 0) {
        DTRAIN_RETURN_IF_ERROR(time_out_alone(*c));
        return store->set("rank0-done", rendezvous::to_bytes("yes"));
      }
      DTRAIN_RETURN_IF_ERROR(store->wait({"rank0-done"}, milliseconds(10000)));
      return fail_after_the_peer_gave_up(*c);
    });
    BOOST_TEST(failures(outcomes).empty(), to_string(mode) << ":\n" << failures(outcomes));
  }
}

// Ranks 1 and 2 wait in an all_reduce that rank 0 never joins; rank 0's
// abort ends theirs long before their 10 s deadline, and names rank 0.
BOOST_AUTO_TEST_CASE(abort_on_one_rank_ends_the_operations_its_peers_wait_in) {
  group_stores stores(rank_mode::processes);
  auto outcomes = run_ranks(3, rank_mode::processes, std::chrono::seconds(30), [&](int rank) {
    auto store = stores.for_rank();
    DTRAIN_ASSIGN_OR_RETURN(auto c, join(rank, 3, store, milliseconds(10000)));
    DTRAIN_RETURN_IF_ERROR(c->barrier()->wait());
    if (rank == 0) {
      std::this_thread::sleep_for(milliseconds(300));
      c->abort("the operator stopped the job");
      return status::ok();
    }
    tensor buf = tensor::full({100000}, 1.0f);
    auto start = clock_type::now();
    status outcome = c->all_reduce(buf, comm::reduce_op::sum)->wait();
    DTRAIN_RETURN_IF_ERROR(expect(!outcome.is_ok() && since(start) < milliseconds(5000),
                                  "the all_reduce gave " + outcome.to_string() + " after " +
                                      std::to_string(since(start).count()) + " ms"));
    return expect(outcome.message().find("the operator stopped the job") != std::string::npos,
                  "the error does not carry rank 0's reason: " + outcome.to_string());
  });
  BOOST_TEST(failures(outcomes).empty(), failures(outcomes));
}

BOOST_AUTO_TEST_CASE(bad_arguments_are_named_and_cuda_buffers_are_not_supported) {
  auto store = std::make_shared<rendezvous::memory_store>();
  auto bad_rank = join(2, 2, store, milliseconds(100));
  BOOST_TEST_REQUIRE(!bad_rank.is_ok());
  BOOST_TEST((bad_rank.error().code() == error_code::invalid_argument));
  BOOST_TEST(bad_rank.error().message().find("rank 2") != std::string::npos);
  auto no_store = join(0, 1, nullptr, milliseconds(100));
  BOOST_TEST_REQUIRE(!no_store.is_ok());
  BOOST_TEST(no_store.error().message().find("store") != std::string::npos);
  auto bad_address =
      comm::gloo_communicator::create(0, 2, store, milliseconds(200), "no.such.host.invalid");
  BOOST_TEST_REQUIRE(!bad_address.is_ok());
  BOOST_TEST(bad_address.error().message().find("no.such.host.invalid") != std::string::npos);

  auto solo = join(0, 1, store, milliseconds(1000));
  BOOST_TEST_REQUIRE(solo.is_ok(), solo.error().to_string());
  BOOST_TEST(solo.value()->backend() == "gloo");
  BOOST_TEST(solo.value()->supports(device::cpu()));
  BOOST_TEST(!solo.value()->supports(device::cuda(0)));
}

BOOST_AUTO_TEST_CASE(every_float_class_travels_bit_exact_through_all_gather_gather_and_broadcast) {
  // Signalling NaNs, -0, denormals, ...: bits, compared with memcmp.
  check_exact_bytes(gloo_factory(), 3, rank_mode::threads);
  check_exact_bytes(gloo_factory(), 3, rank_mode::processes);
}

BOOST_AUTO_TEST_CASE(a_non_loopback_bind_address_is_bound_and_published_and_auto_picks_one) {
  const std::string mine = net::resolve_bind_address("auto");
  BOOST_TEST(net::resolve_bind_address("") == mine);
  BOOST_TEST(net::resolve_bind_address("10.1.2.3") == "10.1.2.3");
  if (mine == "127.0.0.1") {
    BOOST_TEST_MESSAGE("skipped: this machine has no non-loopback IPv4 interface");
    return;
  }
  check_bound_and_published(mine, mine);
  check_bound_and_published("auto", mine);
  check_bound_and_published("", mine);
}

BOOST_AUTO_TEST_CASE(a_bind_address_not_of_this_machine_is_an_error_naming_it) {
  // 198.51.100.0/24 is TEST-NET-2: never an address of this machine.
  auto store = std::make_shared<rendezvous::memory_store>();
  auto start = clock_type::now();
  auto c = comm::gloo_communicator::create(0, 2, store, milliseconds(5000), "198.51.100.7");
  BOOST_TEST_REQUIRE(!c.is_ok());
  BOOST_TEST((c.error().code() == error_code::io_error));
  const std::string& m = c.error().message();
  BOOST_TEST(m.find("'198.51.100.7'") != std::string::npos, m);
  BOOST_TEST(m.find("does not belong to this machine") != std::string::npos, m);
  BOOST_TEST(since(start).count() < 2000, "refused after " << since(start).count() << " ms");
}

BOOST_AUTO_TEST_SUITE_END()
