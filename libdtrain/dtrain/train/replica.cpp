#include "dtrain/train/replica.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <exception>

#include "dtrain/core/check.hpp"
#include "dtrain/train/supervised.hpp"

namespace dtrain::train {

namespace {

using clock_type = std::chrono::steady_clock;
// Optimizer steps between should_preempt() checks (one tiny broadcast each).
constexpr int64_t preempt_check_steps = 16;

// A tensor on a device `comm` accepts, holding `host`'s values.
tensor for_comm(comm::communicator& comm, const tensor& host, device where) {
  return comm.supports(device::cpu()) ? host : host.to(where);
}

} // namespace

// ---- comm_replica_context ---------------------------------------------------

comm_replica_context::comm_replica_context(std::unique_ptr<comm::communicator> comm,
                                           placement where, const std::atomic<bool>* preempt)
  : comm_(std::move(comm)), placement_(where), preempt_(preempt) {}

result<std::vector<bytes>> comm_replica_context::all_gather(const bytes& value) {
  const int n = world_size();
  constexpr size_t limit = size_t{1} << 24;  // lengths travel exactly as floats below it
  const float mine = static_cast<float>(std::min(value.size(), limit));
  tensor len = for_comm(*comm_, tensor::full({1}, mine), where());
  tensor lens = for_comm(*comm_, tensor::zeros({n}), where());
  DTRAIN_RETURN_IF_ERROR(comm_->all_gather(len, lens)->wait());
  std::vector<float> sizes = lens.to_vector();
  size_t longest = 0;
  for (float s : sizes)
    longest = std::max(longest, static_cast<size_t>(s));
  // Checked after the exchange, so that every rank fails together instead
  // of the others waiting in the next collective for the one that gave up.
  if (longest >= limit) {
    auto big = std::max_element(sizes.begin(), sizes.end()) - sizes.begin();
    return invalid_argument("replica all_gather: rank " + std::to_string(big) +
                            "'s value is over the 16 MiB limit");
  }
  const int64_t slots = static_cast<int64_t>((longest + 3) / 4);
  tensor packed = tensor::zeros({slots});
  if (!value.empty())
    std::memcpy(packed.data(), value.data(), value.size());
  tensor all = for_comm(*comm_, tensor::zeros({slots * n}), where());
  DTRAIN_RETURN_IF_ERROR(comm_->all_gather(for_comm(*comm_, packed, where()), all)->wait());
  std::vector<float> flat = all.to_vector();
  std::vector<bytes> out(static_cast<size_t>(n));
  for (int r = 0; r < n; ++r) {
    const char* start = reinterpret_cast<const char*>(flat.data() + r * slots);
    out[r].assign(start, start + static_cast<size_t>(sizes[r]));
  }
  return out;
}

result<std::vector<bytes>> comm_replica_context::gather(const bytes& value, int root) {
  DTRAIN_ASSIGN_OR_RETURN(auto all, all_gather(value));
  if (rank() != root)
    all.clear();
  return all;
}

result<bytes> comm_replica_context::broadcast(const bytes& value, int root) {
  if (root < 0 || root >= world_size())
    return invalid_argument("replica broadcast: root " + std::to_string(root) + " out of range");
  bytes mine = rank() == root ? value : bytes{};
  DTRAIN_ASSIGN_OR_RETURN(auto all, all_gather(mine));
  return all[static_cast<size_t>(root)];
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
  sync_.reset();  // unhooks the model before it goes
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
  DTRAIN_ASSIGN_OR_RETURN(op_, make_operator(options_.operator_name));
  try {
    DTRAIN_RETURN_IF_ERROR(op_->setup(options_.config, *ctx_, parts_));
  } catch (const std::exception& e) {
    return status(error_code::internal, std::string("setup() threw: ") + e.what());
  }
  if (!parts_.model || !parts_.optimizer || !parts_.loss || !parts_.train_data)
    return invalid_argument("setup() must set model, optimizer, loss and train_data");
  if (!parts_.schedule) {
    DTRAIN_ASSIGN_OR_RETURN(double lr, options_.config.get_double("lr", 0.01));
    parts_.schedule = optim::constant_lr(static_cast<float>(lr));
  }
  const int world = ctx_->world_size();
  batch_size_ = options_.global_batch_size / world;
  if (batch_size_ < 1)
    return invalid_argument("global_batch_size " + std::to_string(options_.global_batch_size) +
                            " is smaller than the " + std::to_string(world) + " replicas");
  data::loader_options lo;
  lo.batch_size = batch_size_;
  // Prefetch about 4096 samples ahead (2 to 64 batches): tiny batches need
  // depth, or the loader thread is woken for every step.
  lo.prefetch = static_cast<int>(std::clamp<int64_t>(4096 / batch_size_, options_.prefetch, 64));
  lo.where = ctx_->where();
  DTRAIN_ASSIGN_OR_RETURN(auto shard, data::shard_sampler::create(
                                          {parts_.train_data->size(), world, ctx_->rank(),
                                           true, false, options_.seed}));
  DTRAIN_ASSIGN_OR_RETURN(train_loader_, data::loader::create(parts_.train_data, shard, lo));
  if (parts_.validation_data) {
    DTRAIN_ASSIGN_OR_RETURN(auto all, data::shard_sampler::create(
                                          {parts_.validation_data->size(), 1, 0, false, false,
                                           options_.seed}));
    DTRAIN_ASSIGN_OR_RETURN(validation_loader_,
                            data::loader::create(parts_.validation_data, all, lo));
  }
  comm::gradient_sync_options so;
  so.bucket_bytes = options_.bucket_bytes;
  so.aggregation_frequency = options_.aggregation_frequency;
  so.compress = options_.compress;
  DTRAIN_ASSIGN_OR_RETURN(sync_, comm::gradient_sync::create(*parts_.model,
                                                             ctx_->communicator(), so));
  return status::ok();
}

result<epoch_metrics> replica_runner::train_epoch() {
  auto start = clock_type::now();
  const float lr = parts_.schedule->lr(epoch_);
  train_loader_->begin_epoch(epoch_);
  // A preempted epoch resumes where it stopped: the same order, minus the
  // batches already trained.
  int64_t batch_index = 0;
  for (; batch_index < resume_batch_ && train_loader_->next() != nullptr; ++batch_index) {
  }
  resume_batch_ = 0;
  nn::model& model = *parts_.model;
  nn::accuracy_counter counter;
  double loss_sum = 0;
  int64_t correct = 0, samples = 0, steps = 0;
  bool preempted = false;
  auto last_report = clock_type::now();
  while (const data::batch* batch = train_loader_->next()) {
    ++batch_index;
    if (options_.progress_seconds > 0 &&
        std::chrono::duration<double>(clock_type::now() - last_report).count() >=
            options_.progress_seconds) {
      last_report = clock_type::now();
      double elapsed = std::chrono::duration<double>(last_report - start).count();
      std::printf("[rank %d] epoch %lld step %lld/%lld  loss %.4f  %.0f samples/s\n",
                  ctx_->rank(), static_cast<long long>(epoch_ + 1),
                  static_cast<long long>(batch_index),
                  static_cast<long long>(train_loader_->batches_per_epoch()),
                  samples > 0 ? loss_sum / static_cast<double>(samples) : 0.0,
                  elapsed > 0 ? static_cast<double>(samples) / elapsed : 0.0);
      std::fflush(stdout);
    }
    auto mb = sync_->begin_micro_batch();
    DTRAIN_ASSIGN_OR_RETURN(const tensor* out, model.forward(batch->features, true));
    DTRAIN_ASSIGN_OR_RETURN(float loss, parts_.loss->compute(*out, batch->targets, true));
    if (!std::isfinite(loss))
      return status(error_code::numerical_error, "replica " + std::to_string(ctx_->rank()) +
                                              ": the loss is not finite in epoch " +
                                              std::to_string(epoch_ + 1) + "; lower the lr");
    if (parts_.classification) {
      DTRAIN_ASSIGN_OR_RETURN(int64_t c, counter.count(*out, batch->targets));
      correct += c;
    }
    loss_sum += static_cast<double>(loss) * static_cast<double>(batch->size());
    samples += batch->size();
    DTRAIN_RETURN_IF_ERROR(model.backward(parts_.loss->grad(), mb.accumulate));
    DTRAIN_ASSIGN_OR_RETURN(bool synced, sync_->finish());
    if (synced) {
      DTRAIN_RETURN_IF_ERROR(parts_.optimizer->step(model.parameters(), model.gradients(), lr));
      ++steps;
      // Every replica asks at the same step, so all get the chief's answer.
      if (steps % preempt_check_steps == 0) {
        DTRAIN_ASSIGN_OR_RETURN(preempted, ctx_->should_preempt());
        if (preempted)
          break;
      }
    }
  }
  if (preempted) {
    resume_batch_ = batch_index;
    preempt_.store(false);  // answered; a new request starts over
  } else {
    ++epoch_;
  }
  double seconds = std::chrono::duration<double>(clock_type::now() - start).count();
  DTRAIN_ASSIGN_OR_RETURN(auto m, aggregate(loss_sum, correct, samples, seconds, steps));
  m.lr = lr;
  m.preempted = preempted;
  m.resume_batch = resume_batch_;
  return m;
}

result<epoch_metrics> replica_runner::aggregate(double loss_sum, int64_t correct,
                                                int64_t samples, double seconds,
                                                int64_t steps) {
  epoch_metrics m;
  m.epoch = epoch_;
  m.steps = steps;
  m.seconds = seconds;
  if (options_.average_training_metrics && ctx_->world_size() > 1) {
    comm::communicator& c = ctx_->communicator();
    tensor sums = for_comm(c, tensor::from_vector({static_cast<float>(loss_sum),
                                                   static_cast<float>(correct),
                                                   static_cast<float>(samples)}, {3}),
                           ctx_->where());
    DTRAIN_RETURN_IF_ERROR(c.all_reduce(sums, comm::reduce_op::sum)->wait());
    auto v = sums.to_vector();
    loss_sum = v[0];
    correct = static_cast<int64_t>(std::llround(v[1]));
    samples = static_cast<int64_t>(std::llround(v[2]));
  }
  m.samples = samples;
  m.loss = samples > 0 ? loss_sum / static_cast<double>(samples) : 0;
  m.accuracy = samples > 0 ? static_cast<double>(correct) / static_cast<double>(samples) : 0;
  m.samples_per_second = seconds > 0 ? static_cast<double>(samples) / seconds : 0;
  return m;
}

result<epoch_metrics> replica_runner::validate() {
  if (!validation_loader_)
    return not_found("operator '" + options_.operator_name + "' set no validation_data");
  validation_loader_->begin_epoch(0);
  DTRAIN_ASSIGN_OR_RETURN(auto totals, evaluate(*parts_.model, *parts_.loss, *validation_loader_,
                                                {parts_.classification}));
  epoch_metrics m;
  m.epoch = epoch_;
  m.samples = totals.samples;
  m.loss = totals.mean_loss();
  m.accuracy = totals.accuracy();
  m.seconds = totals.seconds;
  m.samples_per_second = totals.samples_per_second();
  return m;
}

const tensor& replica_runner::parameters() const { return parts_.model->parameters(); }

} // namespace dtrain::train
