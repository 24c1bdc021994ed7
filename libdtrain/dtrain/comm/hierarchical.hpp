#pragma once

#include <memory>
#include <vector>

#include "dtrain/comm/communicator.hpp"

namespace dtrain::comm {

/// Ranks on several hosts: shared memory inside each host, and a second
/// communicator (Gloo) between one leader per host (the host's lowest rank).
///
/// all_reduce: reduce inside the host, all-reduce the host results between
/// leaders, broadcast inside the host; broadcast: inside the root's host,
/// between leaders, inside every host; barrier: host, leaders, host.
/// all_gather and gather move bytes, never floats through arithmetic, so
/// they are bit-exact (communicator's contract): each host's blocks are
/// gathered by its leader (shm), the leaders exchange their host's blocks,
/// padded to the widest host, with Gloo's allgather or gather, the leader
/// broadcasts the result inside the host where it is needed (every host for
/// all_gather, the root's for gather when the root is not its leader), and
/// the blocks are put in rank order (a host's ranks need not be
/// contiguous). reduce_scatter is an all_reduce of a copy of the input of
/// which this rank keeps its chunk (size times the traffic of a native one;
/// gradient sync only uses all_reduce). Errors are the inner communicators'
/// (they name the backend, the rank and the peer).
class hierarchical_communicator final : public queued_communicator {
public:
  /// host_of[r]: the host index of rank r; local: this host's shm group;
  /// leaders: the leaders' group (null on non-leaders).
  hierarchical_communicator(int rank, int size, milliseconds timeout, std::vector<int> host_of,
                            std::unique_ptr<communicator> local,
                            std::unique_ptr<communicator> leaders);
  ~hierarchical_communicator() override;

  std::string backend() const override { return "hierarchical"; }
  bool supports(device where) const override { return where.is_cpu(); }

protected:
  status run(const request& r) override;
  void interrupt() override;

private:
  status reduce(tensor buffer, reduce_op op);
  status broadcast_from(tensor buffer, int root);
  status sync_barrier();
  status gather_blocks(const request& r, bool everyone);
  void place_in_rank_order(const tensor& everything, tensor output, int64_t n,
                           int widest) const;
  int local_index_of(int rank) const;
  int host_count() const;
  /// The most ranks any host holds.
  int widest_host() const;

  std::vector<int> host_of_;
  std::unique_ptr<communicator> local_;
  std::unique_ptr<communicator> leaders_;
};

} // namespace dtrain::comm
