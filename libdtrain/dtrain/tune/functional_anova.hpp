#pragma once

#include <utility>
#include <vector>

#include "dtrain/core/status.hpp"
#include "dtrain/tune/regression_forest.hpp"

namespace dtrain::tune {

/// What one tree's functional ANOVA (Hutter et al. 2014) says: the
/// variance of its prediction over the whole box (uniform measure) and,
/// per group of columns, the variance of the group's marginal (the
/// prediction averaged over every other column).
struct tree_variances {
  double total = 0;
  std::vector<double> marginal;  // one per group, >= 0
};

/// The most cells one group's marginal is computed on (the product over
/// its columns of the tree's split intervals): a categorical parameter of
/// k choices has up to 2^k (Optuna's fANOVA, whose computation this is,
/// crosses its one-hot columns the same way).
constexpr long long max_marginal_cells = 1LL << 22;

/// The fANOVA decomposition of tree `t` over the box `bounds` (per column
/// [low, high], low < high, holding every threshold of the tree), for each
/// group of columns in `groups` (a parameter's one-hot columns form one
/// group). Computes Optuna 3.1's _FanovaTree.get_marginal_variance without
/// its tree walk per cell: each leaf adds its value, weighted by its volume
/// in the other columns, to the cells its box covers (a difference array
/// for one column), which gives the same marginal at every cell. Cells are
/// weighted by their size. invalid_argument naming the group's index when
/// it would need more than max_marginal_cells cells.
result<tree_variances> decompose_tree(const regression_tree& t,
                                      const std::vector<std::pair<double, double>>& bounds,
                                      const std::vector<std::vector<int>>& groups);

} // namespace dtrain::tune
