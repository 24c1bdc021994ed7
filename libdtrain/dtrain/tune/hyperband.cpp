// Hyperband as Optuna 3.1's HyperbandPruner: brackets of ASHA's top-k rule
// (asha.cpp), a trial's bracket from crc32 (see hyperband.hpp).
#include "dtrain/tune/hyperband.hpp"

#include <zlib.h>

#include <algorithm>
#include <cmath>
#include <sstream>
#include <unordered_map>

#include "dtrain/core/check.hpp"

namespace dtrain::tune {

namespace {

// Budgets stay exact integers (and far inside int64) below this ratio.
constexpr int64_t max_ratio = int64_t{1} << 31;

// Optuna's n_brackets: math.floor(math.log(max / min, rf)) + 1, where
// Python's two-argument log is log(x) / log(base) in libm doubles.
int64_t bracket_count(int64_t min_resource, int64_t max_resource, int64_t rf) {
  const double ratio = static_cast<double>(max_resource) / static_cast<double>(min_resource);
  return static_cast<int64_t>(std::floor(std::log(ratio) / std::log(static_cast<double>(rf)))) + 1;
}

class hyperband final : public scheduler {
public:
  explicit hyperband(const hyperband_options& o) : o_(o) {
    if (o_.max_resource != hyperband_options::auto_max_resource)
      make_brackets(o_.max_resource);
  }

  decision on_result(const std::string& trial, int64_t epoch, double value) override {
    member& m = member_of(trial);
    m.last_epoch = std::max(m.last_epoch, epoch);
    if (!ready_) {
      if (completed_last_epoch_ < 0)
        return decision::go_on;  // "auto" and no completed trial yet: Optuna prunes nothing
      make_brackets(completed_last_epoch_ + 1);
    }
    if (brackets_.empty())
      return decision::go_on;
    if (m.bracket < 0)
      m.bracket = static_cast<int64_t>(hyperband_bracket_of(o_.study_name, m.number, brackets_));
    return rules_[static_cast<size_t>(m.bracket)]->on_result(trial, epoch, value);
  }

  void on_end(const std::string& trial, trial_end how) override {
    auto it = members_.find(trial);
    if (it == members_.end())
      return;
    // Optuna's "auto" reads the last step of COMPLETE trials that reported.
    if (!ready_ && how == trial_end::completed && it->second.last_epoch > 0)
      completed_last_epoch_ = std::max(completed_last_epoch_, it->second.last_epoch);
    if (it->second.bracket >= 0)
      rules_[static_cast<size_t>(it->second.bracket)]->on_end(trial, how);
  }

  void on_add(const std::string& trial, const config&) override { member_of(trial); }

  std::string describe() const override;

private:
  struct member {
    int64_t number = 0;       // Optuna's trial.number
    int64_t last_epoch = 0;   // the largest epoch reported (Optuna's last_step)
    int64_t bracket = -1;     // once the brackets exist and it reported
  };

  member& member_of(const std::string& trial) {
    auto it = members_.find(trial);
    if (it == members_.end()) {
      it = members_.emplace(trial, member{}).first;
      it->second.number = static_cast<int64_t>(members_.size()) - 1;
    }
    return it->second;
  }

  void make_brackets(int64_t max_resource) {
    ready_ = true;
    max_resource_ = max_resource;
    brackets_ = hyperband_brackets(o_.min_resource, max_resource, o_.reduction_factor);
    for (const hyperband_bracket& b : brackets_) {
      asha_options a;
      a.direction = o_.direction;
      a.grace_period = b.first_rung;
      a.reduction_factor = o_.reduction_factor;
      a.max_t = 0;  // Optuna's brackets have no last rung
      a.keep_rule = asha_options::rule::top_k;
      rules_.push_back(std::move(make_asha(a).value()));
    }
  }

