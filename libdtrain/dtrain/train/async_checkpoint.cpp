#include "dtrain/train/async_checkpoint.hpp"

#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdio>

#include "dtrain/core/check.hpp"
#include "dtrain/train/checkpoint_wire.hpp"
#include "dtrain/train/operator.hpp"
#include "dtrain/train/step_totals.hpp"

namespace dtrain::train {

namespace {

using clock_type = std::chrono::steady_clock;
// Step boundaries between the polls that share the chief's seconds-based
// "due" while no save is in flight (one tiny all-reduce each).
constexpr int64_t seconds_poll_steps = 8;

int64_t round_up(int64_t step, int64_t multiple) {
  return (step + multiple - 1) / multiple * multiple;
}

} // namespace

status commit_manifest(checkpoint::codec& codec, const std::string& root,
                       const checkpoint::pending_save& save, const checkpoint::manifest& m,
                       int keep_last, const std::string& best_metric, bool smaller_is_better) {
  DTRAIN_RETURN_IF_ERROR(codec.write_manifest(save.temp, m));
  DTRAIN_RETURN_IF_ERROR(checkpoint::publish(save));
  // The checkpoint is complete: failing to delete old ones does not undo it.
  if (status s = checkpoint::apply_retention(codec, root, keep_last, best_metric,
                                             smaller_is_better);
      !s.is_ok())
    std::fprintf(stderr, "dtrain: checkpoint retention under %s: %s\n", root.c_str(),
                 s.to_string().c_str());
  return status::ok();
}

/// What the writer thread does: write this rank's shard, commit the
/// chief's manifest, or remove a failed save's directory.
struct async_checkpointer::job {
  enum class kind { write, commit, remove };
  kind what = kind::write;
  std::shared_ptr<checkpoint_snapshot> snapshot;  // write
  checkpoint::manifest manifest;                  // commit: with the shards
  checkpoint::pending_save save;
  std::atomic<bool> cancelled{false};
  // Written by the writer, read on the training thread once it is idle.
  result<checkpoint::shard_info> written{status(error_code::internal, "not written")};
};

async_checkpointer::async_checkpointer(async_checkpoint_options options,
                                       std::shared_ptr<checkpoint::codec> codec,
                                       bool smaller_is_better)
  : options_(std::move(options)), codec_(std::move(codec)),
    smaller_is_better_(smaller_is_better), writer_([this] { writer_loop(); }) {}

async_checkpointer::~async_checkpointer() {
  abandon();
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  writer_.join();
}

async_checkpointer::counts async_checkpointer::counters() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return counts_;
}

std::string async_checkpointer::last_published() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return last_published_;
}

// ---- the training thread ----------------------------------------------------

status async_checkpointer::at_step(replica_context& ctx, int64_t step,
                                   const capture_fn& capture) {
  if (!options_.enabled())
    return status::ok();
  const auto now = clock_type::now();
  if (last_boundary_)
    trained_seconds_ += std::chrono::duration<double>(now - *last_boundary_).count();
  last_boundary_ = now;
  if (phase_ != phase::idle) {
    std::lock_guard<std::mutex> lock(mutex_);
    ++counts_.steps_in_flight;
  }
  // Derived from the step count alone, so that every rank (a newcomer
  // after a re-formation too) agrees on it without a collective.
  if (!next_due_step_ && options_.every_steps > 0)
    next_due_step_ = round_up(step, options_.every_steps);
  const bool steps_due = options_.every_steps > 0 && step >= *next_due_step_;
  const bool seconds_poll = options_.every_seconds > 0 && step % seconds_poll_steps == 0;
  if (phase_ == phase::idle && !steps_due && !seconds_poll)
    return status::ok();
  DTRAIN_ASSIGN_OR_RETURN(auto polled, poll(ctx));
  const bool all_idle = polled.first == ctx.world_size();
  if (all_idle && phase_ == phase::committing)
    phase_ = phase::idle;
  if (all_idle && phase_ == phase::writing)
    return end_writing(ctx);
  if (!steps_due && !polled.second)
    return status::ok();
  if (phase_ != phase::idle || !all_idle) {
    std::lock_guard<std::mutex> lock(mutex_);
    ++counts_.waited;  // at most one save in flight: this one waits
    return status::ok();
  }
  return start_save(ctx, step, capture);
}

