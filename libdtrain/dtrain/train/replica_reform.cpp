// Live recovery on the replica's side: a replica moved into a new group
// (reform), and the state a group's ranks agree on right after it formed
// (synchronize_state): the most advanced rank's, broadcast bit for bit.
#include <chrono>
#include <cstring>
#include <tuple>

#include "dtrain/core/check.hpp"
#include "dtrain/train/replica.hpp"
#include "dtrain/train/step_totals.hpp"

namespace dtrain::train {

namespace {

// Where a rank stands; compared lexicographically (steps first: they never
// go back, then the epoch and the position in it).
struct standing_record {
  int64_t steps = 0;
  int64_t epoch = 0;
  int64_t position = 0;
  int64_t has_state = 0;

  auto key() const { return std::tie(steps, epoch, position); }
  bool operator==(const standing_record& o) const {
    return key() == o.key() && has_state == o.has_state;
  }
};

template <class T>
void put(bytes& out, const T& v) {
  const char* p = reinterpret_cast<const char*>(&v);
  out.insert(out.end(), p, p + sizeof v);
}

template <class T>
status take(const bytes& in, size_t& at, T& v, const char* what) {
  if (in.size() < at + sizeof v)
    return status(error_code::corrupt_data,
                  std::string("state transfer: the ") + what + " is cut short");
  std::memcpy(&v, in.data() + at, sizeof v);
  at += sizeof v;
  return status::ok();
}

// The scalar state a replica holds beside its buffers.
struct scalar_state {
  int64_t steps = 0;
  int64_t epoch = 0;
  int64_t position = 0;
  loss_scaler::state scaler;
  bytes extra;  // the operator's save_state()
};

bytes encode(const scalar_state& s) {
  bytes out;
  put(out, s.steps);
  put(out, s.epoch);
  put(out, s.position);
  put(out, s.scaler.scale);
  put(out, s.scaler.growth_tracker);
  put(out, s.scaler.skipped_steps);
  out.insert(out.end(), s.extra.begin(), s.extra.end());
  return out;
}

result<scalar_state> decode(const bytes& in) {
  scalar_state s;
  size_t at = 0;
  DTRAIN_RETURN_IF_ERROR(take(in, at, s.steps, "step count"));
  DTRAIN_RETURN_IF_ERROR(take(in, at, s.epoch, "epoch"));
  DTRAIN_RETURN_IF_ERROR(take(in, at, s.position, "loader position"));
  DTRAIN_RETURN_IF_ERROR(take(in, at, s.scaler.scale, "loss scale"));
  DTRAIN_RETURN_IF_ERROR(take(in, at, s.scaler.growth_tracker, "loss scaler's tracker"));
  DTRAIN_RETURN_IF_ERROR(take(in, at, s.scaler.skipped_steps, "skipped steps"));
  s.extra.assign(in.begin() + static_cast<std::ptrdiff_t>(at), in.end());
  return s;
}

// Broadcasts `buffer` from root in place, through a host copy when the
// communicator cannot reach the buffer's device.
status broadcast_buffer(comm::communicator& comm, tensor& buffer, int root) {
  if (comm.supports(buffer.where()))
    return comm.broadcast(buffer, root)->wait();
  tensor staging = buffer.to(device::cpu());
  DTRAIN_RETURN_IF_ERROR(comm.broadcast(staging, root)->wait());
  buffer.copy_from(staging);
  return status::ok();
}

} // namespace

int64_t replica_runner::committed_steps() const {
  return parts_.optimizer->steps() + scaler_.skipped_steps();
}

status replica_runner::reform(std::unique_ptr<comm::communicator> comm, int local_rank,
                              int node_rank) {
  auto* c = dynamic_cast<comm_replica_context*>(ctx_.get());
  if (c == nullptr)
    return unavailable("replica " + std::to_string(ctx_->rank()) +
                       ": its context cannot change groups (not a communicator's)");
  // The old group's save in flight can never be committed (its ranks are
  // gone): it is dropped, never published.
  abandon_async_checkpoint();
  sync_.reset();  // hooked to the old communicator, which goes now
  train_loader_.reset();
  // A preemption asked of the old group went with it (the trainer asks
  // the new chief again when its driver wants one).
  preempt_.store(false);
  c->replace(std::move(comm), local_rank, node_rank);
  return build_group().with_context("replica " + std::to_string(ctx_->rank()) +
                                    " joining generation's group of " +
                                    std::to_string(ctx_->world_size()));
}

bytes replica_runner::standing() const {
  standing_record r{committed_steps(), epoch_, resume_position_, has_state_ ? 1 : 0};
  bytes out;
  put(out, r);
  return out;
}

result<replica_runner::state_sync> replica_runner::synchronize_state() {
  const auto start = std::chrono::steady_clock::now();
  DTRAIN_ASSIGN_OR_RETURN(std::vector<bytes> all, ctx_->all_gather(standing()));
  std::vector<standing_record> ranks(all.size());
  for (size_t q = 0; q < all.size(); ++q) {
    if (all[q].size() != sizeof(standing_record))
      return status(error_code::corrupt_data, "state transfer: rank " + std::to_string(q) +
                                                  " sent a standing of " +
                                                  std::to_string(all[q].size()) + " bytes");
    std::memcpy(&ranks[q], all[q].data(), sizeof(standing_record));
  }
  state_sync out;
  bool agree = true;
  for (size_t q = 0; q < ranks.size(); ++q) {
    agree = agree && ranks[q] == ranks.front();
    if (ranks[q].has_state && (out.source < 0 || ranks[q].key() > ranks[out.source].key()))
      out.source = static_cast<int>(q);
  }
  // A fresh group (no rank has trained) starts alike from the seed; a
  // group whose ranks all stand at the same step already agrees.
  if (out.source < 0 || (agree && ranks.front().has_state))
    return out;
  // Under ZeRO no rank holds the whole optimizer state: a group that lost
  // a rank lost its shard, so it restores from a checkpoint instead.
  if (options_.zero_stage > 0)
    return unavailable("state transfer: zero_stage " + std::to_string(options_.zero_stage) +
                       " shards the optimizer state across the group, so no rank can send "
                       "all of it; restore from a checkpoint");
  DTRAIN_ASSIGN_OR_RETURN(out.bytes, broadcast_state(out.source));
  out.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return out;
}

result<int64_t> replica_runner::broadcast_state(int root) {
  scalar_state mine{parts_.optimizer->steps(), epoch_, resume_position_, scaler_.saved(),
                    op_->save_state()};
  DTRAIN_ASSIGN_OR_RETURN(bytes meta, ctx_->broadcast(ctx_->rank() == root ? encode(mine) : bytes{},
                                                      root));
  DTRAIN_ASSIGN_OR_RETURN(scalar_state theirs, decode(meta));
  int64_t moved = static_cast<int64_t>(meta.size());
  for (auto& b : checkpoint_buffers()) {
    if (b.sharded)  // refused before any byte moved (synchronize_state)
      return status(error_code::internal, "state transfer of the sharded '" + b.name + "'");
    DTRAIN_RETURN_IF_ERROR(broadcast_buffer(ctx_->communicator(), *b.data, root)
                               .with_context("state transfer of '" + b.name + "' from rank " +
                                             std::to_string(root)));
    moved += static_cast<int64_t>(b.data->bytes());
  }
  if (ctx_->rank() != root) {
    DTRAIN_RETURN_IF_ERROR(op_->load_state(theirs.extra).with_context("state transfer"));
    parts_.optimizer->set_steps(theirs.steps);
    epoch_ = theirs.epoch;
    resume_position_ = theirs.position;
    if (scaler_.enabled())
      DTRAIN_RETURN_IF_ERROR(scaler_.restore(theirs.scaler).with_context("state transfer"));
  }
  has_state_ = true;
  return moved;
}

} // namespace dtrain::train
