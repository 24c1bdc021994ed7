#include "dtrain/optim/lr_schedule.hpp"

#include <algorithm>
#include <cmath>
#include <sstream>

namespace dtrain::optim {

namespace {

class constant final : public lr_schedule {
public:
  explicit constant(float base) : base_(base) {}
  float lr(int64_t) const override { return base_; }
  std::string describe() const override { return "constant(" + std::to_string(base_) + ")"; }

private:
  float base_;
};

class multistep final : public lr_schedule {
public:
  multistep(float base, std::vector<int64_t> milestones, float gamma, int64_t period)
    : base_(base), milestones_(std::move(milestones)), gamma_(gamma), period_(period) {}

  float lr(int64_t t) const override {
    int64_t passed = period_ > 0
                       ? t / period_
                       : std::upper_bound(milestones_.begin(), milestones_.end(), t) -
                           milestones_.begin();
    return base_ * static_cast<float>(std::pow(static_cast<double>(gamma_), passed));
  }
  std::string describe() const override {
    std::ostringstream out;
    if (period_ > 0) {
      out << "step(" << base_ << ", every " << period_ << ", gamma " << gamma_ << ")";
      return out.str();
    }
    out << "multistep(" << base_ << ", [";
    for (size_t i = 0; i < milestones_.size(); ++i)
      out << (i > 0 ? ", " : "") << milestones_[i];
    out << "], gamma " << gamma_ << ")";
    return out.str();
  }

private:
  float base_;
  std::vector<int64_t> milestones_;
  float gamma_;
  int64_t period_;  // > 0: StepLR with this step size; 0: milestones
};

class cosine final : public lr_schedule {
public:
  cosine(float base, int64_t t_max, float eta_min) : base_(base), t_max_(t_max), min_(eta_min) {}
  float lr(int64_t t) const override {
    if (t >= t_max_)
      return min_;
    double phase = 3.14159265358979323846 * static_cast<double>(t) / static_cast<double>(t_max_);
    return min_ + (base_ - min_) * static_cast<float>(0.5 * (1.0 + std::cos(phase)));
  }
  std::string describe() const override {
    std::ostringstream out;
    out << "cosine(" << base_ << ", t_max " << t_max_ << ", min " << min_ << ")";
    return out.str();
  }

private:
  float base_;
  int64_t t_max_;
  float min_;
};

class warmup final : public lr_schedule {
public:
  warmup(std::unique_ptr<lr_schedule> inner, int64_t steps, float start)
    : inner_(std::move(inner)), steps_(steps), start_(start) {}
  float lr(int64_t t) const override {
    float factor = t >= steps_ ? 1.0f
                               : start_ + (1.0f - start_) * static_cast<float>(t) /
                                            static_cast<float>(steps_);
    return factor * inner_->lr(t);
  }
  std::string describe() const override {
    std::ostringstream out;
    out << "linear_warmup(" << steps_ << ", from " << start_ << ") then " << inner_->describe();
    return out.str();
  }

private:
  std::unique_ptr<lr_schedule> inner_;
  int64_t steps_;
  float start_;
};

status check_rate(const char* what, float value) {
  if (!std::isfinite(value) || value < 0.0f)
    return invalid_argument(std::string(what) + " must be finite and >= 0");
  return status::ok();
}

} // namespace

std::unique_ptr<lr_schedule> constant_lr(float base) {
  return std::make_unique<constant>(base);
}

result<std::unique_ptr<lr_schedule>> step_lr(float base, int64_t step_size, float gamma) {
  if (auto s = check_rate("step_lr base", base); !s)
    return s;
  if (step_size <= 0)
    return invalid_argument("step_lr step_size must be > 0, got " + std::to_string(step_size));
  if (auto s = check_rate("step_lr gamma", gamma); !s)
    return s;
  return std::unique_ptr<lr_schedule>(new multistep(base, {}, gamma, step_size));
}

result<std::unique_ptr<lr_schedule>> multistep_lr(float base, std::vector<int64_t> milestones,
                                                  float gamma) {
  if (auto s = check_rate("multistep_lr base", base); !s)
    return s;
  if (auto s = check_rate("multistep_lr gamma", gamma); !s)
    return s;
  for (size_t i = 0; i < milestones.size(); ++i)
    if (milestones[i] < 0 || (i > 0 && milestones[i] <= milestones[i - 1]))
      return invalid_argument("multistep_lr milestones must be >= 0 and increasing");
  return std::unique_ptr<lr_schedule>(new multistep(base, std::move(milestones), gamma, 0));
}

result<std::unique_ptr<lr_schedule>> cosine_lr(float base, int64_t t_max, float eta_min) {
  if (auto s = check_rate("cosine_lr base", base); !s)
    return s;
  if (auto s = check_rate("cosine_lr eta_min", eta_min); !s)
    return s;
  if (t_max <= 0)
    return invalid_argument("cosine_lr t_max must be > 0, got " + std::to_string(t_max));
  return std::unique_ptr<lr_schedule>(new cosine(base, t_max, eta_min));
}

result<std::unique_ptr<lr_schedule>> linear_warmup(std::unique_ptr<lr_schedule> inner,
                                                   int64_t warmup_steps, float start_factor) {
  if (inner == nullptr)
    return invalid_argument("linear_warmup needs a schedule to warm up");
  if (warmup_steps < 0)
    return invalid_argument("linear_warmup steps must be >= 0");
  if (!(start_factor >= 0.0f && start_factor <= 1.0f))
    return invalid_argument("linear_warmup start_factor must be in [0, 1]");
  return std::unique_ptr<lr_schedule>(new warmup(std::move(inner), warmup_steps, start_factor));
}

} // namespace dtrain::optim
