#include "dtrain/tune/functional_anova.hpp"

#include <algorithm>
#include <cstddef>

#include "dtrain/core/check.hpp"

namespace dtrain::tune {

namespace {

// The tree's leaves with their boxes in normalized coordinates (each
// column's bounds mapped to [0, 1]), and each column's split thresholds.
struct leaf_boxes {
  int columns = 0;
  std::vector<double> value;
  std::vector<double> low, high;             // [leaf * columns + column]
  std::vector<std::vector<double>> splits;   // per column, sorted, distinct
};

class leaf_collector {
public:
  leaf_collector(const regression_tree& t, const std::vector<std::pair<double, double>>& bounds)
      : t_(t), bounds_(bounds) {
    const auto d = static_cast<int>(bounds.size());
    out_.columns = d;
    out_.splits.resize(static_cast<size_t>(d));
    low_.assign(static_cast<size_t>(d), 0.0);
    high_.assign(static_cast<size_t>(d), 1.0);
  }

  leaf_boxes collect() {
    walk(0);
    for (auto& s : out_.splits) {
      std::sort(s.begin(), s.end());
      s.erase(std::unique(s.begin(), s.end()), s.end());
    }
    return std::move(out_);
  }

private:
  double normalized(int column, double x) const {
    auto [lo, hi] = bounds_[column];
    return (x - lo) / (hi - lo);
  }

  void walk(int32_t n) {
    const tree_node& node = t_[n];
    if (node.feature < 0) {
      out_.value.push_back(node.value);
      out_.low.insert(out_.low.end(), low_.begin(), low_.end());
      out_.high.insert(out_.high.end(), high_.begin(), high_.end());
      return;
    }
    const int f = node.feature;
    const double at = normalized(f, node.threshold);
    out_.splits[f].push_back(at);
    const double saved_high = high_[f], saved_low = low_[f];
    high_[f] = at;  // as Optuna: the child's interval ends at the threshold
    walk(node.left);
    high_[f] = saved_high;
    low_[f] = at;
    walk(node.right);
    low_[f] = saved_low;
  }