status async_checkpointer::finish(replica_context& ctx) {
  last_boundary_.reset();  // the time between epochs is not training
  next_due_step_.reset();  // a restore may move the step count
  while (phase_ != phase::idle) {
    wait_writer_idle();
    DTRAIN_ASSIGN_OR_RETURN(auto polled, poll(ctx));
    if (polled.first != ctx.world_size())
      continue;
    if (phase_ == phase::writing)
      DTRAIN_RETURN_IF_ERROR(end_writing(ctx));
    else
      phase_ = phase::idle;
  }
  return status::ok();
}

void async_checkpointer::abandon() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (phase_ != phase::idle)
    ++counts_.abandoned;
  if (current_)
    current_->cancelled.store(true);
  for (auto& j : queue_)
    j->cancelled.store(true);
  current_.reset();
  phase_ = phase::idle;
  next_due_step_.reset();
  last_boundary_.reset();
  trained_seconds_ = 0;
}

bool async_checkpointer::chief_seconds_due() const {
  return options_.every_seconds > 0 && trained_seconds_ >= options_.every_seconds;
}

result<std::pair<int, bool>> async_checkpointer::poll(replica_context& ctx) {
  const float due = ctx.rank() == 0 && chief_seconds_due() ? 1.0f : 0.0f;
  tensor flags = tensor::empty({2});
  flags.data()[0] = writer_idle() ? 1.0f : 0.0f;
  flags.data()[1] = due;
  comm::communicator& group = ctx.communicator();
  tensor t = for_comm(group, flags, ctx.where());
  DTRAIN_RETURN_IF_ERROR(group.all_reduce(t, comm::reduce_op::sum)->wait().with_context(
      "replica " + std::to_string(ctx.rank()) + ": polling the asynchronous checkpoint"));
  const std::vector<float> v = t.to_vector();
  // Sums of 0/1 flags: exact in float.
  return std::make_pair(static_cast<int>(v[0] + 0.5f), v[1] > 0.5f);
}

status async_checkpointer::start_save(replica_context& ctx, int64_t step,
                                      const capture_fn& capture) {
  const auto start = clock_type::now();
  if (!snapshot_)
    snapshot_ = std::make_shared<checkpoint_snapshot>();
  DTRAIN_RETURN_IF_ERROR(capture(*snapshot_));
  // The chief names the new directory (begin_save()) and every rank hears it.
  result<wire::bytes> named = wire::bytes{};
  if (ctx.rank() == 0) {
    auto begun = checkpoint::begin_save(options_.root, snapshot_->manifest.epoch);
    named = begun.is_ok() ? result<wire::bytes>(wire::encode(*begun)) : begun.error();
  }
  DTRAIN_ASSIGN_OR_RETURN(wire::bytes agreed, ctx.broadcast(wire::value_to_bytes(named), 0));
  next_due_step_ = step + options_.every_steps;
  trained_seconds_ = 0;
  auto target = wire::value_from_bytes(agreed);
  if (!target.is_ok()) {  // the root is unusable: training goes on, the next save retries
    if (ctx.rank() == 0)
      std::fprintf(stderr, "dtrain: asynchronous checkpoint at step %lld: %s\n",
                   static_cast<long long>(step), target.error().to_string().c_str());
    std::lock_guard<std::mutex> lock(mutex_);
    ++counts_.failed;
    return status::ok();
  }
  pending_ = wire::decode_pending(*target);
  auto j = std::make_shared<job>();
  j->what = job::kind::write;
  j->snapshot = snapshot_;
  j->save = pending_;
  post(j);
  phase_ = phase::writing;
  std::lock_guard<std::mutex> lock(mutex_);
  current_ = j;
  ++counts_.started;
  counts_.snapshot_seconds += std::chrono::duration<double>(clock_type::now() - start).count();
  return status::ok();
}

