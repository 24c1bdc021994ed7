#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <vector>

#include "support/spawn.hpp"
#include "dtrain/comm/communicator.hpp"
#include "support/test_util.hpp"

/// Conformance checks every communicator backend runs: each operation
/// against a reference each rank computes locally, timeouts, dead peers and
/// abort. They use Boost.Test assertions on the outcomes (in the test
/// process), never inside rank bodies.
namespace dtrain::testing {

using comm_factory = std::function<result<std::unique_ptr<comm::communicator>>(
    int rank, int size, std::shared_ptr<rendezvous::store> store, std::chrono::milliseconds timeout)>;

/// Stores for the ranks of one group: threads share a memory_store,
/// processes each open a file_store in a temporary directory (made before
/// the fork, removed with this object); every group gets its own prefix.
class group_stores {
public:
  explicit group_stores(rank_mode mode);
  std::shared_ptr<rendezvous::store> for_rank() const;

private:
  temp_dir dir_;
  std::string prefix_;
  std::shared_ptr<rendezvous::store> shared_;
};

/// The value rank `rank` holds at index i in every check: in [-1, 1).
float test_value(int rank, int64_t i);

/// The rank-order reduction of value(q, i) over ranks q < n, as the
/// backends must compute it (average: the sum times 1/n).
float reference_reduce(int n, int64_t i, comm::reduce_op op, float (*value)(int, int64_t));

/// all_reduce (sum, average, min, max), broadcast, all_gather, gather,
/// reduce_scatter and barrier on buffers of each size. exact: results must
/// equal a rank-order reference bit for bit (else within 1e-5 relative).
void check_all_operations(const comm_factory& make, int n, rank_mode mode,
                          const std::vector<int64_t>& sizes, bool exact = true);
/// The 32-bit pattern rank `rank` sends at index i in check_exact_bytes:
/// every float class (+-0, denormals, +-inf, quiet NaNs with payloads,
/// signalling NaNs such as 0x7f800001 and 0xff800123, max and min normals),
/// every sign and exponent with several mantissas, then random patterns.
uint32_t exact_pattern(int rank, int64_t i);
/// How many patterns each rank sends (covers the whole table of classes).
int64_t exact_pattern_count();
/// all_gather, gather (to every root) and broadcast (from every root) of
/// exact_pattern() buffers: every element arrives bit for bit (memcmp).
/// The rank body of check_exact_bytes, for tests that form groups their way.
status exchange_exact_bytes(comm::communicator& c);
void check_exact_bytes(const comm_factory& make, int n, rank_mode mode);
/// A 64 MiB all_reduce sum: correct, and bitwise identical on every rank.
void check_large_all_reduce(const comm_factory& make, int n, rank_mode mode,
                            bool exact = true);
/// Three ranks, rank 2 never arrives: ranks 0 and 1 fail with a timeout that
/// names rank 2, within the timeout plus three seconds (a loaded machine).
void check_missing_rank(const comm_factory& make, rank_mode mode);
/// Two processes, rank 1 exits after forming the group: rank 0's next
/// operation fails well before its 10 s timeout (within 5 s).
void check_dead_peer(const comm_factory& make);
/// abort() from another thread returns within 100 ms and ends an operation
/// waiting on a peer that is not coming, later operations fail at once with error_code::aborted, and
/// a new group forms under a new prefix.
void check_abort(const comm_factory& make);

} // namespace dtrain::testing
