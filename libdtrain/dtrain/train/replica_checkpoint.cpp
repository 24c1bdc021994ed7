// The replica group's sharded checkpoints through a checkpoint::codec:
// every replica writes its shard, the chief the manifest; the chief's
// outcome is shared so that every replica returns the same one.
#include <algorithm>
#include <cstdio>
#include <cstring>

#include "dtrain/core/check.hpp"
#include "dtrain/train/checkpoint_wire.hpp"
#include "dtrain/train/replica.hpp"

namespace dtrain::train {

namespace {
// Manifest metric recording how far into the next epoch a preempted group
// got, in samples of the epoch's global order (any group size resumes it).
const char* const resume_position_key = "dtrain.resume_position";
// What checkpoints before that recorded instead: batches of the global batch.
const char* const resume_batch_key = "dtrain.resume_batch";
// Manifest metrics holding fp16's loss scaler (doubles hold its float scale
// and its counts exactly), so that a restored group scales and skips as the
// saved one would have.
const char* const loss_scale_key = "dtrain.loss_scale";
const char* const growth_tracker_key = "dtrain.loss_scale_growth_tracker";
const char* const skipped_steps_key = "dtrain.skipped_steps";
} // namespace

namespace {

using namespace wire;

// The first failure among every replica's outcome, or ok.
status first_failure(const std::vector<bytes>& outcomes) {
  for (size_t r = 0; r < outcomes.size(); ++r)
    if (status s = from_bytes(outcomes[r]); !s.is_ok())
      return s.with_context("replica " + std::to_string(r));
  return status::ok();
}

// Chief only: `path` when it is a checkpoint (valid or not: loading says
// why not), else the newest valid checkpoint under it.
result<std::string> choose_checkpoint(checkpoint::codec& c, const std::string& path) {
  auto m = c.read_manifest(path);
  if (m.is_ok() || m.error().code() != error_code::not_found)
    return path;
  std::vector<std::string> skipped;
  auto newest = checkpoint::newest_valid(c, path, &skipped);
  for (const std::string& s : skipped)
    std::fprintf(stderr, "dtrain: restore from %s skips the invalid checkpoint %s\n",
                 path.c_str(), s.c_str());
  if (!newest.is_ok() && newest.error().code() == error_code::not_found && skipped.empty())
    return not_found(path + " is neither a checkpoint (" + m.error().message() +
                     ") nor a directory of checkpoints (" + newest.error().message() + ")");
  return newest;
}

// The checkpoint holds exactly the model's buffers: the parameters, the
// model's own state when it has any, and this optimizer's state.
status check_same_buffers(const checkpoint::manifest& m,
                          const std::vector<replica_runner::state_buffer>& buffers,
                          const std::string& optimizer, const std::string& dir) {
  for (const auto& buffer : buffers) {
    auto it = std::find_if(m.buffers.begin(), m.buffers.end(),
                           [&](const auto& b) { return b.first == buffer.name; });
    if (it == m.buffers.end())
      return invalid_argument("checkpoint " + dir + " holds no '" + buffer.name +
                              "' (optimizer '" + optimizer + "')");
    if (it->second != buffer.count)
      return invalid_argument("checkpoint " + dir + " holds " + std::to_string(it->second) +
                              " " + buffer.name + ", the model has " +
                              std::to_string(buffer.count));
  }
  for (const auto& b : m.buffers)
    if (std::none_of(buffers.begin(), buffers.end(), [&](const auto& x) { return x.name == b.first; }))
      return invalid_argument("checkpoint " + dir + " holds '" + b.first +
                              "', which this model and optimizer '" + optimizer +
                              "' do not have");
  return status::ok();
}

const float* host_data(const tensor& t, std::vector<tensor>& copies) {
  if (t.where().is_cpu())
    return t.data();
  copies.push_back(t.to(device::cpu()));
  return copies.back().data();
}

} // namespace

std::vector<replica_runner::state_buffer> replica_runner::checkpoint_buffers() {
  nn::model& model = *parts_.model;
  const zero::shard_layout* layout = sync_ ? sync_->layout() : nullptr;
  // Allocated first, so that a checkpoint taken before the first step still
  // holds the (zero) state a restore expects; under ZeRO only this rank's
  // shard of it.
  if (layout != nullptr)
    parts_.optimizer->allocate_state(layout->owned_count(), model.parameters().where());
  else
    parts_.optimizer->allocate_state(parameters());
  // At stage 3 a rank holds only its own parts of the parameters: it
  // writes and reads those, as the optimizer state's.
  const bool sharded = shards_ != nullptr;
  std::vector<state_buffer> out{{"parameters", &model.parameters(), model.parameter_count(),
                                 sharded, sharded ? layout->owned() : std::vector<optim::span>{},
                                 false}};
  // Only models with state beyond their parameters (BatchNorm) carry it,
  // so that the checkpoints of the others stay as they were.
  if (model.buffer_count() > 0)
    out.push_back({"model_buffers", &model.buffers(), model.buffer_count(), false, {}});
  for (auto& [name, buffer] : parts_.optimizer->state_buffers())
    out.push_back({"optimizer/" + name, buffer, model.parameter_count(), layout != nullptr,
                   layout != nullptr ? layout->owned() : std::vector<optim::span>{}});
  return out;
}

status replica_runner::save(const std::string& root, const std::map<std::string, double>& metrics,
                            int keep_last, const std::string& best_metric) {
  if (!options_.codec)
    return unavailable("replica " + std::to_string(ctx_->rank()) +
                       ": no checkpoint codec (replica_options.codec)");
  // The chief names a new directory (never an existing checkpoint's), so
  // that until the new one is published every old one stays whole.
  result<bytes> named = bytes{};
  if (ctx_->rank() == 0) {
    auto begun = checkpoint::begin_save(root, epoch_);
    named = begun.is_ok() ? result<bytes>(encode(*begun)) : begun.error();
  }
  DTRAIN_ASSIGN_OR_RETURN(bytes agreed, ctx_->broadcast(value_to_bytes(named), 0));
  DTRAIN_ASSIGN_OR_RETURN(bytes target, value_from_bytes(agreed));
  const checkpoint::pending_save save = decode_pending(target);
  auto shards = write_shard(save.temp);
  status outcome = shards.is_ok() ? status::ok() : shards.error();
  if (outcome.is_ok() && ctx_->rank() == 0)
    outcome = commit_checkpoint(root, save, *shards, metrics, keep_last, best_metric);
  if (ctx_->rank() == 0 && !outcome.is_ok())
    checkpoint::abandon(save);  // every rank is past its write by now
  if (!shards.is_ok())
    return outcome;  // the group's collectives failed: no barrier to hold
  // The chief's outcome, broadcast, is the barrier: nobody returns before
  // the checkpoint is published, and a failure anywhere fails every replica.
  DTRAIN_ASSIGN_OR_RETURN(bytes shared, ctx_->broadcast(to_bytes(outcome), 0));
  outcome = ctx_->rank() == 0 ? outcome : from_bytes(shared);
  if (outcome.is_ok())
    last_checkpoint_ = save.dir;
  return outcome;
}

result<std::vector<bytes>> replica_runner::write_shard(const std::string& dir) {
  std::vector<tensor> copies;  // host copies of device buffers
  std::vector<checkpoint::buffer_view> views;
  for (auto& b : checkpoint_buffers()) {
    const float* data = host_data(*b.data, copies);
    // A shard of the state (ZeRO): this rank writes exactly its ranges.
    views.push_back({b.name, data, b.count,
                     wire::pieces_of<checkpoint::piece>(b.owned, data, b.sharded, b.packed)});
  }
  auto mine = options_.codec->write_shard(dir, ctx_->rank(), ctx_->world_size(), views);
  copies.clear();
  result<bytes> described = mine.is_ok() ? result<bytes>(encode(*mine)) : mine.error();
  return ctx_->all_gather(value_to_bytes(described));
}

checkpoint::manifest replica_runner::describe_checkpoint(
    int64_t epoch, int64_t resume_position, const std::map<std::string, double>& metrics) {
  checkpoint::manifest m;
  m.trial = options_.operator_name;
  m.epoch = epoch;
  m.step = parts_.optimizer->steps();
  m.metrics = metrics;
  if (resume_position > 0)  // an epoch begun: where to pick it up
    m.metrics[resume_position_key] = static_cast<double>(resume_position);
  if (scaler_.enabled()) {
    const loss_scaler::state st = scaler_.saved();
    m.metrics[loss_scale_key] = st.scale;
    m.metrics[growth_tracker_key] = static_cast<double>(st.growth_tracker);
    m.metrics[skipped_steps_key] = static_cast<double>(st.skipped_steps);
  }
  m.world_size = ctx_->world_size();
  for (auto& b : checkpoint_buffers())
    m.buffers.emplace_back(b.name, b.count);
  if (ctx_->rank() == 0)  // only the chief's goes into the manifest
    m.extra = op_->save_state();
  return m;
}

status replica_runner::commit_checkpoint(const std::string& root,
                                         const checkpoint::pending_save& save,
                                         const std::vector<bytes>& shards,
                                         const std::map<std::string, double>& metrics,
                                         int keep_last, const std::string& best_metric) {
  checkpoint::manifest m = describe_checkpoint(epoch_, resume_position_, metrics);
  DTRAIN_ASSIGN_OR_RETURN(m.shards, decode_shards(shards));
  return commit_manifest(*options_.codec, root, save, m, keep_last, best_metric,
                         options_.smaller_is_better);
}

status replica_runner::restore(const std::string& path) {
  if (!options_.codec)
    return unavailable("replica " + std::to_string(ctx_->rank()) +
                       ": no checkpoint codec (replica_options.codec)");
  // The chief chooses, so that every replica restores the same checkpoint.
  result<bytes> chosen = bytes{};
  if (ctx_->rank() == 0) {
    auto dir = choose_checkpoint(*options_.codec, path);
    chosen = dir.is_ok() ? result<bytes>(bytes(dir->begin(), dir->end())) : dir.error();
  }
  DTRAIN_ASSIGN_OR_RETURN(bytes agreed, ctx_->broadcast(value_to_bytes(chosen), 0));
  DTRAIN_ASSIGN_OR_RETURN(bytes dir, value_from_bytes(agreed));
  const status mine = load_checkpoint(std::string(dir.begin(), dir.end()));
  DTRAIN_ASSIGN_OR_RETURN(auto outcomes, ctx_->all_gather(to_bytes(mine)));
  return first_failure(outcomes);
}

status replica_runner::restore_scaler(const checkpoint::manifest& m) {
  auto scale = m.metrics.find(loss_scale_key);
  if (!scaler_.enabled() || scale == m.metrics.end())
    return status::ok();  // not fp16, or saved by a run that was not: start afresh
  auto count = [&](const char* key) -> int64_t {
    auto it = m.metrics.find(key);
    return it == m.metrics.end() ? 0 : static_cast<int64_t>(it->second);
  };
  return scaler_.restore({scale->second, count(growth_tracker_key), count(skipped_steps_key)});
}

status replica_runner::load_checkpoint(const std::string& dir) {
  checkpoint::codec& c = *options_.codec;
  DTRAIN_ASSIGN_OR_RETURN(checkpoint::manifest m, c.read_manifest(dir));
  auto buffers = checkpoint_buffers();
  DTRAIN_RETURN_IF_ERROR(check_same_buffers(m, buffers, parts_.optimizer->name(), dir));
  std::vector<checkpoint::buffer_target> targets;
  std::vector<tensor> staging;  // host buffers for device tensors
  staging.reserve(buffers.size());
  for (auto& b : buffers) {
    float* data = b.data->where().is_cpu()
                      ? b.data->data()
                      : staging.emplace_back(tensor::empty({b.data->numel()})).data();
    // A shard of the state (ZeRO): only this rank's ranges are read, from
    // whichever shards of whichever group size hold them.
    targets.push_back({b.name, data, b.count,
                       wire::pieces_of<checkpoint::target_piece>(b.owned, data, b.sharded, b.packed)});
  }
  DTRAIN_RETURN_IF_ERROR(c.read_buffers(dir, m, targets));
  for (size_t i = 0, s = 0; i < buffers.size(); ++i)
    if (!buffers[i].data->where().is_cpu())
      buffers[i].data->copy_from(staging[s++]);
  if (shards_)
    shards_->reshard();  // only this rank's parts were read
  DTRAIN_RETURN_IF_ERROR(op_->load_state(m.extra).with_context("checkpoint " + dir));
  parts_.optimizer->set_steps(m.step);
  epoch_ = m.epoch;
  resume_position_ = 0;
  if (auto at = m.metrics.find(resume_position_key); at != m.metrics.end())
    resume_position_ = static_cast<int64_t>(at->second);
  else if (auto old = m.metrics.find(resume_batch_key); old != m.metrics.end())
    resume_position_ = static_cast<int64_t>(old->second) * train_loader_->global_batch();
  DTRAIN_RETURN_IF_ERROR(restore_scaler(m).with_context("checkpoint " + dir));
  last_checkpoint_ = dir;
  has_state_ = true;
  return status::ok();
}

} // namespace dtrain::train