status async_checkpointer::end_writing(replica_context& ctx) {
  std::shared_ptr<job> mine;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    mine = current_;
  }
  result<wire::bytes> described = mine ? (mine->written.is_ok()
                                              ? result<wire::bytes>(wire::encode(*mine->written))
                                              : mine->written.error())
                                       : status(error_code::aborted, "no save in flight");
  DTRAIN_ASSIGN_OR_RETURN(auto all, ctx.all_gather(wire::value_to_bytes(described)));
  phase_ = phase::committing;
  auto shards = wire::decode_shards(all);
  auto j = std::make_shared<job>();
  j->save = pending_;
  if (shards.is_ok()) {
    j->what = job::kind::commit;
    j->manifest = snapshot_->manifest;
    j->manifest.shards = std::move(*shards);
  } else {
    j->what = job::kind::remove;
    if (ctx.rank() == 0)
      std::fprintf(stderr, "dtrain: asynchronous checkpoint %s failed (the previous ones stay): %s\n",
                   pending_.dir.c_str(), shards.error().to_string().c_str());
    std::lock_guard<std::mutex> lock(mutex_);
    ++counts_.failed;
  }
  if (ctx.rank() == 0) {  // only the chief commits or cleans up
    post(j);
    std::lock_guard<std::mutex> lock(mutex_);
    current_ = j;
  }
  return status::ok();
}

// ---- the writer thread ------------------------------------------------------

void async_checkpointer::post(std::shared_ptr<job> j) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    queue_.push_back(std::move(j));
    ++busy_;
    counts_.max_in_flight = std::max<int64_t>(counts_.max_in_flight, busy_);
  }
  wake_.notify_one();
}

bool async_checkpointer::writer_idle() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return busy_ == 0;
}

void async_checkpointer::wait_writer_idle() {
  std::unique_lock<std::mutex> lock(mutex_);
  idle_.wait(lock, [this] { return busy_ == 0; });
}

void async_checkpointer::writer_loop() {
  // Training comes first: on a busy host the writer takes the cores the
  // training threads leave (best effort: Linux niceness is per thread).
  (void)setpriority(PRIO_PROCESS, static_cast<id_t>(::syscall(SYS_gettid)), 10);
  for (;;) {
    std::shared_ptr<job> j;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      wake_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
      if (queue_.empty())
        return;  // stopping, nothing left
      j = queue_.front();
      queue_.erase(queue_.begin());
    }
    run(*j);
    {
      std::lock_guard<std::mutex> lock(mutex_);
      --busy_;
    }
    idle_.notify_all();
  }
}

void async_checkpointer::run(job& j) {
  switch (j.what) {
  case job::kind::write: {
    if (!j.cancelled.load()) {
      const checkpoint_snapshot& s = *j.snapshot;
      std::vector<checkpoint::buffer_view> views;
      for (const auto& b : s.buffers)  // the codec reads [begin, end), or exactly the pieces
        views.push_back({b.name, b.data.get(), b.count,
                         wire::pieces_of<checkpoint::piece>(b.pieces, b.data.get(), b.sharded, b.packed)});
      j.written = codec_->write_shard(j.save.temp, s.rank, s.world_size, views);
      if (options_.test_write_delay.count() > 0)
        std::this_thread::sleep_for(options_.test_write_delay);
    }
    if (j.cancelled.load())
      checkpoint::abandon(j.save);  // the group re-formed: this save never publishes
    return;
  }
  case job::kind::commit: {
    status s = j.cancelled.load()
                   ? status(error_code::aborted, "abandoned")
                   : commit_manifest(*codec_, options_.root, j.save, j.manifest,
                                     options_.keep_last, "", smaller_is_better_);
    if (!s.is_ok()) {
      checkpoint::abandon(j.save);
      if (!j.cancelled.load())
        std::fprintf(stderr, "dtrain: asynchronous checkpoint %s failed (the previous ones stay): %s\n",
                     j.save.dir.c_str(), s.to_string().c_str());
    }
    std::lock_guard<std::mutex> lock(mutex_);
    if (s.is_ok()) {
      ++counts_.published;
      last_published_ = j.save.dir;
    } else if (!j.cancelled.load()) {
      ++counts_.failed;
    }
    return;
  }
  case job::kind::remove:
    checkpoint::abandon(j.save);
    return;
  }
}

} // namespace dtrain::train
