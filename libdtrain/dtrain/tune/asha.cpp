// ASHA in its stopping form: Optuna's top-k rule and Ray's percentile rule
// over one rung list (see scheduler.hpp for the exact semantics).
#include <algorithm>
#include <cmath>
#include <limits>
#include <sstream>
#include <unordered_map>

#include "dtrain/tune/percentile.hpp"
#include "dtrain/tune/scheduler.hpp"

namespace dtrain::tune {

namespace {

class asha final : public scheduler {
public:
  explicit asha(const asha_options& o)
    : o_(o), rungs_(asha_rungs(o)), rung_values_(rungs_.size()) {}

  decision on_result(const std::string& trial, int64_t epoch, double value) override {
    return o_.keep_rule == asha_options::rule::top_k ? judge_top_k(trial, epoch, value)
                                                    : judge_percentile(trial, epoch, value);
  }

  // Rung values stay (they keep competing) and so does the trial's rung
  // progress, so that a retry under the same id is not judged twice.
  void on_end(const std::string&, trial_end) override {}

  std::string describe() const override;

private:
  struct progress {
    size_t passed = 0;       // top_k: rungs passed, as Optuna's completed_rung_<k> attrs
    uint64_t recorded = 0;   // percentile: bit k set once a value sits at rung k
  };

  bool better(double a, double b) const { return o_.direction == mode::max ? a > b : a < b; }

  decision judge_top_k(const std::string& trial, int64_t epoch, double value) {
    size_t& k = trials_[trial].passed;
    for (; k < rungs_.size() && epoch >= rungs_[k]; ++k) {
      // Optuna looks at the value only once the report reached a rung.
      if (std::isnan(value))
        return decision::stop;
      std::vector<double>& rung = rung_values_[k];
      rung.push_back(value);
      const size_t rf = static_cast<size_t>(o_.reduction_factor);
      const size_t keep = std::max<size_t>(rung.size() / rf, 1);
      // Within the top `keep` (ties in its favour) iff fewer than `keep`
      // values are strictly better.
      const auto ahead = std::count_if(rung.begin(), rung.end(),
                                       [&](double x) { return better(x, value); });
      if (static_cast<size_t>(ahead) >= keep)
        return decision::stop;
    }
    return decision::go_on;
  }

  decision judge_percentile(const std::string& trial, int64_t epoch, double value) {
    if (std::isnan(value))  // Ray goes on; dtrain stops (see scheduler.hpp)
      return decision::stop;
    uint64_t& recorded = trials_[trial].recorded;
    for (size_t k = rungs_.size(); k-- > 0;) {
      if (epoch < rungs_[k] || (recorded >> k & 1u) != 0)
        continue;
      // Ray compares sign-adjusted values, so do the same to get its cut
      // to the bit for minimisation too.
      const double v = o_.direction == mode::max ? value : -value;
      const double cut = nan_percentile(rung_values_[k], percentile_);
      rung_values_[k].push_back(v);  // after the cut: the others only
      recorded |= uint64_t{1} << k;
      return !std::isnan(cut) && v < cut ? decision::stop : decision::go_on;
    }
    return decision::go_on;
  }

  asha_options o_;
  std::vector<int64_t> rungs_;
  // Ray's expression for the percentile, (1 - 1/rf) * 100, in its order.
  double percentile_ = (1.0 - 1.0 / static_cast<double>(o_.reduction_factor)) * 100.0;
  std::vector<std::vector<double>> rung_values_;  // top_k: raw; percentile: sign-adjusted
  std::unordered_map<std::string, progress> trials_;
};

std::string asha::describe() const {
  std::ostringstream out;
  const int64_t rf = o_.reduction_factor;
  if (o_.keep_rule == asha_options::rule::top_k)
    out << "ASHA (top-k rule, as Optuna and Determined): rungs at epochs ";
  else
    out << "ASHA (percentile rule, as Ray): rungs at epochs ";
  // Without max_t the list runs to int64's end; a few show the pattern.
  const size_t shown = o_.max_t > 0 ? rungs_.size() : std::min<size_t>(rungs_.size(), 4);
  for (size_t k = 0; k < shown; ++k)
    out << (k == 0 ? "" : ", ") << rungs_[k];
  if (shown < rungs_.size())
    out << ", ... (no max_t)";
  out << "; reduction factor " << rf << "; ";
  if (o_.keep_rule == asha_options::rule::top_k)
    out << "a trial is kept at a rung while it is within the best max(n/" << rf
        << ", 1) of the n trials there so far";
  else
    out << "a trial is stopped at a rung when it is worse than the (1 - 1/" << rf
        << ") quantile of the other trials' values there";
  return out.str();
}

} // namespace

std::vector<int64_t> asha_rungs(const asha_options& o) {
  const int64_t limit = o.max_t > 0 ? o.max_t : std::numeric_limits<int64_t>::max();
  std::vector<int64_t> rungs;
  if (o.grace_period < 1 || o.reduction_factor < 2)  // not a rung list; make_asha refuses it
    return rungs;
  for (int64_t r = o.grace_period; r <= limit; r *= o.reduction_factor) {
    rungs.push_back(r);
    if (r > limit / o.reduction_factor)  // the next one is past the limit (or overflows)
      break;
  }
  return rungs;
}

result<std::unique_ptr<scheduler>> make_asha(const asha_options& o) {
  auto wrong = [](const char* field, int64_t value, const std::string& want) {
    return invalid_argument("asha: " + std::string(field) + " is " + std::to_string(value) +
                            ", must be " + want);
  };
  if (o.grace_period < 1)
    return wrong("grace_period", o.grace_period, ">= 1");
  if (o.reduction_factor < 2)
    return wrong("reduction_factor", o.reduction_factor, ">= 2");
  if (o.max_t < 0)
    return wrong("max_t", o.max_t, ">= 0 (0: no limit)");
  if (o.max_t > 0 && o.grace_period > o.max_t)
    return wrong("grace_period", o.grace_period,
                 "<= max_t " + std::to_string(o.max_t) + " (no rung would ever stop a trial)");
  return std::unique_ptr<scheduler>(std::make_unique<asha>(o));
}

} // namespace dtrain::tune
