#include "dtrain/train/step_totals.hpp"

#include <cmath>
#include <set>

#include "dtrain/core/check.hpp"

namespace dtrain::train {

namespace {

constexpr const char* trainer_metric_names[] = {"loss", "accuracy", "lr", "samples_per_second",
                                                 "step_seconds", "allreduce_seconds", "restarts"};

} // namespace

bool is_reserved_metric(const std::string& name) {
  for (const char* n : trainer_metric_names)
    if (name == n)
      return true;
  return name.rfind("validation_", 0) == 0;
}

std::string reserved_metric_names() {
  std::string out;
  for (const char* n : trainer_metric_names)
    out += (out.empty() ? "" : ", ") + std::string(n);
  return out;
}

namespace {

// The trainer and tuner show training metrics under their name and
// validation metrics as validation_NAME, beside these.
status check_metric_name(const std::string& name) {
  if (name.empty())
    return invalid_argument("a step reported a metric without a name");
  for (char c : name)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_'))
      return invalid_argument("metric '" + name +
                              "': a name is letters, digits and '_' only");
  if (is_reserved_metric(name))
    return invalid_argument("metric '" + name + "': the name is reserved (" +
                            reserved_metric_names() + " and validation_* are the trainer's)");
  return status::ok();
}

// Names joined by '\0', for the all_gather.
bytes encode_names(const std::vector<std::string>& names) {
  bytes out;
  for (const auto& n : names) {
    out.insert(out.end(), n.begin(), n.end());
    out.push_back('\0');
  }
  return out;
}

void decode_names(const bytes& in, std::set<std::string>& into) {
  std::string name;
  for (char c : in) {
    if (c == '\0') {
      into.insert(name);
      name.clear();
    } else {
      name.push_back(c);
    }
  }
}

} // namespace

tensor for_comm(comm::communicator& comm, const tensor& host, device where) {
  return comm.supports(device::cpu()) ? host : host.to(where);
}

step_totals::named_sum* step_totals::find(const std::string& name) {
  for (auto& s : extra_)
    if (s.name == name)
      return &s;
  return nullptr;
}

status step_totals::add(const step_result& r, int64_t samples) {
  if (!std::isfinite(r.loss))
    return status(error_code::numerical_error,
                  "the step's loss is not finite (" + std::to_string(r.loss) + ") after " +
                      std::to_string(samples_) + " samples of the epoch");
  for (const step_metric& m : r.metrics) {
    named_sum* sum = find(m.name);
    if (sum == nullptr) {  // first seen this epoch: check the name once
      DTRAIN_RETURN_IF_ERROR(check_metric_name(m.name));
      extra_.push_back({m.name, 0, 0});
      sum = &extra_.back();
    }
    if (!(m.weight > 0) || !std::isfinite(m.weight) || !std::isfinite(m.value))
      return invalid_argument("metric '" + m.name + "': value " + std::to_string(m.value) +
                              " with weight " + std::to_string(m.weight) +
                              " (a finite value and a weight > 0 are needed)");
    sum->weighted += m.value * m.weight;
    sum->weight += m.weight;
  }
  loss_sum_ += r.loss * static_cast<double>(samples);
  correct_ += r.correct > 0 ? r.correct : 0;
  samples_ += samples;
  return status::ok();
}

status step_totals::reduce(replica_context& ctx) {
  if (ctx.world_size() == 1)
    return status::ok();
  comm::communicator& c = ctx.communicator();
  // The loss, correct and sample sums travel as float32, as they always
  // have; the metric count says whether any replica has more to send.
  tensor sums = for_comm(c, tensor::from_vector({static_cast<float>(loss_sum_),
                                                 static_cast<float>(correct_),
                                                 static_cast<float>(samples_),
                                                 static_cast<float>(extra_.size())}, {4}),
                         ctx.where());
  DTRAIN_RETURN_IF_ERROR(c.all_reduce(sums, comm::reduce_op::sum)->wait());
  auto v = sums.to_vector();
  loss_sum_ = v[0];
  correct_ = static_cast<int64_t>(std::llround(v[1]));
  samples_ = static_cast<int64_t>(std::llround(v[2]));
  if (v[3] == 0)
    return status::ok();  // the same answer everywhere: no metric anywhere
  std::vector<std::string> mine;
  for (const auto& s : extra_)
    mine.push_back(s.name);
  DTRAIN_ASSIGN_OR_RETURN(auto all, ctx.all_gather(encode_names(mine)));
  std::set<std::string> names;  // sorted: the same order on every replica
  for (const auto& b : all)
    decode_names(b, names);
  std::vector<float> local;
  for (const auto& name : names) {
    const named_sum* s = find(name);
    local.push_back(s ? static_cast<float>(s->weighted) : 0.0f);
    local.push_back(s ? static_cast<float>(s->weight) : 0.0f);
  }
  const auto n = static_cast<int64_t>(local.size());
  tensor metric_sums = for_comm(c, tensor::from_vector(local, {n}), ctx.where());
  DTRAIN_RETURN_IF_ERROR(c.all_reduce(metric_sums, comm::reduce_op::sum)->wait());
  auto w = metric_sums.to_vector();
  extra_.clear();
  size_t i = 0;
  for (const auto& name : names) {
    extra_.push_back({name, w[i], w[i + 1]});
    i += 2;
  }
  return status::ok();
}

void step_totals::report(epoch_metrics& m) const {
  m.samples = samples_;
  m.loss = mean_loss();
  m.accuracy =
      samples_ > 0 ? static_cast<double>(correct_) / static_cast<double>(samples_) : 0;
  m.extra.clear();
  for (const auto& s : extra_)
    m.extra[s.name] = s.weight > 0 ? s.weighted / s.weight : 0;
}

} // namespace dtrain::train
