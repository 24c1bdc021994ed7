#include "dtrain/train/replica.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <exception>

#include "dtrain/comm/communicator.hpp"
#include "dtrain/core/check.hpp"
#include "dtrain/optim/factory.hpp"
#include "dtrain/train/step_totals.hpp"
#include "dtrain/plugin/loader.hpp"
#include "dtrain/train/file_data.hpp"
#include "dtrain/train/supervised.hpp"

namespace dtrain::train {

namespace {

using clock_type = std::chrono::steady_clock;
// Optimizer steps between should_preempt() checks (one tiny broadcast each).
constexpr int64_t preempt_check_steps = 16;

// Sets `target` to `committed` and tells the operator its step in flight
// is abandoned when it goes out of scope armed: an epoch that returns early
// from its loop resumes at its last committed step.
struct resume_on_failure {
  int64_t& target;
  const int64_t& committed;
  training_operator& op;
  bool armed = true;
  ~resume_on_failure() {
    if (!armed)
      return;
    target = committed;
    try {
      op.step_abandoned();
    } catch (...) {  // an operator's hook must not take the replica down
    }
  }
};

} // namespace

// ---- comm_replica_context ---------------------------------------------------

comm_replica_context::comm_replica_context(std::unique_ptr<comm::communicator> comm,
                                           placement where, const std::atomic<bool>* preempt)
  : comm_(std::move(comm)), placement_(where), preempt_(preempt) {}

namespace {

// Byte lengths and payloads travel as float32 bit patterns through the
// communicator's broadcast, all_gather and gather, which copy bits exactly
// (communicator.hpp); no value is ever read as a float.

// One float holding `n` (capped just past the limit) as a uint32 pattern.
tensor length_tensor(size_t n) {
  auto bits = static_cast<uint32_t>(std::min(n, comm_replica_context::max_value_bytes + 1));
  tensor t = tensor::empty({1});
  std::memcpy(t.data(), &bits, sizeof bits);
  return t;
}

// The lengths held by a tensor of length_tensor() patterns.
std::vector<size_t> lengths_in(const tensor& t) {
  tensor host = t.is_cuda() ? t.to(device::cpu()) : t;
  std::vector<size_t> out;
  for (int64_t i = 0; i < host.numel(); ++i) {
    uint32_t bits;
    std::memcpy(&bits, host.data() + i, sizeof bits);
    out.push_back(bits);
  }
  return out;
}

// `value` in `slots` floats, zero-padded.
tensor packed(const bytes& value, int64_t slots) {
  tensor t = tensor::zeros({slots});
  if (!value.empty())
    std::memcpy(t.data(), value.data(), value.size());
  return t;
}

// The first `length` bytes of slot block `block` (of `slots` floats).
bytes unpacked(const tensor& host, int64_t block, int64_t slots, size_t length) {
  const char* start = reinterpret_cast<const char*>(host.data() + block * slots);
  return bytes(start, start + length);
}

// Checked on every rank after the lengths were exchanged, so that all fail
// together instead of the others waiting in the next collective.
status check_lengths(const char* op, const std::vector<size_t>& lengths) {
  for (size_t q = 0; q < lengths.size(); ++q)
    if (lengths[q] > comm_replica_context::max_value_bytes)
      return invalid_argument(std::string("replica ") + op + ": rank " + std::to_string(q) +
                              "'s value is over the " +
                              std::to_string(comm_replica_context::max_value_bytes >> 20) +
                              " MiB limit");
  return status::ok();
}

int64_t slots_for(size_t length) { return static_cast<int64_t>((length + 3) / 4); }

} // namespace

result<std::vector<size_t>> comm_replica_context::exchange_lengths(const char* op, size_t mine) {
  tensor lens = for_comm(*comm_, tensor::zeros({world_size()}), where());
  DTRAIN_RETURN_IF_ERROR(
      comm_->all_gather(for_comm(*comm_, length_tensor(mine), where()), lens)->wait());
  std::vector<size_t> lengths = lengths_in(lens);
  DTRAIN_RETURN_IF_ERROR(check_lengths(op, lengths));
  return lengths;
}

result<std::vector<bytes>> comm_replica_context::all_gather(const bytes& value) {
  DTRAIN_ASSIGN_OR_RETURN(auto lengths, exchange_lengths("all_gather", value.size()));
  const int64_t slots = slots_for(*std::max_element(lengths.begin(), lengths.end()));
  tensor all = for_comm(*comm_, tensor::zeros({slots * world_size()}), where());
  DTRAIN_RETURN_IF_ERROR(
      comm_->all_gather(for_comm(*comm_, packed(value, slots), where()), all)->wait());
  tensor host = all.is_cuda() ? all.to(device::cpu()) : all;
  std::vector<bytes> out;
  for (int q = 0; q < world_size(); ++q)
    out.push_back(unpacked(host, q, slots, lengths[static_cast<size_t>(q)]));
  return out;
}

result<std::vector<bytes>> comm_replica_context::gather(const bytes& value, int root) {
  if (root < 0 || root >= world_size())
    return invalid_argument("replica gather: root " + std::to_string(root) + " out of range");
  DTRAIN_ASSIGN_OR_RETURN(auto lengths, exchange_lengths("gather", value.size()));
  const int64_t slots = slots_for(*std::max_element(lengths.begin(), lengths.end()));
  tensor all = for_comm(*comm_, tensor::zeros({rank() == root ? slots * world_size() : 0}),
                        where());
  DTRAIN_RETURN_IF_ERROR(
      comm_->gather(for_comm(*comm_, packed(value, slots), where()), all, root)->wait());
  std::vector<bytes> out;
  if (rank() != root)
    return out;
  tensor host = all.is_cuda() ? all.to(device::cpu()) : all;
  for (int q = 0; q < world_size(); ++q)
    out.push_back(unpacked(host, q, slots, lengths[static_cast<size_t>(q)]));
  return out;
}

result<bytes> comm_replica_context::broadcast(const bytes& value, int root) {
  if (root < 0 || root >= world_size())
    return invalid_argument("replica broadcast: root " + std::to_string(root) + " out of range");
  tensor len = for_comm(*comm_, length_tensor(rank() == root ? value.size() : 0), where());
  DTRAIN_RETURN_IF_ERROR(comm_->broadcast(len, root)->wait());
  const size_t length = lengths_in(len).front();
  if (length > max_value_bytes)  // every rank sees the root's length: all fail
    return invalid_argument("replica broadcast: rank " + std::to_string(root) +
                            "'s value is over the " + std::to_string(max_value_bytes >> 20) +
                            " MiB limit");
  const int64_t slots = slots_for(length);
  tensor payload = for_comm(*comm_, packed(rank() == root ? value : bytes{}, slots), where());
  DTRAIN_RETURN_IF_ERROR(comm_->broadcast(payload, root)->wait());
  tensor host = payload.is_cuda() ? payload.to(device::cpu()) : payload;
  return unpacked(host, 0, slots, length);
}

result<bool> comm_replica_context::should_preempt() {
  float flag = rank() == 0 && preempt_ != nullptr && preempt_->load() ? 1.0f : 0.0f;
  tensor t = for_comm(*comm_, tensor::full({1}, flag), where());
  DTRAIN_RETURN_IF_ERROR(comm_->broadcast(t, 0)->wait());
  return t.to_vector()[0] != 0.0f;
}

// ---- replica_runner ---------------------------------------------------------

replica_runner::replica_runner(const replica_options& options,
                               std::unique_ptr<replica_context> ctx)
  : options_(options), ctx_(std::move(ctx)) {}

replica_runner::~replica_runner() {
  shards_.reset();  // both unhook the model before it goes
  sync_.reset();
}

result<std::unique_ptr<replica_runner>> replica_runner::create(
    const replica_options& options, std::unique_ptr<replica_context> ctx) {
  if (ctx == nullptr)
    return invalid_argument("replica: no context");
  std::unique_ptr<replica_runner> r(new replica_runner(options, std::move(ctx)));
  if (auto* c = dynamic_cast<comm_replica_context*>(r->ctx_.get()))
    c->set_preempt_flag(&r->preempt_);
  DTRAIN_RETURN_IF_ERROR(r->build().with_context(
      "replica " + std::to_string(r->ctx_->rank()) + " (operator '" + options.operator_name + "')"));
  return r;
}

status replica_runner::build() {
  DTRAIN_ASSIGN_OR_RETURN(op_, plugin::make_operator(options_.operator_name, options_.plugins));
  try {
    DTRAIN_RETURN_IF_ERROR(op_->setup(options_.config, *ctx_, parts_));
  } catch (const std::exception& e) {
    return status(error_code::internal, std::string("setup() threw: ") + e.what());
  }
  if (!parts_.model || !parts_.optimizer || !parts_.loss || !parts_.train_data)
    return invalid_argument("setup() must set model, optimizer, loss and train_data");
  if (options_.compute != precision::fp32)
    parts_.model->set_compute_precision(options_.compute);
  DTRAIN_RETURN_IF_ERROR(zero::check_stage(options_.zero_stage, "zero_stage"));
  if (options_.zero_stage > 0 && !parts_.optimizer->shardable())
    return invalid_argument("zero_stage " + std::to_string(options_.zero_stage) +
                            " shards the optimizer state, which the optimizer '" +
                            parts_.optimizer->name() +
                            "' cannot do (dtrain's sgd, adam and adamw can)");
  if (options_.zero_stage >= 3 && !parts_.model->where().is_cpu())
    return invalid_argument("zero_stage 3 shards the parameters in host memory only; the model "
                            "is on " + parts_.model->where().to_string() +
                            " (stages 1 and 2 run there)");
  if (options_.zero_stage >= 3 && !parts_.optimizer->shards_parameters())
    return invalid_argument("zero_stage 3 needs an optimizer that reads only its own parts of "
                            "the parameters; '" + parts_.optimizer->name() +
                            "' does not (dtrain's sgd, adam and adamw do; stages 1 and 2 take it)");
  if (!(options_.clip_grad_norm >= 0.0f) || !std::isfinite(options_.clip_grad_norm))
    return invalid_argument("clip_grad_norm must be finite and >= 0 (0: no clipping), got " +
                            std::to_string(options_.clip_grad_norm));
  scaler_ = loss_scaler(options_.loss_scaling,
                        parts_.model->compute_precision() == precision::fp16);
  if (!parts_.schedule) {
    DTRAIN_ASSIGN_OR_RETURN(double lr,
                            options_.config.get_double("lr", optim::default_learning_rate));
    parts_.schedule = optim::constant_lr(static_cast<float>(lr));
  }
  DTRAIN_RETURN_IF_ERROR(build_group());
  if (parts_.validation_data) {
    data::loader_options lo = loader_options(parts_.validation_transforms);
    DTRAIN_ASSIGN_OR_RETURN(auto all, data::shard_sampler::create(
                                          {parts_.validation_data->size(), 1, 0, false, false,
                                           options_.seed}));
    DTRAIN_ASSIGN_OR_RETURN(validation_loader_,
                            data::loader::create(parts_.validation_data, all, lo));
  }
  return status::ok();
}

data::loader_options replica_runner::loader_options(
    const data::transform_list& transforms) const {
  data::loader_options lo;
  lo.batch_size = batch_size_;
  // Prefetch about 4096 samples ahead (2 to 64 batches): tiny batches need
  // depth, or the loader thread is woken for every step.
  lo.prefetch = static_cast<int>(std::clamp<int64_t>(4096 / batch_size_, options_.prefetch, 64));
  lo.workers = std::max(1, parts_.loader_workers);
  lo.where = ctx_->where();
  lo.transforms = transforms;
  lo.transform_seed = options_.seed;
  return lo;
}

status replica_runner::build_group() {
  const int world = ctx_->world_size();
  batch_size_ = options_.global_batch_size / world;
  if (batch_size_ < 1)
    return invalid_argument("global_batch_size " + std::to_string(options_.global_batch_size) +
                            " is smaller than the " + std::to_string(world) + " replicas");
  data::loader_options lo = loader_options(parts_.train_transforms);
  DTRAIN_ASSIGN_OR_RETURN(auto shard, data::shard_sampler::create(
                                          {parts_.train_data->size(), world, ctx_->rank(),
                                           true, false, options_.seed,
                                           parts_.train_block_starts, parts_.shuffle_window}));
  train_loader_.reset();  // its workers stop before the new one starts
  DTRAIN_ASSIGN_OR_RETURN(train_loader_, data::loader::create(parts_.train_data, shard, lo));
  comm::gradient_sync_options so;
  // ZeRO stage 2 on the CPU takes 25 MiB too: its chunks then hold whole
  // 2 MiB pages, which it gives back between steps (gradient_sync.hpp).
  so.bucket_bytes = options_.bucket_bytes > 0 ? options_.bucket_bytes
                  : ctx_->where().is_cuda() || options_.zero_stage >= 2 ? int64_t{25} << 20
                                                                        : int64_t{4} << 20;
  // DDP's 1 MiB first bucket, or the bucket size when that is smaller.
  so.first_bucket_bytes = std::min(so.first_bucket_bytes, so.bucket_bytes);
  so.aggregation_frequency = options_.aggregation_frequency;
  so.compress = options_.compress;
  so.zero_stage = options_.zero_stage;
  shards_.reset();  // both unhook the model from the old group first
  sync_.reset();
  DTRAIN_ASSIGN_OR_RETURN(sync_, comm::gradient_sync::create(*parts_.model,
                                                             ctx_->communicator(), so));
  if (options_.zero_stage >= 3) {
    DTRAIN_ASSIGN_OR_RETURN(shards_, zero::parameter_shards::create(
                                         *parts_.model, ctx_->communicator(), *sync_->layout()));
  }
  if (parts_.sync_batch_norm && world > 1) {
    // Issued on this thread between the gradient sync's own collectives,
    // in the same order on every replica.
    comm::communicator* group = &ctx_->communicator();
    parts_.model->set_statistics_reducer([group](tensor& values) {
      return group->all_reduce(values, comm::reduce_op::sum)->wait();
    });
  } else if (parts_.sync_batch_norm) {
    parts_.model->set_statistics_reducer({});  // alone now: its own statistics
  }
  return status::ok();
}

void replica_runner::report_progress(int64_t done, int64_t resumed_at,
                                     const step_totals& totals, double elapsed) const {
  step_progress p;
  p.rank = ctx_->rank();
  p.epoch = epoch_ + 1;
  p.step = done;
  p.resumed_at = resumed_at;
  p.steps_per_epoch = train_loader_->batches_per_epoch();
  p.samples = totals.samples();
  p.loss = totals.mean_loss();
  p.seconds = elapsed;
  p.samples_per_second = elapsed > 0 ? static_cast<double>(p.samples) / elapsed : 0.0;
  if (options_.on_progress) {
    options_.on_progress(p);
    return;
  }
  std::printf("[rank %d] epoch %lld step %lld/%lld  loss %.4f  %.0f samples/s\n", p.rank,
              static_cast<long long>(p.epoch), static_cast<long long>(p.step),
              static_cast<long long>(p.steps_per_epoch), p.loss, p.samples_per_second);
  std::fflush(stdout);
}

result<epoch_metrics> replica_runner::train_epoch() {
  auto start = clock_type::now();
  const float lr = parts_.schedule->lr(epoch_);
  // A preempted epoch resumes where it stopped: the same order, from the
  // first sample the group had not trained (whatever its size was then).
  train_loader_->begin_epoch(epoch_, resume_position_);
  resume_position_ = 0;
  const int64_t resumed_at = train_loader_->position() / train_loader_->global_batch();
  int64_t batch_index = resumed_at;
  nn::model& model = *parts_.model;
  nn::accuracy_counter counter;
  step_totals totals;
  int64_t steps = 0, syncs = 0;
  double allreduce_seconds = 0;
  const int64_t skipped_before = scaler_.skipped_steps();
  bool preempted = false;
  auto last_report = clock_type::now();
  has_state_ = true;
  // A failure inside the loop (a peer gone, the communicator aborted)
  // leaves the epoch to be trained on from its last committed step: the
  // model and optimizer are as that step left them (an optimizer step
  // follows a completed gradient sync, and nothing after it can fail).
  int64_t committed = train_loader_->position();
  resume_on_failure resume{resume_position_, committed, *op_};
  while (const data::batch* batch = train_loader_->next()) {
    ++batch_index;
    if (options_.progress_seconds > 0 &&
        std::chrono::duration<double>(clock_type::now() - last_report).count() >=
            options_.progress_seconds) {
      last_report = clock_type::now();
      // The batch just taken is not trained yet.
      report_progress(batch_index - 1, resumed_at, totals,
                      std::chrono::duration<double>(last_report - start).count());
    }
    auto mb = sync_->begin_micro_batch();
    step_context sc{model,   *batch, *parts_.loss,          *ctx_,          counter,
                    epoch_ + 1, parts_.classification, mb.accumulate, sync_.get()};
    // The batch's weight evens out an unevenly split last step (loader.hpp).
    sc.loss_scale = scaler_.scale() * batch->weight;
    // Set here too, so that a custom step computing its gradient through
    // ctx.loss gets it scaled without knowing about fp16.
    parts_.loss->set_grad_multiplier(sc.loss_scale);
    DTRAIN_ASSIGN_OR_RETURN(step_result r, run_step(sc, true));
    if (batch->weight > 0)  // a filler row (weight 0) trains nothing
      if (status s = totals.add(r, batch->size()); !s)
        return s.with_context(step_error_context(true));
    const auto sync_start = clock_type::now();
    DTRAIN_ASSIGN_OR_RETURN(bool synced, sync_->finish());
    allreduce_seconds += std::chrono::duration<double>(clock_type::now() - sync_start).count();
    if (synced) {
      // Checked after the sync, on the averaged gradient every replica
      // holds alike: all skip or all step together, and their scalers stay
      // identical (a check before the sync would let one replica's overflow
      // skip only that replica's step).
      DTRAIN_ASSIGN_OR_RETURN(bool stepped, apply_update(lr));
      steps += stepped ? 1 : 0;
      committed = train_loader_->position();
      // A step boundary: an asynchronous checkpoint may be due or done.
      DTRAIN_RETURN_IF_ERROR(async_checkpoint_step());
      // Every replica asks at the same step, so all get the chief's answer.
      if (++syncs % preempt_check_steps == 0) {
        DTRAIN_ASSIGN_OR_RETURN(preempted, ctx_->should_preempt());
        if (preempted)
          break;
      }
    }
  }
  resume.armed = false;
  DTRAIN_RETURN_IF_ERROR(train_loader_->error().with_context(
      "replica " + std::to_string(ctx_->rank()) + ", epoch " + std::to_string(epoch_ + 1)));
  DTRAIN_RETURN_IF_ERROR(finish_async_checkpoint());  // the save in flight, published
  if (preempted) {
    resume_position_ = train_loader_->position();
    preempt_.store(false);  // answered; a new request starts over
  } else {
    ++epoch_;
  }
  DTRAIN_RETURN_IF_ERROR(average_model_buffers());
  if (options_.average_training_metrics)
    DTRAIN_RETURN_IF_ERROR(totals.reduce(*ctx_));
  epoch_metrics m;
  m.epoch = epoch_;
  m.steps = steps;
  m.seconds = std::chrono::duration<double>(clock_type::now() - start).count();
  m.allreduce_seconds = allreduce_seconds;
  totals.report(m);
  report_memory(m);
  if (scaler_.enabled()) {
    m.extra["loss_scale"] = scaler_.scale();
    m.extra["skipped_steps"] = static_cast<double>(scaler_.skipped_steps() - skipped_before);
  }
  m.samples_per_second = m.seconds > 0 ? static_cast<double>(m.samples) / m.seconds : 0;
  m.lr = lr;
  m.preempted = preempted;
  m.resume_batch = preempted ? batch_index : 0;
  return m;
}

status replica_runner::average_model_buffers() {
  tensor& state = parts_.model->buffers();
  if (state.numel() == 0 || ctx_->world_size() == 1)
    return status::ok();
  return ctx_->communicator()
      .all_reduce(state, comm::reduce_op::average)
      ->wait()
      .with_context("replica " + std::to_string(ctx_->rank()) +
                    ": averaging the model's buffers (running statistics)");
}

std::string replica_runner::step_error_context(bool training) const {
  return "replica " + std::to_string(ctx_->rank()) + ", operator '" + options_.operator_name +
         "' " + (training ? "train_step" : "validation_step");
}

result<step_result> replica_runner::run_step(step_context& ctx, bool training) {
  try {
    result<step_result> r = training ? op_->train_step(ctx) : op_->validation_step(ctx);
    if (!r)
      return r.error().with_context(step_error_context(training));
    return r;
  } catch (const std::exception& e) {
    return status(error_code::internal, step_error_context(training) + " threw: " + e.what());
  }
}

result<epoch_metrics> replica_runner::validate() {
  if (!validation_loader_)
    return not_found("operator '" + options_.operator_name + "' set no validation_data");
  auto start = clock_type::now();
  validation_loader_->begin_epoch(0);
  parts_.loss->set_grad_multiplier(1.0f);
  nn::accuracy_counter counter;
  step_totals totals;
  while (const data::batch* batch = validation_loader_->next()) {
    step_context sc{*parts_.model, *batch, *parts_.loss, *ctx_, counter, epoch_,
                    parts_.classification};
    DTRAIN_ASSIGN_OR_RETURN(step_result r, run_step(sc, false));
    if (status s = totals.add(r, batch->size()); !s)
      return s.with_context(step_error_context(false));
  }
  DTRAIN_RETURN_IF_ERROR(validation_loader_->error().with_context(
      "replica " + std::to_string(ctx_->rank()) + ", validation"));
  epoch_metrics m;
  m.epoch = epoch_;
  m.seconds = std::chrono::duration<double>(clock_type::now() - start).count();
  totals.report(m);
  m.samples_per_second = m.seconds > 0 ? static_cast<double>(m.samples) / m.seconds : 0;
  return m;
}

result<int64_t> replica_runner::input_rows(const std::string& input) const {
  DTRAIN_ASSIGN_OR_RETURN(auto set,
                          prediction_input(parts_, input, "operator '" + options_.operator_name + "'"));
  return set->size();
}

result<replica_runner::prediction> replica_runner::predict(const std::string& input,
                                                           int64_t begin, int64_t end) {
  DTRAIN_ASSIGN_OR_RETURN(auto set,
                          prediction_input(parts_, input, "operator '" + options_.operator_name + "'"));
  if (begin < 0 || end > set->size() || begin > end)
    return invalid_argument("predict: rows [" + std::to_string(begin) + ", " +
                            std::to_string(end) + ") are outside " + set->name() + " (" +
                            std::to_string(set->size()) + " rows)");
  if (shards_)
    return unavailable("predict: at zero_stage 3 each replica holds only its part of the "
                       "parameters and cannot compute alone; restore the checkpoint into a "
                       "trainer at stage 0-2 to predict (dtrain predict does)");
  prediction out;
  out.target_width = set->target_count();
  out.classification = parts_.classification;
  const int64_t features = set->feature_count();
  const int64_t batch = std::max<int64_t>(1, batch_size_);
  std::vector<int64_t> indices;
  for (int64_t at = begin; at < end; at += batch) {
    const int64_t n = std::min(batch, end - at);
    indices.resize(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i)
      indices[static_cast<size_t>(i)] = at + i;
    tensor x = tensor::empty({n, features});
    std::vector<float> y(static_cast<size_t>(n * out.target_width));
    DTRAIN_RETURN_IF_ERROR(set->gather(indices.data(), n, x.data(), y.data())
                               .with_context("predict, rows from " + std::to_string(at)));
    apply_validation_transforms(*set, x, n);
    if (ctx_->where().is_cuda())
      x = x.to(ctx_->where());
    DTRAIN_ASSIGN_OR_RETURN(const tensor* o, parts_.model->forward(x, false));
    if (o->numel() % n != 0 || (out.width > 0 && o->numel() / n != out.width))
      return shape_mismatch("predict: the model gave " + std::to_string(o->numel()) +
                            " outputs for " + std::to_string(n) + " rows");
    out.width = o->numel() / n;
    std::vector<float> host = o->to_vector();
    out.outputs.insert(out.outputs.end(), host.begin(), host.end());
    out.targets.insert(out.targets.end(), y.begin(), y.end());
  }
  return out;
}

void replica_runner::apply_validation_transforms(const data::dataset& set, tensor& x,
                                                 int64_t rows) const {
  const std::vector<int64_t> shape = set.sample_shape();
  const int64_t width = set.feature_count();
  rng unused(0);  // validation transforms draw nothing
  for (int64_t i = 0; i < rows; ++i)
    for (const auto& t : parts_.validation_transforms)
      t->apply(x.data() + i * width, shape, unused);
}

const tensor& replica_runner::parameters() const { return parts_.model->parameters(); }

result<std::vector<float>> replica_runner::parameter_values() {
  if (!shards_)
    return parts_.model->parameters().to_vector();
  status gathered = shards_->gather_all();
  std::vector<float> out;
  if (gathered)
    out = parts_.model->parameters().to_vector();
  shards_->reshard();
  if (!gathered)
    return gathered.with_context("replica " + std::to_string(ctx_->rank()) +
                                 ": gathering the sharded parameters");
  return out;
}

const tensor& replica_runner::model_buffers() const { return parts_.model->buffers(); }

} // namespace dtrain::train
