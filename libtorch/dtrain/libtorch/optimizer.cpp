#include "dtrain/libtorch/optimizer.hpp"

#include <algorithm>
#include <map>

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
      out->offsets_.push_back(it->second);
      out->keys_.push_back(key_of(p));
    }
  }
  out->homed_.assign(out->params_.size(), 0);
  return out;
}

std::vector<std::pair<std::string, tensor*>> torch_optimizer::state_buffers() {
  if (!state_.empty())
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

} // namespace dtrain::libtorch
