// The median stopping rule, as Optuna 3.1's MedianPruner (see
// scheduler.hpp for the exact semantics).
#include <algorithm>
#include <cmath>
#include <map>
#include <sstream>
#include <unordered_map>

#include "dtrain/tune/percentile.hpp"
#include "dtrain/tune/scheduler.hpp"

namespace dtrain::tune {

namespace {

class median final : public scheduler {
public:
  explicit median(const median_options& o) : o_(o) {}

  decision on_result(const std::string& trial, int64_t epoch, double value) override {
    history& h = running_[trial];
    // Optuna keeps the first value of an epoch reported twice.
    if (h.values.emplace(epoch, value).second && !std::isnan(value) &&
        (std::isnan(h.best) || better(value, h.best)))
      h.best = value;
    if (completed_ == 0 || completed_ < o_.min_completed)
      return decision::go_on;
    // Optuna judges its last step, the highest epoch reported.
    const int64_t step = h.values.rbegin()->first;
    if (step < o_.warmup_epochs)
      return decision::go_on;
    if (std::isnan(h.best))
      return decision::stop;
    const auto at = completed_at_.find(step);
    if (at == completed_at_.end())
      return decision::go_on;
    const double p = nan_percentile(at->second, 50.0);
    if (std::isnan(p))
      return decision::go_on;
    return better(p, h.best) ? decision::stop : decision::go_on;
  }

  void on_end(const std::string& trial, trial_end how) override {
    const auto it = running_.find(trial);
    if (how == trial_end::completed) {
      ++completed_;
      if (it != running_.end())
        for (const auto& [epoch, value] : it->second.values)
          completed_at_[epoch].push_back(value);
    }
    if (it != running_.end())
      running_.erase(it);
  }

  std::string describe() const override {
    std::ostringstream out;
    out << "median stopping (as Optuna's MedianPruner): from epoch " << o_.warmup_epochs
        << " on, once " << std::max<int64_t>(o_.min_completed, 1)
        << " trial(s) completed, a trial is stopped when its best value so far is worse than"
           " the median of the completed trials' values at the same epoch";
    return out.str();
  }

private:
  struct history {
    std::map<int64_t, double> values;  // by epoch
    double best = std::nan("");        // nanmax (nanmin) of values
  };

  bool better(double a, double b) const { return o_.direction == mode::max ? a > b : a < b; }

  median_options o_;
  std::unordered_map<std::string, history> running_;
  std::map<int64_t, std::vector<double>> completed_at_;  // epoch -> completed trials' values
  int64_t completed_ = 0;
};

} // namespace

result<std::unique_ptr<scheduler>> make_median(const median_options& o) {
  if (o.warmup_epochs < 0)
    return invalid_argument("median: warmup_epochs is " + std::to_string(o.warmup_epochs) +
                            ", must be >= 0");
  if (o.min_completed < 0)
    return invalid_argument("median: min_completed is " + std::to_string(o.min_completed) +
                            ", must be >= 0");
  return std::unique_ptr<scheduler>(std::make_unique<median>(o));
}

} // namespace dtrain::tune