  hyperband_options o_;
  bool ready_ = false;                 // brackets made (max_resource known)
  int64_t max_resource_ = 0;
  int64_t completed_last_epoch_ = -1;  // "auto": the largest last epoch of a completed trial
  std::vector<hyperband_bracket> brackets_;
  std::vector<std::unique_ptr<scheduler>> rules_;  // one ASHA per bracket
  std::unordered_map<std::string, member> members_;
};

std::string hyperband::describe() const {
  std::ostringstream out;
  out << "Hyperband (as Optuna's HyperbandPruner): reduction factor " << o_.reduction_factor
      << ", min_resource " << o_.min_resource << "; ";
  if (!ready_) {
    out << "max_resource auto: the brackets are made when the first trial completes";
    return out.str();
  }
  if (brackets_.empty()) {  // only from "auto", as in Optuna
    out << "max_resource " << max_resource_ << " (auto) is below min_resource: no bracket, "
        << "no trial is stopped";
    return out.str();
  }
  int64_t total = 0;
  for (const auto& b : brackets_)
    total += b.budget;
  out << "max_resource " << max_resource_ << ", " << brackets_.size() << " brackets";
  for (size_t i = 0; i < brackets_.size(); ++i) {
    asha_options a;
    a.grace_period = brackets_[i].first_rung;
    a.reduction_factor = o_.reduction_factor;
    a.max_t = std::max(max_resource_, brackets_[i].first_rung);
    out << (i == 0 ? ": " : "; ") << "bracket " << i << " rungs at epochs ";
    const auto rungs = asha_rungs(a);
    for (size_t k = 0; k < rungs.size(); ++k)
      out << (k == 0 ? "" : ", ") << rungs[k];
    out << " (" << brackets_[i].budget << " of " << total << " trials)";
  }
  out << "; a trial's bracket is crc32(\"" << o_.study_name << "_<trial number>\") mod " << total
      << "; within a bracket a trial is kept at a rung while it is within the best max(n/"
      << o_.reduction_factor << ", 1) of the bracket's n trials there so far";
  return out.str();
}

} // namespace

std::vector<hyperband_bracket> hyperband_brackets(int64_t min_resource, int64_t max_resource,
                                                  int64_t reduction_factor) {
  if (max_resource / min_resource > max_ratio)
    max_resource = min_resource * max_ratio;
  const int64_t n = bracket_count(min_resource, max_resource, reduction_factor);
  std::vector<hyperband_bracket> out;
  int64_t first = min_resource;
  for (int64_t b = 0; b < n; ++b) {
    const int64_t s = n - 1 - b;
    int64_t weight = n;  // n * rf^s, exact: rf^s <= the ratio <= 2^31, n <= 32
    for (int64_t k = 0; k < s; ++k)
      weight *= reduction_factor;
    // Optuna: math.ceil(n * rf^s / (s + 1)), exact here in integers.
    out.push_back({first, (weight + s) / (s + 1)});
    if (s > 0)  // min_resource * rf^(b + 1) <= max_resource: no overflow
      first *= reduction_factor;
  }
  return out;
}

size_t hyperband_bracket_of(const std::string& study_name, int64_t number,
                            const std::vector<hyperband_bracket>& brackets) {
  const std::string key = study_name + "_" + std::to_string(number);
  const uLong crc = ::crc32(::crc32(0L, Z_NULL, 0), reinterpret_cast<const Bytef*>(key.data()),
                            static_cast<uInt>(key.size()));
  int64_t total = 0;
  for (const auto& b : brackets)
    total += b.budget;
  int64_t left = static_cast<int64_t>(crc % static_cast<uLong>(total));
  for (size_t i = 0; i < brackets.size(); ++i) {
    left -= brackets[i].budget;
    if (left < 0)
      return i;
  }
  return brackets.size() - 1;  // unreachable: left < total
}

status check_hyperband(const hyperband_options& o, int64_t max_epochs) {
  auto wrong = [](const char* field, int64_t value, const std::string& want) {
    return invalid_argument("hyperband." + std::string(field) + ": must be " + want + ", got " +
                            std::to_string(value));
  };
  if (o.min_resource < 1)
    return wrong("min_resource", o.min_resource, "at least 1");
  if (o.reduction_factor < 2)
    return wrong("reduction_factor", o.reduction_factor, "at least 2");
  if (o.max_resource == hyperband_options::auto_max_resource)
    return status::ok();
  const int64_t max = o.max_resource == 0 ? max_epochs : o.max_resource;
  const std::string min = std::to_string(o.min_resource);
  if (max < o.min_resource)
    return wrong("max_resource", max,
                 "at least min_resource " + min + " (or auto), so that a bracket exists");
  if (max / o.min_resource > max_ratio)
    return wrong("max_resource", max, "at most 2^31 times min_resource " + min);
  return status::ok();
}

result<std::unique_ptr<scheduler>> make_hyperband(const hyperband_options& o) {
  DTRAIN_RETURN_IF_ERROR(check_hyperband(o));
  return std::unique_ptr<scheduler>(std::make_unique<hyperband>(o));
}

} // namespace dtrain::tune
