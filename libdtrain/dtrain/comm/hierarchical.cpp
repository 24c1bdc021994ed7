#include "dtrain/comm/hierarchical.hpp"

#include <algorithm>
#include <cstring>

#include "dtrain/core/check.hpp"
#include "dtrain/tensor/ops.hpp"

namespace dtrain::comm {

hierarchical_communicator::hierarchical_communicator(int rank, int size, milliseconds timeout,
                                                     std::vector<int> host_of,
                                                     std::unique_ptr<communicator> local,
                                                     std::unique_ptr<communicator> leaders)
  : queued_communicator(rank, size, timeout),
    host_of_(std::move(host_of)),
    local_(std::move(local)),
    leaders_(std::move(leaders)) {}

hierarchical_communicator::~hierarchical_communicator() { shutdown(); }

void hierarchical_communicator::interrupt() {
  local_->abort("the hierarchical communicator was aborted");
  if (leaders_)
    leaders_->abort("the hierarchical communicator was aborted");
}

int hierarchical_communicator::local_index_of(int r) const {
  int index = 0;
  for (int q = 0; q < r; ++q)
    index += host_of_[q] == host_of_[r];
  return index;
}

status hierarchical_communicator::reduce(tensor buffer, reduce_op op) {
  reduce_op inner = op == reduce_op::average ? reduce_op::sum : op;
  DTRAIN_RETURN_IF_ERROR(local_->all_reduce(buffer, inner)->wait());
  if (leaders_)
    DTRAIN_RETURN_IF_ERROR(leaders_->all_reduce(buffer, inner)->wait());
  DTRAIN_RETURN_IF_ERROR(local_->broadcast(buffer, 0)->wait());
  if (op == reduce_op::average)
    ops::scale(buffer, 1.0f / static_cast<float>(size()));
  return status::ok();
}

status hierarchical_communicator::broadcast_from(tensor buffer, int root) {
  const int root_host = host_of_[root];
  if (host_of_[rank()] == root_host)
    DTRAIN_RETURN_IF_ERROR(local_->broadcast(buffer, local_index_of(root))->wait());
  if (leaders_)
    DTRAIN_RETURN_IF_ERROR(leaders_->broadcast(buffer, root_host)->wait());
  return local_->broadcast(buffer, 0)->wait();
}

status hierarchical_communicator::sync_barrier() {
  DTRAIN_RETURN_IF_ERROR(local_->barrier()->wait());
  if (leaders_)
    DTRAIN_RETURN_IF_ERROR(leaders_->barrier()->wait());
  return local_->barrier()->wait();
}

int hierarchical_communicator::widest_host() const {
  std::vector<int> count(host_of_.size(), 0);
  for (int h : host_of_)
    ++count[static_cast<size_t>(h)];
  return *std::max_element(count.begin(), count.end());
}

int hierarchical_communicator::host_count() const {
  return *std::max_element(host_of_.begin(), host_of_.end()) + 1;
}

// Moves bytes only, never through float arithmetic: each host's blocks go to
// its leader (shm gather), the leaders swap host blocks padded to the widest
// host (Gloo allgather or gather, byte copies), the result reaches the ranks
// that need it (shm broadcast), and blocks are put in rank order.
status hierarchical_communicator::gather_blocks(const request& r, bool everyone) {
  const int64_t n = r.input.numel();
  if (n == 0)
    return status::ok();  // every rank holds the same sizes: nothing moves
  const int my_host = host_of_[rank()], widest = widest_host();
  const int root_host = everyone ? -1 : host_of_[r.root];
  tensor host_blocks = tensor::zeros({widest * n});
  tensor everything = tensor::zeros({host_count() * widest * n});
  tensor mine = host_blocks.view(0, {local_->size() * n});
  DTRAIN_RETURN_IF_ERROR(local_->gather(r.input, mine, 0)->wait());
  if (leaders_) {
    auto between = everyone ? leaders_->all_gather(host_blocks, everything)
                            : leaders_->gather(host_blocks, everything, root_host);
    DTRAIN_RETURN_IF_ERROR(between->wait());
  }
  // The leader holds what its host needs; a root that is not a leader, or
  // every rank of an all_gather, gets it from the leader.
  const bool root_is_leader = !everyone && local_index_of(r.root) == 0;
  if (everyone || (my_host == root_host && !root_is_leader))
    DTRAIN_RETURN_IF_ERROR(local_->broadcast(everything, 0)->wait());
  if (everyone || rank() == r.root)
    place_in_rank_order(everything, r.output, n, widest);
  return status::ok();
}

void hierarchical_communicator::place_in_rank_order(const tensor& everything, tensor output,
                                                    int64_t n, int widest) const {
  // Host h's blocks sit at h * widest, in the order of their ranks.
  std::vector<int64_t> next(static_cast<size_t>(host_count()), 0);
  const size_t block_bytes = static_cast<size_t>(n) * sizeof(float);
  for (int q = 0; q < size(); ++q) {
    const int h = host_of_[q];
    const int64_t slot = h * int64_t{widest} + next[static_cast<size_t>(h)]++;
    std::memcpy(output.data() + q * n, everything.data() + slot * n, block_bytes);
  }
}

status hierarchical_communicator::run(const request& r) {
  switch (r.kind) {
    case op_kind::all_reduce: return reduce(r.input, r.op);
    case op_kind::broadcast: return broadcast_from(r.input, r.root);
    case op_kind::barrier: return sync_barrier();
    case op_kind::all_gather: return gather_blocks(r, true);
    case op_kind::gather: return gather_blocks(r, false);
    case op_kind::reduce_scatter: {
      tensor all = r.input.clone();
      DTRAIN_RETURN_IF_ERROR(reduce(all, r.op));
      const int64_t n = r.output.numel();
      const_cast<tensor&>(r.output).copy_from(all.view(rank() * n, {n}));
      return status::ok();
    }
  }
  return status(error_code::internal, "unknown operation");
}

} // namespace dtrain::comm
