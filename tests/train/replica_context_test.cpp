// The replica context's byte collectives over a hierarchical group of two
// "hosts" (the path rank-to-chief metadata such as checkpoint CRCs takes
// between machines): random byte strings, many made of signalling-NaN and
// -0 patterns, come back exactly from all_gather, gather and broadcast.
#include <boost/test/unit_test.hpp>

#include <chrono>
#include <cstring>
#include <string>
#include <vector>

#include "support/collective_check.hpp"
#include "support/spawn.hpp"
#include "dtrain/comm/factory.hpp"
#include "dtrain/core/check.hpp"
#include "dtrain/core/random.hpp"
#include "dtrain/train/replica.hpp"

using namespace dtrain;
using namespace dtrain::testing;
using std::chrono::milliseconds;

namespace {

// Rank `rank` of a group spread round robin over two hosts.
result<std::unique_ptr<train::comm_replica_context>> make_context(
    int rank, int n, std::shared_ptr<rendezvous::store> store) {
  comm::group_options go;
  go.rank = rank;
  go.size = n;
  go.store = std::move(store);
  go.host = "host" + std::to_string(rank % 2);
  go.timeout = milliseconds(20000);
  DTRAIN_ASSIGN_OR_RETURN(auto c, comm::make_communicator(go));
  if (c->backend() != "hierarchical")
    return status(error_code::internal, "expected a hierarchical group, got " + c->backend());
  train::comm_replica_context::placement where;
  where.local_rank = rank / 2;
  where.node_rank = rank % 2;
  return std::make_unique<train::comm_replica_context>(std::move(c), where, nullptr);
}

// Value `k` of rank `rank`: a length that is not always a multiple of 4,
// and bytes that are random, or 4-byte groups of signalling NaNs and -0.
train::bytes value_of(int rank, int k) {
  static const size_t lengths[] = {0, 1, 3, 4, 5, 7, 8, 13, 1000, 4099};
  const size_t length = lengths[static_cast<size_t>(k) % std::size(lengths)] + static_cast<size_t>(rank);
  static const uint32_t nasty[] = {0x7f800001, 0xff800123, 0x80000000, 0x7fbfffff, 0x00000001};
  train::bytes out(length);
  rng draw(static_cast<uint64_t>(rank) * 1000 + static_cast<uint64_t>(k));
  for (size_t i = 0; i < length; i += 4) {
    uint32_t word = k % 2 == 0 ? static_cast<uint32_t>(draw.next())
                               : nasty[draw.below(std::size(nasty))];
    std::memcpy(out.data() + i, &word, std::min<size_t>(4, length - i));
  }
  return out;
}

status exchange_bytes(train::replica_context& ctx, int k) {
  const int me = ctx.rank(), n = ctx.world_size();
  const std::string at = " (value " + std::to_string(k) + ")";
  DTRAIN_ASSIGN_OR_RETURN(auto all, ctx.all_gather(value_of(me, k)));
  for (int q = 0; q < n; ++q)
    DTRAIN_RETURN_IF_ERROR(expect(all.at(static_cast<size_t>(q)) == value_of(q, k),
                                  "all_gather: rank " + std::to_string(q) + "'s bytes changed" + at));
  for (int root = 0; root < n; ++root) {
    DTRAIN_ASSIGN_OR_RETURN(auto gathered, ctx.gather(value_of(me, k), root));
    DTRAIN_RETURN_IF_ERROR(expect(gathered.size() == (me == root ? size_t(n) : 0u),
                                  "gather to " + std::to_string(root) + ": " +
                                      std::to_string(gathered.size()) + " values" + at));
    for (int q = 0; me == root && q < n; ++q)
      DTRAIN_RETURN_IF_ERROR(expect(gathered[static_cast<size_t>(q)] == value_of(q, k),
                                    "gather: rank " + std::to_string(q) + "'s bytes changed" + at));
    DTRAIN_ASSIGN_OR_RETURN(auto b, ctx.broadcast(value_of(me, k), root));
    DTRAIN_RETURN_IF_ERROR(expect(b == value_of(root, k), "broadcast from rank " +
                                                              std::to_string(root) + " changed" + at));
  }
  return status::ok();
}

} // namespace

BOOST_AUTO_TEST_SUITE(replica_context)

BOOST_AUTO_TEST_CASE(byte_collectives_return_every_byte_exactly_over_two_hosts) {
  for (auto mode : {rank_mode::threads, rank_mode::processes}) {
    group_stores stores(mode);
    auto outcomes = run_ranks(3, mode, std::chrono::seconds(120), [&](int rank) -> status {
      DTRAIN_ASSIGN_OR_RETURN(auto ctx, make_context(rank, 3, stores.for_rank()));
      for (int k = 0; k < 20; ++k)
        DTRAIN_RETURN_IF_ERROR(exchange_bytes(*ctx, k));
      return status::ok();
    });
    BOOST_TEST(failures(outcomes).empty(), to_string(mode) << ":\n" << failures(outcomes));
  }
}

BOOST_AUTO_TEST_CASE(a_value_over_the_limit_on_one_rank_fails_every_rank_naming_it) {
  group_stores stores(rank_mode::threads);
  auto outcomes = run_ranks(3, rank_mode::threads, std::chrono::seconds(60), [&](int rank) -> status {
    DTRAIN_ASSIGN_OR_RETURN(auto ctx, make_context(rank, 3, stores.for_rank()));
    const size_t big = train::comm_replica_context::max_value_bytes + 1;
    auto huge = ctx->all_gather(train::bytes(rank == 1 ? big : 1, 'x'));
    DTRAIN_RETURN_IF_ERROR(expect(!huge.is_ok() && huge.error().message().find("rank 1") !=
                                                       std::string::npos,
                                  "an oversized value gave " + huge.to_status().to_string()));
    // The group is still usable afterwards: nobody was left in a collective.
    return exchange_bytes(*ctx, 3);
  });
  BOOST_TEST(failures(outcomes).empty(), failures(outcomes));
}

BOOST_AUTO_TEST_SUITE_END()
