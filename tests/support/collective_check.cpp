#include "support/collective_check.hpp"

#include <boost/test/unit_test.hpp>

#include <unistd.h>

#include <atomic>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <thread>

#include "dtrain/rendezvous/store.hpp"
#include "dtrain/core/check.hpp"
#include "dtrain/core/hash.hpp"
#include "dtrain/core/random.hpp"
#include "support/test_util.hpp"

namespace dtrain::testing {

using std::chrono::milliseconds;
using clock_type = std::chrono::steady_clock;

group_stores::group_stores(rank_mode mode) {
  static std::atomic<int> groups{0};
  prefix_ = "group" + std::to_string(getpid()) + "-" + std::to_string(groups++);
  if (mode == rank_mode::threads)
    shared_ = std::make_shared<rendezvous::memory_store>();
}

std::shared_ptr<rendezvous::store> group_stores::for_rank() const {
  std::shared_ptr<rendezvous::store> base = shared_;
  if (!base)
    base = std::shared_ptr<rendezvous::store>(rendezvous::file_store::open(dir_.path()).value());
  return std::make_shared<rendezvous::prefix_store>(prefix_, base);
}

float test_value(int rank, int64_t i) {
  return 2.0f * uniform01(0xc0ffee + static_cast<uint64_t>(rank), static_cast<uint64_t>(i)) -
         1.0f;
}

float reference_reduce(int n, int64_t i, comm::reduce_op op, float (*value)(int, int64_t)) {
  float acc = value(0, i);
  for (int q = 1; q < n; ++q) {
    float v = value(q, i);
    acc = op == comm::reduce_op::min ? std::min(acc, v)
          : op == comm::reduce_op::max ? std::max(acc, v)
                                       : acc + v;
  }
  return op == comm::reduce_op::average ? acc * (1.0f / static_cast<float>(n)) : acc;
}

namespace {

float reduce_ref(int n, int64_t i, comm::reduce_op op) {
  return reference_reduce(n, i, op, test_value);
}

bool same(float got, float want, bool exact) {
  if (exact)
    return std::memcmp(&got, &want, sizeof got) == 0;
  return std::fabs(got - want) <= 1e-5f * std::max(1.0f, std::fabs(want));
}

status compare(const tensor& t, const std::function<float(int64_t)>& want, bool exact,
               const std::string& what) {
  const float* p = t.data();
  for (int64_t i = 0; i < t.numel(); ++i)
    if (!same(p[i], want(i), exact))
    {
      char text[128];
      std::snprintf(text, sizeof text, ": element %lld is %.9g, expected %.9g",
                    static_cast<long long>(i), static_cast<double>(p[i]),
                    static_cast<double>(want(i)));
      return status(error_code::internal, what + text);
    }
  return status::ok();
}

tensor filled(int rank, int64_t n, int64_t offset = 0) {
  tensor t = tensor::empty({n});
  for (int64_t i = 0; i < n; ++i)
    t.data()[i] = test_value(rank, offset + i);
  return t;
}

status run_one_size(comm::communicator& c, int64_t n, bool exact) {
  const int me = c.rank(), size = c.size();
  const std::string at = " (n=" + std::to_string(n) + ")";
  for (auto op : {comm::reduce_op::sum, comm::reduce_op::average, comm::reduce_op::min,
                  comm::reduce_op::max}) {
    tensor buf = filled(me, n);
    DTRAIN_RETURN_IF_ERROR(c.all_reduce(buf, op)->wait());
    DTRAIN_RETURN_IF_ERROR(compare(buf, [&](int64_t i) { return reduce_ref(size, i, op); },
                                   exact, std::string("all_reduce ") + comm::to_string(op) + at));
  }
  tensor b = filled(me, n);
  DTRAIN_RETURN_IF_ERROR(c.broadcast(b, size - 1)->wait());
  DTRAIN_RETURN_IF_ERROR(compare(b, [&](int64_t i) { return test_value(size - 1, i); }, true,
                                 "broadcast" + at));
  tensor in = filled(me, n), all = tensor::empty({size * n});
  DTRAIN_RETURN_IF_ERROR(c.all_gather(in, all)->wait());
  DTRAIN_RETURN_IF_ERROR(compare(all, [&](int64_t i) { return test_value(int(i / std::max<int64_t>(n, 1)), i % std::max<int64_t>(n, 1)); },
                                 true, "all_gather" + at));
  tensor gathered = tensor::full({size * n}, 7.0f);
  DTRAIN_RETURN_IF_ERROR(c.gather(in, gathered, 0)->wait());
  if (me == 0)
    DTRAIN_RETURN_IF_ERROR(compare(gathered, [&](int64_t i) { return test_value(int(i / std::max<int64_t>(n, 1)), i % std::max<int64_t>(n, 1)); },
                                   true, "gather" + at));
  tensor scatter_in = filled(me, size * n), scatter_out = tensor::empty({n});
  DTRAIN_RETURN_IF_ERROR(c.reduce_scatter(scatter_in, scatter_out, comm::reduce_op::sum)->wait());
  DTRAIN_RETURN_IF_ERROR(compare(scatter_out,
                                 [&](int64_t i) { return reduce_ref(size, me * n + i, comm::reduce_op::sum); },
                                 exact, "reduce_scatter" + at));
  // In place, as ZeRO issues them (NCCL's convention): the output is this
  // rank's chunk of the input, the input this rank's part of the output.
  for (auto op : {comm::reduce_op::sum, comm::reduce_op::average}) {
    tensor whole = filled(me, size * n);
    DTRAIN_RETURN_IF_ERROR(c.reduce_scatter(whole, whole.view(me * n, {n}), op)->wait());
    DTRAIN_RETURN_IF_ERROR(compare(whole.view(me * n, {n}),
                                   [&](int64_t i) { return reduce_ref(size, me * n + i, op); },
                                   exact, std::string("in-place reduce_scatter ") +
                                              comm::to_string(op) + at));
  }
  tensor gathered_in_place = tensor::full({size * n}, 3.0f);
  gathered_in_place.view(me * n, {n}).copy_from(in);
  DTRAIN_RETURN_IF_ERROR(
      c.all_gather(gathered_in_place.view(me * n, {n}), gathered_in_place)->wait());
  DTRAIN_RETURN_IF_ERROR(compare(gathered_in_place, [&](int64_t i) { return test_value(int(i / std::max<int64_t>(n, 1)), i % std::max<int64_t>(n, 1)); },
                                 true, "in-place all_gather" + at));
  return c.barrier()->wait();
}

void require_all_ok(const std::vector<rank_outcome>& outcomes, const std::string& what) {
  std::string failed = failures(outcomes);
  BOOST_TEST(failed.empty(), what << ":\n" << failed);
}

} // namespace

namespace {

// The classes every exact collective must carry, then each sign and exponent
// with mantissas 0, 1, the quiet bit, and a random one.
std::vector<uint32_t> make_pattern_table() {
  std::vector<uint32_t> t = {
      0x00000000, 0x80000000,              // +0, -0
      0x00000001, 0x807fffff, 0x00400000,  // denormals
      0x00800000, 0x80800000,              // min normal
      0x7f7fffff, 0xff7fffff,              // max normal
      0x7f800000, 0xff800000,              // +-inf
      0x7fc00000, 0xffc00000, 0x7fc00001, 0x7fffffff, 0xffffffff, 0xffd5a5a5,  // quiet NaNs
      0x7f800001, 0xff800123, 0x7fbfffff, 0xffbfffff, 0x7f8a5a5a,  // signalling NaNs
      0x3f800000, 0xbf800000};
  for (uint32_t sign_exponent = 0; sign_exponent < 512; ++sign_exponent)
    for (uint32_t mantissa : {0u, 1u, 0x400000u,
                              static_cast<uint32_t>(hash64(0x5eed, sign_exponent)) & 0x7fffffu})
      t.push_back(sign_exponent << 23 | mantissa);
  return t;
}

const std::vector<uint32_t>& pattern_table() {
  static const std::vector<uint32_t> table = make_pattern_table();
  return table;
}

// Fills a tensor with bits, never through a float value (which might quiet
// a signalling NaN on the way).
tensor pattern_tensor(int rank, int64_t n) {
  tensor t = tensor::empty({n});
  for (int64_t i = 0; i < n; ++i) {
    uint32_t bits = exact_pattern(rank, i);
    std::memcpy(t.data() + i, &bits, sizeof bits);
  }
  return t;
}

// `got` holds, from element `at`, the patterns of rank `rank`, bit for bit.
status expect_patterns(const tensor& got, int64_t at, int rank, int64_t n,
                       const std::string& what) {
  tensor want = pattern_tensor(rank, n);
  if (std::memcmp(got.data() + at, want.data(), want.bytes()) == 0)
    return status::ok();
  for (int64_t i = 0; i < n; ++i) {
    uint32_t g, w;
    std::memcpy(&g, got.data() + at + i, 4);
    std::memcpy(&w, want.data() + i, 4);
    if (g != w) {
      char text[160];
      std::snprintf(text, sizeof text, ": rank %d's element %lld arrived as 0x%08x, sent as 0x%08x",
                    rank, static_cast<long long>(i), g, w);
      return status(error_code::corrupt_data, what + text);
    }
  }
  return status(error_code::internal, what + ": memcmp and the element loop disagree");
}

} // namespace

uint32_t exact_pattern(int rank, int64_t i) {
  const auto& table = pattern_table();
  const auto t = static_cast<int64_t>(table.size());
  if (i < t)  // every rank sends the whole table, rotated by its rank
    return table[static_cast<size_t>((i + 37 * rank) % t)];
  return static_cast<uint32_t>(hash64(0xb175 + static_cast<uint64_t>(rank), static_cast<uint64_t>(i)));
}

status exchange_exact_bytes(comm::communicator& c) {
  const int me = c.rank(), size = c.size();
  const int64_t n = exact_pattern_count();
  tensor in = pattern_tensor(me, n);
  tensor all = tensor::zeros({size * n});
  DTRAIN_RETURN_IF_ERROR(c.all_gather(in, all)->wait());
  for (int q = 0; q < size; ++q)
    DTRAIN_RETURN_IF_ERROR(expect_patterns(all, q * n, q, n, "all_gather"));
  for (int root = 0; root < size; ++root) {
    const std::string at = " (root " + std::to_string(root) + ")";
    tensor gathered = tensor::zeros({size * n});
    DTRAIN_RETURN_IF_ERROR(c.gather(in, gathered, root)->wait());
    for (int q = 0; me == root && q < size; ++q)
      DTRAIN_RETURN_IF_ERROR(expect_patterns(gathered, q * n, q, n, "gather" + at));
    tensor b = pattern_tensor(me, n);
    DTRAIN_RETURN_IF_ERROR(c.broadcast(b, root)->wait());
    DTRAIN_RETURN_IF_ERROR(expect_patterns(b, 0, root, n, "broadcast" + at));
  }
  return c.barrier()->wait();
}

int64_t exact_pattern_count() { return static_cast<int64_t>(pattern_table().size()) + 4099; }

void check_exact_bytes(const comm_factory& make, int n, rank_mode mode) {
  group_stores stores(mode);
  auto outcomes = run_ranks(n, mode, std::chrono::seconds(120), [&](int rank) -> status {
    DTRAIN_ASSIGN_OR_RETURN(auto c, make(rank, n, stores.for_rank(), milliseconds(20000)));
    return exchange_exact_bytes(*c);
  });
  require_all_ok(outcomes, "exact bytes, N=" + std::to_string(n) + " " + to_string(mode));
}

void check_all_operations(const comm_factory& make, int n, rank_mode mode,
                          const std::vector<int64_t>& sizes, bool exact) {
  group_stores stores(mode);
  auto outcomes = run_ranks(n, mode, std::chrono::seconds(120), [&](int rank) -> status {
    DTRAIN_ASSIGN_OR_RETURN(auto c, make(rank, n, stores.for_rank(), milliseconds(20000)));
    for (int64_t size : sizes)
      DTRAIN_RETURN_IF_ERROR(run_one_size(*c, size, exact));
    return status::ok();
  });
  require_all_ok(outcomes, "N=" + std::to_string(n) + " " + to_string(mode));
}

void check_large_all_reduce(const comm_factory& make, int n, rank_mode mode, bool exact) {
  group_stores stores(mode);
  const int64_t count = 16 << 20;  // 64 MiB of floats
  auto outcomes = run_ranks(n, mode, std::chrono::seconds(120), [&](int rank) -> status {
    auto store = stores.for_rank();
    DTRAIN_ASSIGN_OR_RETURN(auto c, make(rank, n, store, milliseconds(30000)));
    tensor buf = filled(rank, count);
    DTRAIN_RETURN_IF_ERROR(c->all_reduce(buf, comm::reduce_op::sum)->wait());
    DTRAIN_RETURN_IF_ERROR(compare(buf, [&](int64_t i) { return reduce_ref(n, i, comm::reduce_op::sum); },
                                   exact, "64 MiB all_reduce"));
    // Every rank must hold the same bits: compare a hash through the store.
    const uint64_t h = hash::fnv1a(buf.data(), static_cast<size_t>(count) * sizeof(float));
    DTRAIN_RETURN_IF_ERROR(store->set("hash/" + std::to_string(rank), comm::to_bytes(std::to_string(h))));
    DTRAIN_ASSIGN_OR_RETURN(auto first, store->get("hash/0", milliseconds(30000)));
    return expect(comm::to_string(first) == std::to_string(h), "rank " + std::to_string(rank) +
                                                                   " holds other bits than rank 0");
  });
  require_all_ok(outcomes, "64 MiB N=" + std::to_string(n) + " " + to_string(mode));
}

void check_missing_rank(const comm_factory& make, rank_mode mode) {
  group_stores stores(mode);
  const milliseconds timeout(1500);
  auto outcomes = run_ranks(3, mode, std::chrono::seconds(30), [&](int rank) -> status {
    if (rank == 2)
      return status::ok();  // never arrives
    auto start = clock_type::now();
    auto formed = make(rank, 3, stores.for_rank(), timeout);
    status outcome = formed.is_ok() ? formed.value()->barrier()->wait() : formed.error();
    auto elapsed = std::chrono::duration_cast<milliseconds>(clock_type::now() - start);
    DTRAIN_RETURN_IF_ERROR(expect(!outcome.is_ok(), "the group formed without rank 2"));
    DTRAIN_RETURN_IF_ERROR(expect(outcome.code() == error_code::timeout,
                                  "expected a timeout, got " + outcome.to_string()));
    DTRAIN_RETURN_IF_ERROR(expect(outcome.message().find("rank 2") != std::string::npos,
                                  "the error does not name rank 2: " + outcome.to_string()));
    return expect(elapsed < timeout + milliseconds(3000),
                  "took " + std::to_string(elapsed.count()) + " ms");
  });
  require_all_ok(outcomes, std::string("missing rank, ") + to_string(mode));
}

void check_dead_peer(const comm_factory& make) {
  group_stores stores(rank_mode::processes);
  auto outcomes = run_ranks(2, rank_mode::processes, std::chrono::seconds(30), [&](int rank) -> status {
    DTRAIN_ASSIGN_OR_RETURN(auto c, make(rank, 2, stores.for_rank(), milliseconds(10000)));
    DTRAIN_RETURN_IF_ERROR(c->barrier()->wait());
    if (rank == 1)
      _exit(0);  // dies without a word, communicator and all
    std::this_thread::sleep_for(milliseconds(100));
    auto start = clock_type::now();
    tensor buf = filled(0, 1000);
    status outcome = c->all_reduce(buf, comm::reduce_op::sum)->wait();
    auto elapsed = std::chrono::duration_cast<milliseconds>(clock_type::now() - start);
    DTRAIN_RETURN_IF_ERROR(expect(!outcome.is_ok(), "all_reduce with a dead peer succeeded"));
    DTRAIN_RETURN_IF_ERROR(expect(c->broken(), "the communicator is not broken"));
    return expect(elapsed < milliseconds(5000),  // of a 10 s timeout
                  "noticed after " + std::to_string(elapsed.count()) + " ms: " + outcome.to_string());
  });
  require_all_ok(outcomes, "dead peer");
}

void check_abort(const comm_factory& make) {
  group_stores stores(rank_mode::threads);
  auto outcomes = run_ranks(2, rank_mode::threads, std::chrono::seconds(30), [&](int rank) -> status {
    DTRAIN_ASSIGN_OR_RETURN(auto c, make(rank, 2, stores.for_rank(), milliseconds(10000)));
    DTRAIN_RETURN_IF_ERROR(c->barrier()->wait());
    // After the failure both ranks form a fresh group under a new prefix.
    auto reform = [&]() -> status {
      auto fresh = std::make_shared<rendezvous::prefix_store>("retry", stores.for_rank());
      DTRAIN_ASSIGN_OR_RETURN(auto again, make(rank, 2, fresh, milliseconds(10000)));
      tensor buf = filled(rank, 100);
      DTRAIN_RETURN_IF_ERROR(again->all_reduce(buf, comm::reduce_op::sum)->wait());
      return compare(buf, [](int64_t i) { return reduce_ref(2, i, comm::reduce_op::sum); },
                     false, "all_reduce in the re-formed group");
    };
    if (rank == 1) {
      std::this_thread::sleep_for(milliseconds(1500));  // never joins the all_reduce
      return reform();
    }
    auto start = clock_type::now();
    tensor buf = filled(0, 1000);
    auto w = c->all_reduce(buf, comm::reduce_op::sum);
    milliseconds abort_took{0};
    std::thread aborter([&] {
      std::this_thread::sleep_for(milliseconds(200));
      auto called = clock_type::now();
      c->abort("test abort");
      abort_took = std::chrono::duration_cast<milliseconds>(clock_type::now() - called);
    });
    status outcome = w->wait();
    aborter.join();
    DTRAIN_RETURN_IF_ERROR(expect(abort_took < milliseconds(100),
                                  "abort() blocked for " + std::to_string(abort_took.count()) +
                                      " ms"));
    auto elapsed = std::chrono::duration_cast<milliseconds>(clock_type::now() - start);
    DTRAIN_RETURN_IF_ERROR(expect(outcome.code() == error_code::aborted,
                                  "expected aborted, got " + outcome.to_string()));
    DTRAIN_RETURN_IF_ERROR(expect(elapsed < milliseconds(5000),  // of a 10 s timeout
                                  "abort took " + std::to_string(elapsed.count()) + " ms"));
    status later = c->barrier()->wait();
    DTRAIN_RETURN_IF_ERROR(expect(later.code() == error_code::aborted,
                                  "a later op gave " + later.to_string()));
    DTRAIN_RETURN_IF_ERROR(expect(later.message().find("test abort") != std::string::npos,
                                  "the later error does not carry the cause: " + later.to_string()));
    return reform();
  });
  require_all_ok(outcomes, "abort");
}

} // namespace dtrain::testing
