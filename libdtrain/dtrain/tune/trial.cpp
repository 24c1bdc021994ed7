#include "dtrain/tune/trial.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace dtrain::tune {

const char* to_string(trial_status s) {
  switch (s) {
  case trial_status::pending: return "PENDING";
  case trial_status::running: return "RUNNING";
  case trial_status::stopped: return "STOPPED";
  case trial_status::terminated: return "TERMINATED";
  case trial_status::error: return "ERROR";
  }
  return "UNKNOWN";
}

namespace {

constexpr double nan = std::numeric_limits<double>::quiet_NaN();

// a better than b; a NaN is never better, and anything beats a NaN.
bool better(double a, double b, mode direction) {
  if (std::isnan(a))
    return false;
  if (std::isnan(b))
    return true;
  return direction == mode::max ? a > b : a < b;
}

} // namespace

double trial_record::last(const std::string& metric) const {
  if (history.empty())
    return nan;
  auto it = history.back().metrics.find(metric);
  return it == history.back().metrics.end() ? nan : it->second;
}

double trial_record::best(const std::string& metric, mode direction) const {
  double out = nan;
  for (const auto& r : history) {
    auto it = r.metrics.find(metric);
    if (it != r.metrics.end() && better(it->second, out, direction))
      out = it->second;
  }
  return out;
}

result<const trial_record*> result_grid::best(const std::string& metric, mode direction) const {
  const trial_record* out = nullptr;
  double value = nan;
  for (const auto& t : trials) {
    const double v = t.best(metric, direction);
    if (better(v, value, direction)) {  // strict: the first of equals wins
      out = &t;
      value = v;
    }
  }
  if (!out)
    return not_found("no trial reported a value of " + metric + " (" +
                     std::to_string(trials.size()) + " trials)");
  return out;
}

std::vector<const trial_record*> result_grid::sorted(const std::string& metric,
                                                     mode direction) const {
  std::vector<std::pair<double, const trial_record*>> keyed;
  for (const auto& t : trials)
    keyed.emplace_back(t.best(metric, direction), &t);
  std::stable_sort(keyed.begin(), keyed.end(), [direction](const auto& a, const auto& b) {
    return better(a.first, b.first, direction);
  });
  std::vector<const trial_record*> out;
  for (const auto& [v, t] : keyed)
    out.push_back(t);
  return out;
}

std::vector<const trial_record*> result_grid::pareto() const {
  const std::vector<objective> goals =
      objectives.empty() ? std::vector<objective>{{metric, direction}} : objectives;
  std::vector<const trial_record*> counted;
  std::vector<point> points;
  std::vector<constraint_values> violations;
  for (const auto& t : trials) {
    if (t.status == trial_status::error || t.history.empty())
      continue;
    point p;
    for (const auto& g : goals)
      p.push_back(to_minimize(t.last(g.metric), g.direction));
    constraint_values c = constraint_values_of(constraints, t.history.back().metrics);
    auto is_nan = [](double v) { return std::isnan(v); };
    if (std::any_of(p.begin(), p.end(), is_nan) || std::any_of(c.begin(), c.end(), is_nan))
      continue;
    counted.push_back(&t);
    points.push_back(std::move(p));
    if (!constraints.empty())
      violations.push_back(std::move(c));
  }
  std::vector<const trial_record*> out;
  for (size_t i : pareto_front(points, violations))
    out.push_back(counted[i]);
  return out;
}

} // namespace dtrain::tune
