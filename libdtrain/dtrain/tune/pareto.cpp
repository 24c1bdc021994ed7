// Pareto helpers (pareto.hpp): domination, constrained domination,
// non-dominated sorting and crowding distance as Optuna 3.1 orders them,
// and the hypervolume (a sweep in 2-D, slabs of 2-D sweeps in 3-D, WFG
// above). Written from the rules Optuna 3.1 states; the code is our own.
#include "dtrain/tune/pareto.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <string>

namespace dtrain::tune {
namespace {

constexpr double inf = std::numeric_limits<double>::infinity();

// The volume of the box between `p` and `reference`.
double box(const point& p, const point& reference) {
  double v = 1;
  for (size_t i = 0; i < p.size(); ++i)
    v *= reference[i] - p[i];
  return v;
}

// 2-D: sorted by the first coordinate (ties: the larger second first, as
// Optuna's lexsort), each point adds the strip below the last one kept.
double hypervolume_2d(std::vector<point> points, const point& reference) {
  std::sort(points.begin(), points.end(), [](const point& a, const point& b) {
    return a[0] != b[0] ? a[0] < b[0] : a[1] > b[1];
  });
  double volume = 0, ceiling = reference[1];
  for (const auto& p : points) {
    if (p[1] > ceiling)
      continue;  // dominated by a point already counted
    volume += (reference[0] - p[0]) * (ceiling - p[1]);
    ceiling = p[1];
  }
  return volume;
}

// 3-D: sorted by the last coordinate, the slab between two consecutive
// points' heights is the 2-D volume of the points below it times its
// thickness. O(n^2 log n), exact.
double hypervolume_3d(std::vector<point> points, const point& reference) {
  std::sort(points.begin(), points.end(),
            [](const point& a, const point& b) { return a[2] < b[2]; });
  const point flat_reference = {reference[0], reference[1]};
  std::vector<point> below;
  double volume = 0;
  for (size_t i = 0; i < points.size(); ++i) {
    below.push_back({points[i][0], points[i][1]});
    const double top = i + 1 < points.size() ? points[i + 1][2] : reference[2];
    if (top > points[i][2])
      volume += hypervolume_2d(below, flat_reference) * (top - points[i][2]);
  }
  return volume;
}

// The points of `set` that no other point of it weakly dominates (of equal
// points, the first).
std::vector<point> non_dominated(const std::vector<point>& set) {
  std::vector<point> out;
  for (size_t i = 0; i < set.size(); ++i) {
    bool covered = false;
    for (size_t j = 0; j < set.size() && !covered; ++j)
      covered = j != i && (dominates(set[j], set[i]) || (j < i && set[j] == set[i]));
    if (!covered)
      out.push_back(set[i]);
  }
  return out;
}

double wfg(std::vector<point> points, const point& reference);

// What `p` alone adds to the points of `rest`: its box less the part of it
// the rest covers (the rest limited to p's box).
double exclusive(const point& p, const std::vector<point>& rest, const point& reference) {
  std::vector<point> limited;
  for (const auto& q : rest) {
    point m(q.size());
    for (size_t k = 0; k < q.size(); ++k)
      m[k] = std::max(q[k], p[k]);
    limited.push_back(std::move(m));
  }
  return box(p, reference) - wfg(non_dominated(limited), reference);
}

// WFG (While, Bradstreet, Barone 2012): the sum of each point's exclusive
// volume against the points after it.
double wfg(std::vector<point> points, const point& reference) {
  if (points.empty())
    return 0;
  if (reference.size() == 2)
    return hypervolume_2d(std::move(points), reference);
  if (reference.size() == 3)
    return hypervolume_3d(std::move(points), reference);
  if (points.size() == 1)
    return box(points[0], reference);
  std::sort(points.begin(), points.end(),
            [](const point& a, const point& b) { return a[0] < b[0]; });
  double volume = 0;
  for (size_t i = 0; i < points.size(); ++i)
    volume += exclusive(points[i], {points.begin() + i + 1, points.end()}, reference);
  return volume;
}

} // namespace

double to_minimize(double v, mode direction) { return direction == mode::max ? -v : v; }

point to_minimize(const std::vector<double>& values, const std::vector<mode>& directions) {
  point out(values.size());
  for (size_t i = 0; i < values.size(); ++i)
    out[i] = to_minimize(values[i], directions[i]);
  return out;
}

bool dominates(const point& a, const point& b) {
  if (a == b)
    return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (!(a[i] <= b[i]))
      return false;
  return true;
}

constraint_values constraint_values_of(const std::vector<constraint>& constraints,
                                       const std::map<std::string, double>& metrics) {
  constraint_values out;
  for (const auto& c : constraints) {
    auto it = metrics.find(c.metric);
    out.push_back(it == metrics.end() ? std::numeric_limits<double>::quiet_NaN()
                                      : it->second - c.bound);
  }
  return out;
}

bool feasible(const constraint_values& c) {
  return std::all_of(c.begin(), c.end(), [](double v) { return v <= 0; });
}

double violation(const constraint_values& c) {
  double sum = 0;
  for (double v : c)
    if (v > 0)
      sum += v;
  return sum;
}

bool constrained_dominates(const point& a, const constraint_values& ca, const point& b,
                           const constraint_values& cb) {
  const bool fa = feasible(ca), fb = feasible(cb);
  if (fa && fb)
    return dominates(a, b);
  if (fa != fb)
    return fa;
  return violation(ca) < violation(cb);
}

std::vector<std::vector<size_t>> non_dominated_sort(
    const std::vector<point>& points, const std::vector<constraint_values>& constraints) {
  const size_t n = points.size();
  auto beats = [&](size_t a, size_t b) {
    return constraints.empty()
               ? dominates(points[a], points[b])
               : constrained_dominates(points[a], constraints[a], points[b], constraints[b]);
  };
  std::vector<size_t> dominated_count(n, 0);
  std::vector<std::vector<size_t>> beaten(n);
  for (size_t p = 0; p < n; ++p)
    for (size_t q = p + 1; q < n; ++q) {
      if (beats(p, q)) {
        beaten[p].push_back(q);
        ++dominated_count[q];
      } else if (beats(q, p)) {
        beaten[q].push_back(p);
        ++dominated_count[p];
      }
    }
  // Optuna's extraction: a point with no dominator is taken out and the
  // last point moved into its slot (which is looked at next).
  std::vector<size_t> left(n);
  std::iota(left.begin(), left.end(), 0);
  std::vector<std::vector<size_t>> fronts;
  while (!left.empty()) {
    std::vector<size_t> front;
    size_t i = 0;
    while (i < left.size()) {
      if (dominated_count[left[i]] != 0) {
        ++i;
        continue;
      }
      front.push_back(left[i]);
      left[i] = left.back();
      left.pop_back();
    }
    for (size_t x : front)
      for (size_t y : beaten[x])
        --dominated_count[y];
    fronts.push_back(std::move(front));
  }
  return fronts;
}

std::vector<size_t> pareto_front(const std::vector<point>& points,
                                 const std::vector<constraint_values>& constraints) {
  auto fronts = non_dominated_sort(points, constraints);
  if (fronts.empty())
    return {};
  std::sort(fronts[0].begin(), fronts[0].end());
  return fronts[0];
}

namespace {

// Crowding distances keyed by index into `points`; `order` is left as
// Optuna leaves the population: stably sorted by each objective in turn.
std::vector<double> crowding(const std::vector<point>& points, std::vector<size_t>& order) {
  std::vector<double> distance(points.size(), 0);
  if (order.empty())
    return distance;
  for (size_t k = 0; k < points[order[0]].size(); ++k) {
    std::stable_sort(order.begin(), order.end(),
                     [&](size_t a, size_t b) { return points[a][k] < points[b][k]; });
    const size_t n = order.size();
    if (points[order[0]][k] == points[order[n - 1]][k])
      continue;
    auto value = [&](size_t j) {  // j-th of [-inf, sorted values..., inf]
      return j == 0 ? -inf : j == n + 1 ? inf : points[order[j - 1]][k];
    };
    double low = 0, high = 0;
    for (size_t j = 0; j < n + 2; ++j)
      if (value(j) != -inf) {
        low = value(j);
        break;
      }
    for (size_t j = n + 2; j-- > 0;)
      if (value(j) != inf) {
        high = value(j);
        break;
      }
    double width = high - low;
    if (!(width > 0))
      width = 1;
    for (size_t j = 0; j < n; ++j) {
      const double gap = value(j) == value(j + 2) ? 0 : value(j + 2) - value(j);
      distance[order[j]] += gap / width;
    }
  }
  return distance;
}

} // namespace

std::vector<double> crowding_distance(const std::vector<point>& points, std::vector<size_t> front) {
  std::vector<size_t> order = front;
  const auto distance = crowding(points, order);
  std::vector<double> out;
  for (size_t i : front)
    out.push_back(distance[i]);
  return out;
}

std::vector<size_t> crowding_distance_sort(const std::vector<point>& points,
                                           std::vector<size_t> front) {
  const auto distance = crowding(points, front);
  std::stable_sort(front.begin(), front.end(),
                   [&](size_t a, size_t b) { return distance[a] < distance[b]; });
  std::reverse(front.begin(), front.end());
  return front;
}

std::vector<size_t> select_elite(const std::vector<point>& points,
                                 const std::vector<constraint_values>& constraints, size_t size) {
  std::vector<size_t> out;
  for (auto& front : non_dominated_sort(points, constraints)) {
    if (out.size() + front.size() < size) {
      out.insert(out.end(), front.begin(), front.end());
      continue;
    }
    const auto sorted = crowding_distance_sort(points, std::move(front));
    out.insert(out.end(), sorted.begin(), sorted.begin() + static_cast<long>(size - out.size()));
    break;
  }
  return out;
}

result<double> hypervolume(std::vector<point> points, const point& reference) {
  if (reference.size() < 1)
    return invalid_argument("hypervolume: the reference point has no coordinate");
  for (size_t i = 0; i < points.size(); ++i) {
    if (points[i].size() != reference.size())
      return invalid_argument("hypervolume: point " + std::to_string(i) + " has " +
                              std::to_string(points[i].size()) + " coordinates, the reference " +
                              std::to_string(reference.size()));
    for (size_t k = 0; k < reference.size(); ++k)
      if (!(points[i][k] <= reference[k]))
        return invalid_argument("hypervolume: point " + std::to_string(i) + " coordinate " +
                                std::to_string(k) + " (" + std::to_string(points[i][k]) +
                                ") is not <= the reference's (" + std::to_string(reference[k]) +
                                ")");
  }
  if (reference.size() == 1) {
    double best = reference[0];
    for (const auto& p : points)
      best = std::min(best, p[0]);
    return reference[0] - best;
  }
  return wfg(non_dominated(points), reference);
}

} // namespace dtrain::tune
