// The replica's side of asynchronous checkpoints (async_checkpoint.hpp):
// the hooks train_epoch() calls and the snapshot of the replica's state.
#include <cstring>

#include "dtrain/core/check.hpp"
#include "dtrain/train/replica.hpp"

namespace dtrain::train {

status replica_runner::async_checkpoint_step() {
  if (!options_.async_checkpoint.enabled())
    return status::ok();
  if (!async_) {
    if (!options_.codec)
      return unavailable("replica " + std::to_string(ctx_->rank()) +
                         ": asynchronous checkpoints need a checkpoint codec "
                         "(replica_options.codec)");
    async_ = std::make_unique<async_checkpointer>(options_.async_checkpoint, options_.codec,
                                                  options_.smaller_is_better);
  }
  return async_->at_step(*ctx_, parts_.optimizer->steps(),
                         [this](checkpoint_snapshot& s) { return take_snapshot(s); });
}

status replica_runner::finish_async_checkpoint() {
  return async_ ? async_->finish(*ctx_) : status::ok();
}

void replica_runner::abandon_async_checkpoint() {
  if (async_)
    async_->abandon();
}

namespace {

// Reuses s's buffer `i` when it has the same name and size (so that the
// pages are touched once, not at every save), else allocates it.
checkpoint_snapshot::buffer& snapshot_buffer(checkpoint_snapshot& s, size_t i,
                                             const std::string& name, int64_t count) {
  if (s.buffers.size() <= i)
    s.buffers.resize(i + 1);
  checkpoint_snapshot::buffer& b = s.buffers[i];
  if (b.name != name || b.held != count || !b.data) {
    b.name = name;
    b.count = count;
    b.held = count;
    // Not value-initialized: only this rank's slice is ever written, and
    // the pages of the rest are never touched.
    b.data.reset(new float[static_cast<size_t>(std::max<int64_t>(count, 1))]);
  }
  return b;
}

} // namespace

status replica_runner::take_snapshot(checkpoint_snapshot& s) {
  const int rank = ctx_->rank(), world = ctx_->world_size();
  // The loader's position after this step; the epoch's last step makes the
  // checkpoint the end of the epoch (restored, the next epoch begins).
  int64_t epoch = epoch_, position = train_loader_->position();
  if (position >= train_loader_->epoch_end()) {
    ++epoch;
    position = 0;
  }
  s.manifest = describe_checkpoint(epoch, position, {});
  s.rank = rank;
  s.world_size = world;
  auto buffers = checkpoint_buffers();
  s.buffers.resize(buffers.size());
  for (size_t i = 0; i < buffers.size(); ++i) {
    const std::string& name = buffers[i].name;
    tensor source = *buffers[i].data;  // shares the storage: no copy yet
    if (name == "model_buffers" && world > 1) {
      // Each replica moved its own running statistics since the epoch
      // began; the checkpoint holds their average (what the epoch's end
      // would hold), taken on a copy so that training is not changed.
      source = source.clone();
      DTRAIN_RETURN_IF_ERROR(
          ctx_->communicator()
              .all_reduce(source, comm::reduce_op::average)
              ->wait()
              .with_context("replica " + std::to_string(rank) +
                            ": averaging the model's buffers for a checkpoint"));
    }
    const int64_t count = source.numel();
    checkpoint_snapshot::buffer& b = snapshot_buffer(s, i, name, count);
    b.count = buffers[i].count;  // a shard's (ZeRO) is the whole buffer's
    b.sharded = buffers[i].sharded;
    b.pieces = buffers[i].owned;
    b.packed = buffers[i].packed;
    // The slice the codec writes for this rank (checkpoint::buffer_view),
    // or the whole shard this rank holds.
    b.begin = b.sharded ? 0 : count * rank / world;
    b.end = b.sharded ? count : count * (rank + 1) / world;
    if (b.end == b.begin)
      continue;
    const tensor slice = source.is_cuda()
                             ? source.view(b.begin, {b.end - b.begin}).to(device::cpu())
                             : source.view(b.begin, {b.end - b.begin});
    std::memcpy(b.data.get() + b.begin, slice.data(),
                static_cast<size_t>(b.end - b.begin) * sizeof(float));
  }
  return status::ok();
}

} // namespace dtrain::train
