#pragma once

// split_with_violations (tpe_split.hpp), a template over the feasible split.

#include <algorithm>
#include <numeric>

namespace dtrain::tune::detail {

template <class Split>
tpe_split split_with_violations(const std::vector<double>& violations, size_t n_below,
                                Split split_feasible) {
  std::vector<size_t> order(violations.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return violations[a] < violations[b]; });
  tpe_split out;
  if (n_below >= order.size() || violations[order[n_below]] > 0) {
    out.below.assign(order.begin(), order.begin() + std::min(n_below, order.size()));
    out.above.assign(order.begin() + std::min(n_below, order.size()), order.end());
  } else {
    std::vector<size_t> feasible, infeasible;
    for (size_t i = 0; i < violations.size(); ++i)
      (violations[i] == 0 ? feasible : infeasible).push_back(i);
    const tpe_split inner = split_feasible(feasible, n_below);
    for (size_t i : inner.below)
      out.below.push_back(feasible[i]);
    for (size_t i : inner.above)
      out.above.push_back(feasible[i]);
    out.above.insert(out.above.end(), infeasible.begin(), infeasible.end());
  }
  std::sort(out.below.begin(), out.below.end());
  std::sort(out.above.begin(), out.above.end());
  return out;
}

} // namespace dtrain::tune::detail
