#include "dtrain/tune/stopper.hpp"

#include <cmath>
#include <utility>

namespace dtrain::tune {
namespace {

std::string number(double x) { return to_string(value{x}); }

class metric_threshold final : public stopper {
public:
  metric_threshold(std::string metric, double threshold, mode direction)
    : metric_(std::move(metric)), threshold_(threshold), direction_(direction) {}

  bool sweep_done(const report* last, double elapsed_seconds) override {
    (void)elapsed_seconds;
    if (!last)
      return false;
    auto it = last->metrics.find(metric_);
    if (it == last->metrics.end() || std::isnan(it->second))
      return false;
    const double v = it->second;
    if (direction_ == mode::max ? v >= threshold_ : v <= threshold_) {
      reached_ = number(v) + " by trial " + last->trial;
      return true;
    }
    return false;
  }

  std::string describe() const override {
    if (reached_.empty())
      return metric_ + (direction_ == mode::max ? " >= " : " <= ") + number(threshold_);
    return metric_ + " reached " + number(threshold_) + " (" + reached_ + ")";
  }

private:
  std::string metric_;
  double threshold_;
  mode direction_;
  std::string reached_;  // "0.9012 by trial 00003" once fired
};

class time_budget final : public stopper {
public:
  explicit time_budget(double seconds) : seconds_(seconds) {}

  bool sweep_done(const report* last, double elapsed_seconds) override {
    (void)last;
    return elapsed_seconds >= seconds_;
  }

  std::string describe() const override {
    return "time budget of " + number(seconds_) + " s spent";
  }

private:
  double seconds_;
};

class max_epochs final : public stopper {
public:
  explicit max_epochs(int64_t epochs) : epochs_(epochs) {}

  bool trial_done(const report& r) override { return r.epoch >= epochs_; }

  std::string describe() const override {
    return "trial reached max_epochs " + std::to_string(epochs_);
  }

private:
  int64_t epochs_;
};

} // namespace

std::unique_ptr<stopper> make_metric_threshold(std::string metric, double threshold,
                                               mode direction) {
  return std::make_unique<metric_threshold>(std::move(metric), threshold, direction);
}

std::unique_ptr<stopper> make_time_budget(double seconds) {
  return std::make_unique<time_budget>(seconds);
}

std::unique_ptr<stopper> make_max_epochs(int64_t epochs) {
  return std::make_unique<max_epochs>(epochs);
}

} // namespace dtrain::tune
