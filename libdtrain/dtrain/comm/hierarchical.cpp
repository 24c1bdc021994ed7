#include "dtrain/comm/hierarchical.hpp"

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

status hierarchical_communicator::run(const request& r) {
  switch (r.kind) {
    case op_kind::all_reduce: return reduce(r.input, r.op);
    case op_kind::broadcast: return broadcast_from(r.input, r.root);
    case op_kind::barrier: return sync_barrier();
    case op_kind::all_gather:
    case op_kind::gather: {
      // Each rank's block lands in a zeroed buffer; a sum then assembles all.
      const int64_t n = r.input.numel();
      tensor all = tensor::zeros({n * size()});
      if (n > 0)
        std::memcpy(all.data() + rank() * n, r.input.data(), r.input.bytes());
      DTRAIN_RETURN_IF_ERROR(reduce(all, reduce_op::sum));
      if (r.kind == op_kind::all_gather || rank() == r.root)
        const_cast<tensor&>(r.output).copy_from(all);
      return status::ok();
    }
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
