// TPE's split of its observations under several objectives or constraints
// (tpe_split.hpp), written from Optuna 3.1's definitions.
#include "dtrain/tune/tpe_split.hpp"

#include <algorithm>
#include <cmath>

namespace dtrain::tune::detail {
namespace {

constexpr double eps = 1e-12;

// The volume of `points` up to `reference` (their validity is the
// caller's: every point is <= the reference by construction).
double volume(const std::vector<point>& points, const point& reference) {
  auto v = hypervolume(points, reference);
  return v ? *v : 0.0;
}

} // namespace

point reference_point(const std::vector<point>& points) {
  point worst = points.front();
  for (const point& p : points)
    for (size_t k = 0; k < p.size(); ++k)
      worst[k] = std::max(worst[k], p[k]);
  for (double& w : worst) {
    w = std::max(1.1 * w, 0.9 * w);
    if (w == 0)
      w = eps;
  }
  return worst;
}

std::vector<size_t> greedy_hypervolume_subset(const std::vector<point>& points, size_t size,
                                              const point& reference) {
  std::vector<double> contribution(points.size());
  for (size_t i = 0; i < points.size(); ++i)
    contribution[i] = volume({points[i]}, reference);
  std::vector<bool> taken(points.size(), false);
  std::vector<point> selected;
  std::vector<size_t> out;
  double selected_volume = 0;
  while (out.size() < size && out.size() < points.size()) {
    size_t best = 0;
    bool found = false;
    for (size_t i = 0; i < points.size(); ++i)
      if (!taken[i] && (!found || contribution[i] > contribution[best])) {
        best = i;
        found = true;
      }
    taken[best] = true;
    // What each remaining point would add is reduced by the part it shares
    // with the pick (Optuna's update: the volume of the selected set plus
    // the corner both dominate, less the selected set's).
    for (size_t j = 0; j < points.size(); ++j) {
      if (taken[j])
        continue;
      point corner(points[best].size());
      for (size_t k = 0; k < corner.size(); ++k)
        corner[k] = std::max(points[best][k], points[j][k]);
      std::vector<point> with = selected;
      with.push_back(corner);
      contribution[j] -= volume(with, reference) - selected_volume;
    }
    selected.push_back(points[best]);
    out.push_back(best);
    selected_volume = volume(selected, reference);
  }
  return out;
}

tpe_split split_objectives(const std::vector<point>& losses, size_t n_below) {
  tpe_split out;
  const auto fronts = non_dominated_sort(losses);
  size_t f = 0;
  while (f < fronts.size() && out.below.size() + fronts[f].size() <= n_below) {
    std::vector<size_t> front = fronts[f++];
    std::sort(front.begin(), front.end());  // Optuna takes a rank's indices in order
    out.below.insert(out.below.end(), front.begin(), front.end());
  }
  if (out.below.size() < n_below && f < fronts.size()) {
    std::vector<size_t> front = fronts[f];
    std::sort(front.begin(), front.end());
    std::vector<point> points;
    for (size_t i : front)
      points.push_back(losses[i]);
    for (size_t i : greedy_hypervolume_subset(points, n_below - out.below.size(),
                                              reference_point(points)))
      out.below.push_back(front[i]);
  }
  std::vector<bool> is_below(losses.size(), false);
  for (size_t i : out.below)
    is_below[i] = true;
  for (size_t i = 0; i < losses.size(); ++i)
    if (!is_below[i])
      out.above.push_back(i);
  return out;
}

std::vector<double> below_weights(const std::vector<point>& losses, const std::vector<size_t>& below,
                                  const std::vector<double>& violations) {
  std::vector<double> out(below.size(), eps);
  std::vector<size_t> feasible;  // positions in `below`
  for (size_t i = 0; i < below.size(); ++i)
    if (violations.empty() || violations[below[i]] == 0)
      feasible.push_back(i);
  if (feasible.size() == 1)
    out[feasible[0]] = 1;
  if (feasible.size() < 2)
    return out;
  std::vector<point> points;
  for (size_t i : feasible)
    points.push_back(losses[below[i]]);
  const point reference = reference_point(points);
  const double whole = volume(points, reference);
  std::vector<double> contribution(points.size());
  for (size_t i = 0; i < points.size(); ++i) {
    std::vector<point> others = points;
    others.erase(others.begin() + static_cast<std::ptrdiff_t>(i));
    contribution[i] = whole - volume(others, reference) + eps;
  }
  const double top = *std::max_element(contribution.begin(), contribution.end());
  for (size_t i = 0; i < feasible.size(); ++i)
    out[feasible[i]] = std::clamp(contribution[i] / top, 0.0, 1.0);
  return out;
}

} // namespace dtrain::tune::detail
