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
/// all_gather, gather and reduce_scatter are built on all_reduce (each rank
/// contributes its block into a zeroed buffer): correct and exact, but they
/// move size times the data of a native implementation; gradient sync only
/// uses all_reduce. Errors are the inner communicators' (they name the
/// backend, the rank and the peer).
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
  int local_index_of(int rank) const;

  std::vector<int> host_of_;
  std::unique_ptr<communicator> local_;
  std::unique_ptr<communicator> leaders_;
};

} // namespace dtrain::comm
