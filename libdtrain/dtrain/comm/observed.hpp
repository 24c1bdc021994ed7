#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>

#include "dtrain/comm/communicator.hpp"

namespace dtrain::comm {

/// A communicator that forwards every call to another and tells
/// `on_all_reduce` (when set) the element count of each all_reduce as it is
/// issued, before forwarding it: how tests and benchmarks time the gradient
/// sync's buckets against backward. shared_buffer() is forwarded too, so a
/// shared memory backend still reduces gradients in place. Thread-safe as
/// the inner communicator is; on_all_reduce is called on the issuing thread.
class observed_communicator final : public communicator {
public:
  observed_communicator(std::unique_ptr<communicator> inner,
                        std::function<void(int64_t numel)> on_all_reduce)
    : inner_(std::move(inner)), on_all_reduce_(std::move(on_all_reduce)) {}

  int rank() const override { return inner_->rank(); }
  int size() const override { return inner_->size(); }
  std::string backend() const override { return inner_->backend(); }
  bool supports(device where) const override { return inner_->supports(where); }
  work_ptr all_reduce(tensor buffer, reduce_op op) override {
    if (on_all_reduce_)
      on_all_reduce_(buffer.numel());
    return inner_->all_reduce(std::move(buffer), op);
  }
  work_ptr broadcast(tensor buffer, int root) override {
    return inner_->broadcast(std::move(buffer), root);
  }
  work_ptr all_gather(tensor input, tensor output) override {
    return inner_->all_gather(std::move(input), std::move(output));
  }
  work_ptr gather(tensor input, tensor output, int root) override {
    return inner_->gather(std::move(input), std::move(output), root);
  }
  work_ptr reduce_scatter(tensor input, tensor output, reduce_op op) override {
    return inner_->reduce_scatter(std::move(input), std::move(output), op);
  }
  work_ptr barrier() override { return inner_->barrier(); }
  result<tensor> shared_buffer(int64_t count) override { return inner_->shared_buffer(count); }
  void abort(const std::string& why) override { inner_->abort(why); }
  bool broken() const override { return inner_->broken(); }
  status broken_reason() const override { return inner_->broken_reason(); }

private:
  std::unique_ptr<communicator> inner_;
  std::function<void(int64_t)> on_all_reduce_;
};

} // namespace dtrain::comm
