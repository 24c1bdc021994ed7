#include "dtrain/libtorch/optimizer.hpp"

#include <algorithm>
#include <map>

#include "dtrain/core/check.hpp"

namespace dtrain::libtorch {

namespace {

using kind = torch_optimizer::kind;
namespace optim = torch::optim;

// The state tensors of one parameter, by libtorch's field names. Each kind's
// fields are listed once here; get, set and make below follow the list.
std::vector<std::string> fields_of(kind k, const optim::OptimizerOptions& o) {
  switch (k) {
    case kind::sgd:
      return static_cast<const optim::SGDOptions&>(o).momentum() != 0
                 ? std::vector<std::string>{"momentum_buffer"}
                 : std::vector<std::string>{};
    case kind::adam:
      return static_cast<const optim::AdamOptions&>(o).amsgrad()
                 ? std::vector<std::string>{"exp_avg", "exp_avg_sq", "max_exp_avg_sq"}
                 : std::vector<std::string>{"exp_avg", "exp_avg_sq"};
    case kind::adamw:
      return static_cast<const optim::AdamWOptions&>(o).amsgrad()
                 ? std::vector<std::string>{"exp_avg", "exp_avg_sq", "max_exp_avg_sq"}
                 : std::vector<std::string>{"exp_avg", "exp_avg_sq"};
    case kind::rmsprop: {
      auto& r = static_cast<const optim::RMSpropOptions&>(o);
      std::vector<std::string> out{"square_avg"};
      if (r.momentum() > 0)
        out.push_back("momentum_buffer");
      if (r.centered())
        out.push_back("grad_avg");
      return out;
    }
    case kind::adagrad:
      return {"sum"};
  }
  return {};
}

at::Tensor get_field(kind k, optim::OptimizerParamState& s, const std::string& f) {
  switch (k) {
    case kind::sgd: return static_cast<optim::SGDParamState&>(s).momentum_buffer();
    case kind::adam: {
      auto& a = static_cast<optim::AdamParamState&>(s);
      return f == "exp_avg" ? a.exp_avg() : f == "exp_avg_sq" ? a.exp_avg_sq() : a.max_exp_avg_sq();
    }
    case kind::adamw: {
      auto& a = static_cast<optim::AdamWParamState&>(s);
      return f == "exp_avg" ? a.exp_avg() : f == "exp_avg_sq" ? a.exp_avg_sq() : a.max_exp_avg_sq();
    }
    case kind::rmsprop: {
      auto& r = static_cast<optim::RMSpropParamState&>(s);
      return f == "square_avg" ? r.square_avg() : f == "momentum_buffer" ? r.momentum_buffer()
                                                                          : r.grad_avg();
    }
    case kind::adagrad: return static_cast<optim::AdagradParamState&>(s).sum();
  }
  return {};
}

void set_field(kind k, optim::OptimizerParamState& s, const std::string& f, const at::Tensor& t) {
  switch (k) {
    case kind::sgd: static_cast<optim::SGDParamState&>(s).momentum_buffer(t); return;
    case kind::adam: {
      auto& a = static_cast<optim::AdamParamState&>(s);
      f == "exp_avg" ? a.exp_avg(t) : f == "exp_avg_sq" ? a.exp_avg_sq(t) : a.max_exp_avg_sq(t);
      return;
    }
    case kind::adamw: {
      auto& a = static_cast<optim::AdamWParamState&>(s);
      f == "exp_avg" ? a.exp_avg(t) : f == "exp_avg_sq" ? a.exp_avg_sq(t) : a.max_exp_avg_sq(t);
      return;
    }
    case kind::rmsprop: {
      auto& r = static_cast<optim::RMSpropParamState&>(s);
      f == "square_avg"        ? r.square_avg(t)
      : f == "momentum_buffer" ? r.momentum_buffer(t)
                               : r.grad_avg(t);
      return;
    }
    case kind::adagrad: static_cast<optim::AdagradParamState&>(s).sum(t); return;
  }
}

void set_step(kind k, optim::OptimizerParamState& s, int64_t step) {
  switch (k) {
    case kind::sgd: return;  // SGD counts nothing
    case kind::adam: static_cast<optim::AdamParamState&>(s).step(step); return;
    case kind::adamw: static_cast<optim::AdamWParamState&>(s).step(step); return;
    case kind::rmsprop: static_cast<optim::RMSpropParamState&>(s).step(step); return;
    case kind::adagrad: static_cast<optim::AdagradParamState&>(s).step(step); return;
  }
}

std::unique_ptr<optim::OptimizerParamState> make_state(kind k) {
  switch (k) {
    case kind::sgd: return std::make_unique<optim::SGDParamState>();
    case kind::adam: return std::make_unique<optim::AdamParamState>();
    case kind::adamw: return std::make_unique<optim::AdamWParamState>();
    case kind::rmsprop: return std::make_unique<optim::RMSpropParamState>();
    case kind::adagrad: return std::make_unique<optim::AdagradParamState>();
  }
  return nullptr;
}

std::string key_of(const at::Tensor& p) { return c10::guts::to_string(p.unsafeGetTensorImpl()); }

} // namespace

torch_optimizer::torch_optimizer(std::unique_ptr<torch::optim::Optimizer> opt, kind k,
                                 std::string type_name)
  : opt_(std::move(opt)), kind_(k), type_name_(std::move(type_name)) {}

torch_optimizer::~torch_optimizer() = default;

result<std::unique_ptr<torch_optimizer>> torch_optimizer::create(
    std::unique_ptr<torch::optim::Optimizer> opt, module_layer& layer) {
  if (opt == nullptr)
    return invalid_argument("torch_optimizer: no optimizer");
  kind k;
  std::string type;
  if (dynamic_cast<optim::SGD*>(opt.get()))
    k = kind::sgd, type = "SGD";
  else if (dynamic_cast<optim::AdamW*>(opt.get()))
    k = kind::adamw, type = "AdamW";
  else if (dynamic_cast<optim::Adam*>(opt.get()))
    k = kind::adam, type = "Adam";
  else if (dynamic_cast<optim::RMSprop*>(opt.get()))
    k = kind::rmsprop, type = "RMSprop";
  else if (dynamic_cast<optim::Adagrad*>(opt.get()))
    k = kind::adagrad, type = "Adagrad";
  else
    return invalid_argument("torch_optimizer: " + c10::demangle(typeid(*opt).name()) +
                            " is not supported; use torch::optim::SGD, Adam, AdamW, RMSprop or "
                            "Adagrad, or a dtrain optimizer");
  std::unique_ptr<torch_optimizer> out(new torch_optimizer(std::move(opt), k, type));
  std::map<const void*, int64_t> offset_of;
  for (size_t i = 0; i < layer.parameters().size(); ++i)
    offset_of[layer.parameters()[i].unsafeGetTensorImpl()] = layer.offsets()[i];
  for (auto& group : out->opt_->param_groups()) {
    out->base_lrs_.push_back(group.options().get_lr());
    for (const auto& f : fields_of(k, group.options()))
      if (std::find(out->names_.begin(), out->names_.end(), f) == out->names_.end())
        out->names_.push_back(f);
    for (const auto& p : group.params()) {
      auto it = offset_of.find(p.unsafeGetTensorImpl());
      if (it == offset_of.end())
        return invalid_argument("torch_optimizer: the optimizer steps a tensor of " +
                                std::to_string(p.numel()) + " elements that is not a trainable "
                                "parameter of the module (build it over module->parameters())");
      // Adagrad makes every parameter's state in its constructor and
      // asserts that it exists; a group added afterwards has none.
      if (k == kind::adagrad && out->opt_->state().count(key_of(p)) == 0)
        return invalid_argument("torch_optimizer: Adagrad has no state for a parameter of " +
                                std::to_string(p.numel()) + " elements (a parameter group "
                                "added after the optimizer was constructed)");
      out->params_.push_back(p);
      out->group_of_.push_back(out->base_lrs_.size() - 1);
      out->offsets_.push_back(it->second);
      out->keys_.push_back(key_of(p));
    }
  }
  out->homed_.assign(out->params_.size(), 0);
  return out;
}

std::vector<std::pair<std::string, tensor*>> torch_optimizer::state_buffers() {
  // A shard's state allocated before the first sharded step has nothing of
  // libtorch's to take in yet (Adagrad's early state is the whole
  // parameters', which reshard() replaces).
  int64_t whole = 0;
  for (size_t i = 0; i < params_.size(); ++i)
    whole = std::max(whole, offsets_[i] + params_[i].numel());
  const bool waiting_for_shard = !sharded_ && !state_.empty() && state_[0].numel() < whole;
  if (!state_.empty() && !waiting_for_shard)
    for (size_t i = 0; i < params_.size(); ++i)
      prepare(i, /*after_step=*/true);  // moves existing state in; makes none
  std::vector<std::pair<std::string, tensor*>> out;
  for (size_t i = 0; i < state_.size(); ++i)
    out.emplace_back(names_[i], &state_[i]);
  return out;
}

void torch_optimizer::prepare(size_t i, bool after_step) {
  auto& states = opt_->state();
  auto it = states.find(keys_[i]);
  auto view = [&](size_t field) {
    const at::Tensor& p = params_[i];
    return as_torch(state_[field].view(offsets_[i], {p.sizes().begin(), p.sizes().end()}));
  };
  torch::NoGradGuard no_grad;
  if (it != states.end() && it->second == nullptr)
    return;  // not ours to fix: libtorch's step() reports it
  if (it == states.end()) {
    // No libtorch state: a fresh optimizer takes its own first step (which
    // creates it); a restored one gets it made from the restored buffers.
    if (after_step || steps_ == 0)
      return;
    auto made = make_state(kind_);
    for (size_t f = 0; f < names_.size(); ++f)
      set_field(kind_, *made, names_[f], view(f));
    states[keys_[i]] = std::move(made);
    homed_[i] = 1;
    return;
  }
  if (homed_[i])
    return;
  for (size_t f = 0; f < names_.size(); ++f) {
    at::Tensor mine = get_field(kind_, *it->second, names_[f]);
    if (!mine.defined())
      continue;  // a field of another group's options
    at::Tensor v = view(f);
    v.copy_(mine);
    set_field(kind_, *it->second, names_[f], v);
  }
  homed_[i] = 1;
}

status torch_optimizer::update(tensor&, const tensor&, float lr) {
  auto& groups = opt_->param_groups();
  for (size_t g = 0; g < groups.size(); ++g)
    groups[g].options().set_lr(base_lrs_[0] > 0 ? lr * base_lrs_[g] / base_lrs_[0] : lr);
  try {
    for (size_t i = 0; i < params_.size(); ++i) {
      prepare(i, false);
      auto it = opt_->state().find(keys_[i]);
      if (it != opt_->state().end() && it->second != nullptr)
        set_step(kind_, *it->second, steps_);  // libtorch adds one in its step
    }
    opt_->step();
    for (size_t i = 0; i < params_.size(); ++i)
      prepare(i, true);
  } catch (const std::exception& e) {
    return torch_error(name() + " step", e);
  }
  return status::ok();
}

namespace {

std::unique_ptr<optim::Optimizer> remake(kind k, std::vector<optim::OptimizerParamGroup> groups,
                                         const optim::OptimizerOptions& defaults) {
  switch (k) {
    case kind::sgd:
      return std::make_unique<optim::SGD>(std::move(groups),
                                          static_cast<const optim::SGDOptions&>(defaults));
    case kind::adam:
      return std::make_unique<optim::Adam>(std::move(groups),
                                           static_cast<const optim::AdamOptions&>(defaults));
    case kind::adamw:
      return std::make_unique<optim::AdamW>(std::move(groups),
                                            static_cast<const optim::AdamWOptions&>(defaults));
    case kind::rmsprop:
      return std::make_unique<optim::RMSprop>(std::move(groups),
                                              static_cast<const optim::RMSpropOptions&>(defaults));
    case kind::adagrad:
      return std::make_unique<optim::Adagrad>(std::move(groups),
                                              static_cast<const optim::AdagradOptions&>(defaults));
  }
  return nullptr;
}

} // namespace

status torch_optimizer::reshard(const std::vector<dtrain::optim::span>& owned) {
  auto& old_groups = opt_->param_groups();
  std::vector<std::vector<at::Tensor>> members(old_groups.size());
  std::vector<at::Tensor> pieces;
  std::vector<int64_t> offsets;
  std::vector<size_t> group_of;
  int64_t at = 0;  // where a range's state starts in the shard
  for (const dtrain::optim::span& r : owned) {
    for (size_t i = 0; i < params_.size(); ++i) {
      const int64_t lo = std::max(r.begin, offsets_[i]);
      const int64_t hi = std::min(r.begin + r.count, offsets_[i] + params_[i].numel());
      if (hi <= lo)
        continue;
      if (!params_[i].grad().defined())
        return invalid_argument(name() + ": a parameter of " + std::to_string(params_[i].numel()) +
                                " elements has no gradient to shard");
      at::Tensor piece = params_[i].detach().view({-1}).narrow(0, lo - offsets_[i], hi - lo);
      piece.mutable_grad() = params_[i].grad().view({-1}).narrow(0, lo - offsets_[i], hi - lo);
      members[group_of_[i]].push_back(piece);
      pieces.push_back(piece);
      group_of.push_back(group_of_[i]);
      offsets.push_back(at + (lo - r.begin));
    }
    at += r.count;
  }
  std::vector<optim::OptimizerParamGroup> groups;
  for (size_t g = 0; g < old_groups.size(); ++g)
    groups.emplace_back(members[g], old_groups[g].options().clone());
  auto made = remake(kind_, std::move(groups), opt_->defaults());
  if (made == nullptr)
    return unavailable(name() + " cannot step a shard of the parameters");
  // Adagrad makes each piece's state in its constructor, from its initial
  // accumulator. A group that has stepped (or restored a checkpoint) holds
  // the real state in the shard's buffers already: those are what
  // prepare() must make the pieces' state from, not the constructor's.
  if (kind_ == kind::adagrad && steps_ > 0)
    made->state().clear();
  opt_ = std::move(made);
  params_ = std::move(pieces);
  offsets_ = std::move(offsets);
  group_of_ = std::move(group_of);
  keys_.clear();
  for (const auto& p : params_)
    keys_.push_back(key_of(p));
  homed_.assign(params_.size(), 0);
  sharded_ = true;
  return status::ok();
}

status torch_optimizer::update_owned(tensor& params, const tensor& grads,
                                     const std::vector<dtrain::optim::span>& owned, float lr) {
  if (!sharded_) {
    try {
      DTRAIN_RETURN_IF_ERROR(reshard(owned));
    } catch (const std::exception& e) {
      return torch_error(name() + " shard", e);
    }
  }
  return update(params, grads, lr);
}

} // namespace dtrain::libtorch