  const regression_tree& t_;
  const std::vector<std::pair<double, double>>& bounds_;
  leaf_boxes out_;
  std::vector<double> low_, high_;
};

// Weighted variance of values; 0 when the weights sum to 0.
double weighted_variance(const std::vector<double>& values, const std::vector<double>& weights) {
  double wsum = 0, sum = 0;
  for (size_t i = 0; i < values.size(); ++i) {
    wsum += weights[i];
    sum += weights[i] * values[i];
  }
  if (!(wsum > 0))
    return 0;
  const double mean = sum / wsum;
  double sq = 0;
  for (size_t i = 0; i < values.size(); ++i)
    sq += weights[i] * (values[i] - mean) * (values[i] - mean);
  return std::max(0.0, sq / wsum);
}

// A group's grid: per column its lines (0, the splits, 1).
struct group_grid {
  std::vector<int> columns;
  std::vector<std::vector<double>> lines;
  std::vector<long long> stride;  // cell index = sum of interval index * stride
  long long cells = 1;
};

result<group_grid> make_grid(const leaf_boxes& b, const std::vector<int>& columns, size_t index) {
  group_grid g;
  g.columns = columns;
  for (int c : columns) {
    std::vector<double> lines{0.0};
    lines.insert(lines.end(), b.splits[c].begin(), b.splits[c].end());
    lines.push_back(1.0);
    lines.erase(std::unique(lines.begin(), lines.end()), lines.end());
    g.stride.push_back(g.cells);
    g.cells *= static_cast<long long>(lines.size() - 1);
    if (g.cells > max_marginal_cells)
      return invalid_argument("fANOVA: parameter " + std::to_string(index) + " needs more than " +
                              std::to_string(max_marginal_cells) +
                              " marginal cells (a categorical of too many choices)");
    g.lines.push_back(std::move(lines));
  }
  return g;
}

size_t line_index(const std::vector<double>& lines, double x) {
  return static_cast<size_t>(std::lower_bound(lines.begin(), lines.end(), x) - lines.begin());
}

// The variance over the grid's cells of the marginal num / den, each cell
// weighted by its size.
double cell_variance(const group_grid& g, const std::vector<double>& num,
                     const std::vector<double>& den) {
  const size_t k = g.columns.size();
  std::vector<double> values, weights;
  for (size_t cell = 0; cell < static_cast<size_t>(g.cells); ++cell) {
    double size = 1;
    for (size_t j = 0; j < k; ++j) {
      const size_t i = cell / static_cast<size_t>(g.stride[j]) % (g.lines[j].size() - 1);
      size *= g.lines[j][i + 1] - g.lines[j][i];
    }
    if (size > 0 && den[cell] > 0) {
      values.push_back(num[cell] / den[cell]);
      weights.push_back(size);
    }
  }
  return weighted_variance(values, weights);
}

// Adds value * weight to num and weight to den at every cell of the box
// [from, to) of the grid, the first column fastest.
void add_box(const group_grid& g, const std::vector<size_t>& from, const std::vector<size_t>& to,
             double value, double weight, std::vector<double>& num, std::vector<double>& den) {
  const size_t k = from.size();
  std::vector<size_t> at = from;
  while (true) {
    size_t cell = 0;
    for (size_t j = 0; j < k; ++j)
      cell += at[j] * static_cast<size_t>(g.stride[j]);
    num[cell] += value * weight;
    den[cell] += weight;
    size_t j = 0;
    while (j < k && ++at[j] == to[j])
      at[j] = from[j], ++j;
    if (j == k)
      return;
  }
}

// The variance of the group's marginal over its grid's cells.
double marginal_variance(const leaf_boxes& b, const group_grid& g) {
  const auto cells = static_cast<size_t>(g.cells);
  const size_t k = g.columns.size();
  std::vector<double> num(cells + 1, 0.0), den(cells + 1, 0.0);
  std::vector<size_t> from(k), to(k);
  std::vector<char> in_group(static_cast<size_t>(b.columns), 0);
  for (int c : g.columns)
    in_group[c] = 1;
  for (size_t leaf = 0; leaf < b.value.size(); ++leaf) {
    const double* lo = &b.low[leaf * b.columns];
    const double* hi = &b.high[leaf * b.columns];
    double other = 1;  // the leaf's volume in the columns outside the group
    for (int c = 0; c < b.columns; ++c)
      if (!in_group[c])
        other *= hi[c] - lo[c];
    if (!(other > 0))
      continue;
    for (size_t j = 0; j < k; ++j) {
      from[j] = line_index(g.lines[j], lo[g.columns[j]]);
      to[j] = line_index(g.lines[j], hi[g.columns[j]]);
    }
    if (k == 1) {  // a difference array, summed below
      num[from[0]] += b.value[leaf] * other;
      num[to[0]] -= b.value[leaf] * other;
      den[from[0]] += other;
      den[to[0]] -= other;
      continue;
    }
    add_box(g, from, to, b.value[leaf], other, num, den);
  }
  if (k == 1)
    for (size_t i = 1; i < cells; ++i)
      num[i] += num[i - 1], den[i] += den[i - 1];
  return cell_variance(g, num, den);
}

} // namespace

result<tree_variances> decompose_tree(const regression_tree& t,
                                      const std::vector<std::pair<double, double>>& bounds,
                                      const std::vector<std::vector<int>>& groups) {
  leaf_boxes b = leaf_collector(t, bounds).collect();
  tree_variances out;
  std::vector<double> volume(b.value.size(), 1.0);
  for (size_t leaf = 0; leaf < b.value.size(); ++leaf)
    for (int c = 0; c < b.columns; ++c)
      volume[leaf] *= b.high[leaf * b.columns + c] - b.low[leaf * b.columns + c];
  out.total = weighted_variance(b.value, volume);
  for (size_t i = 0; i < groups.size(); ++i) {
    DTRAIN_ASSIGN_OR_RETURN(group_grid g, make_grid(b, groups[i], i));
    out.marginal.push_back(out.total > 0 ? marginal_variance(b, g) : 0.0);
  }
  return out;
}

} // namespace dtrain::tune
