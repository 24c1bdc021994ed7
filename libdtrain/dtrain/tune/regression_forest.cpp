#include "dtrain/tune/regression_forest.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "dtrain/core/random.hpp"

namespace dtrain::tune {

namespace {

// sklearn's constants: values closer than this are not split apart, and a
// node whose impurity is at most this is a leaf.
constexpr double feature_threshold = 1e-7;
constexpr double impurity_epsilon = std::numeric_limits<double>::epsilon();

// A node still to grow: its slot in the tree and its rows [begin, end).
struct pending_node {
  int32_t node;
  int32_t begin;
  int32_t end;
  int depth;
};

// The best split found so far: rows [begin, position) of `feature`'s
// order go left. proxy is sklearn's proxy improvement, sum_l^2/w_l +
// sum_r^2/w_r, larger is better.
struct split_choice {
  int feature = -1;
  int32_t position = 0;
  double threshold = 0;
  double proxy = -std::numeric_limits<double>::infinity();
};

// sklearn's threshold between two neighbouring values.
double midpoint(double low, double high) {
  double t = low / 2.0 + high / 2.0;
  if (t == high || std::isinf(t))
    t = low;
  return t;
}

// The bootstrap: n draws with replacement; a row's weight is its count.
std::vector<double> bootstrap_weights(int64_t rows, rng& r) {
  std::vector<double> w(static_cast<size_t>(rows), 0.0);
  for (int64_t i = 0; i < rows; ++i)
    w[r.below(static_cast<uint64_t>(rows))] += 1.0;
  return w;
}

// Weighted mean of the rows listed in [first, last), and whether their
// weighted variance is at most impurity_epsilon (two passes: a node of
// equal targets has exactly zero).
template <class Row>
std::pair<double, bool> mean_and_pure(const Row* first, const Row* last, const design_matrix& m,
                                      const std::vector<double>& w) {
  double wsum = 0, sum = 0;
  for (const Row* p = first; p != last; ++p) {
    wsum += w[*p];
    sum += w[*p] * m.y[*p];
  }
  const double mean = sum / wsum;
  double sq = 0;
  for (const Row* p = first; p != last; ++p)
    sq += w[*p] * (m.y[*p] - mean) * (m.y[*p] - mean);
  return {mean, sq / wsum <= impurity_epsilon};
}

// Appends two children to node `n` and returns their indices.
std::pair<int32_t, int32_t> add_children(regression_tree& t, int32_t n, int feature,
                                         double threshold) {
  const auto left = static_cast<int32_t>(t.size());
  t.resize(t.size() + 2);
  t[n].feature = feature;
  t[n].threshold = threshold;
  t[n].left = left;
  t[n].right = left + 1;
  return {left, left + 1};
}

/// Exact splits: each column's active rows kept sorted by value within
/// every node (a stable partition after each split), so a node's best
/// split is one scan per column.
class exact_builder {
public:
  exact_builder(const design_matrix& m, const std::vector<std::vector<int32_t>>& sorted,
                std::vector<double> w, rng& r, const forest_options& o)
      : m_(m), w_(std::move(w)), r_(r), max_depth_(o.max_depth), min_split_(o.min_samples_split) {
    for (int c = 0; c < m.columns; ++c)
      for (int32_t row : sorted[c])
        if (w_[row] > 0)
          order_.push_back(row);
    n_ = static_cast<int32_t>(order_.size() / m.columns);
    goes_left_.assign(static_cast<size_t>(m.rows), 0);
    scratch_.resize(static_cast<size_t>(n_));
    features_.resize(static_cast<size_t>(m.columns));
  }

  regression_tree build() {
    regression_tree t(1);
    t.reserve(2 * static_cast<size_t>(m_.rows));
    std::vector<pending_node> todo{{0, 0, n_, 0}};
    while (!todo.empty()) {
      pending_node p = todo.back();
      todo.pop_back();
      const int32_t* rows = column(0) + p.begin;
      auto [mean, pure] = mean_and_pure(rows, rows + (p.end - p.begin), m_, w_);
      t[p.node].value = mean;
      if (pure || p.depth >= max_depth_ || p.end - p.begin < std::max(2, min_split_))
        continue;
      split_choice best = best_split(p);
      if (best.feature < 0)
        continue;
      partition(p, best);
      auto [left, right] = add_children(t, p.node, best.feature, best.threshold);
      todo.push_back({right, best.position, p.end, p.depth + 1});
      todo.push_back({left, p.begin, best.position, p.depth + 1});
    }
    return t;
  }

private:
  int32_t* column(int c) { return order_.data() + static_cast<size_t>(c) * n_; }

  split_choice best_split(const pending_node& p) {
    std::iota(features_.begin(), features_.end(), 0);
    r_.shuffle(features_.data(), static_cast<int64_t>(features_.size()));
    double wsum = 0, sum = 0;
    for (int32_t i = p.begin; i < p.end; ++i) {
      const int32_t row = column(0)[i];
      wsum += w_[row];
      sum += w_[row] * m_.y[row];
    }
    split_choice best;
    for (int c : features_) {
      const int32_t* order = column(c);
      double wl = 0, sl = 0;
      for (int32_t i = p.begin; i + 1 < p.end; ++i) {
        const int32_t row = order[i];
        wl += w_[row];
        sl += w_[row] * m_.y[row];
        const double here = m_.at(row, c), next = m_.at(order[i + 1], c);
        if (next <= here + feature_threshold)
          continue;
        const double wr = wsum - wl, sr = sum - sl;
        const double proxy = sl * sl / wl + sr * sr / wr;
        if (proxy > best.proxy)
          best = {c, i + 1, midpoint(here, next), proxy};
      }
    }
    return best;
  }

  // Every column's order keeps its sorting within each child.
  void partition(const pending_node& p, const split_choice& s) {
    const int32_t* chosen = column(s.feature);
    for (int32_t i = p.begin; i < p.end; ++i)
      goes_left_[chosen[i]] = i < s.position;
    for (int c = 0; c < m_.columns; ++c) {
      if (c == s.feature)
        continue;
      int32_t* order = column(c);
      int32_t left = p.begin, right = 0;
      for (int32_t i = p.begin; i < p.end; ++i) {
        if (goes_left_[order[i]])
          order[left++] = order[i];
        else
          scratch_[right++] = order[i];
      }
      std::copy(scratch_.begin(), scratch_.begin() + right, order + left);
    }
  }

  const design_matrix& m_;
  std::vector<double> w_;
  rng& r_;
  int max_depth_;
  int min_split_;
  int32_t n_ = 0;                // active (drawn) rows
  std::vector<int32_t> order_;   // per column, its n_ active rows
  std::vector<char> goes_left_;  // by row
  std::vector<int32_t> scratch_;
  std::vector<int> features_;
};

/// The bins of every column for histogram splits: each row's bin per
/// column (row-major, so one pass over a node's rows fills every column's
/// histogram) and the thresholds between neighbouring bins.
struct binned_columns {
  int stride = 1;                               // bins of the widest column
  std::vector<uint16_t> bin;                    // [row * columns + column]
  std::vector<std::vector<double>> threshold;   // [column][k]: between bins k and k+1
};

// Cuts between bins: every distinct value its own bin when they are few,
// else quantiles of the distinct values (bins of about equal numbers of them).
std::vector<double> bin_edges(std::vector<double> values, int max_bins) {
  std::sort(values.begin(), values.end());
  values.erase(std::unique(values.begin(), values.end()), values.end());
  const auto distinct = static_cast<int64_t>(values.size());
  std::vector<double> edges;
  if (distinct <= max_bins) {
    for (int64_t k = 0; k + 1 < distinct; ++k)
      edges.push_back(midpoint(values[k], values[k + 1]));
    return edges;
  }
  for (int k = 1; k < max_bins; ++k) {
    const int64_t at = (k * distinct + max_bins / 2) / max_bins;
    if (at > 0 && at < distinct)
      edges.push_back(midpoint(values[at - 1], values[at]));
  }
  edges.erase(std::unique(edges.begin(), edges.end()), edges.end());
  return edges;
}

binned_columns make_bins(const design_matrix& m, int max_bins) {
  binned_columns b;
  b.threshold.resize(static_cast<size_t>(m.columns));
  b.bin.resize(static_cast<size_t>(m.rows) * m.columns);
  for (int c = 0; c < m.columns; ++c) {
    const auto first = m.x.begin() + static_cast<int64_t>(c) * m.rows;
    auto& edges = b.threshold[c] = bin_edges({first, first + m.rows}, max_bins);
    b.stride = std::max(b.stride, static_cast<int>(edges.size()) + 1);
    for (int64_t r = 0; r < m.rows; ++r)
      b.bin[r * m.columns + c] = static_cast<uint16_t>(
          std::lower_bound(edges.begin(), edges.end(), m.at(r, c)) - edges.begin());
  }
  return b;
}

/// Histogram splits: a node's rows are counted into their bins, every
/// column in one pass, and a split falls between two bins.
class histogram_builder {
public:
  histogram_builder(const design_matrix& m, const binned_columns& bins, std::vector<double> w,
                    rng& r, const forest_options& o)
      : m_(m), bins_(bins), w_(std::move(w)), r_(r), max_depth_(o.max_depth),
        min_split_(o.min_samples_split) {
    for (int32_t row = 0; row < m.rows; ++row)
      if (w_[row] > 0)
        rows_.push_back(row);
    hist_.resize(2 * static_cast<size_t>(bins.stride) * m.columns);
    features_.resize(static_cast<size_t>(m.columns));
  }

  regression_tree build() {
    regression_tree t(1);
    t.reserve(2 * rows_.size());
    std::vector<pending_node> todo{{0, 0, static_cast<int32_t>(rows_.size()), 0}};
    while (!todo.empty()) {
      pending_node p = todo.back();
      todo.pop_back();
      const bool pure = fill(p);
      t[p.node].value = sum_ / wsum_;
      if (pure || p.depth >= max_depth_ || p.end - p.begin < std::max(2, min_split_))
        continue;
      auto [best, best_bin] = best_split();
      if (best.feature < 0)
        continue;
      const uint16_t* codes = bins_.bin.data() + best.feature;
      const int columns = m_.columns;
      const auto bin = best_bin;  // C++17 lambdas cannot capture a structured binding (clang)
      auto middle = std::partition(rows_.begin() + p.begin, rows_.begin() + p.end, [&](int32_t row) {
        return codes[static_cast<size_t>(row) * columns] <= bin;
      });
      const auto position = static_cast<int32_t>(middle - rows_.begin());
      auto [left, right] = add_children(t, p.node, best.feature, best.threshold);
      todo.push_back({right, position, p.end, p.depth + 1});
      todo.push_back({left, p.begin, position, p.depth + 1});
    }
    return t;
  }

private:
  // The node's histograms (weight, weighted sum per bin and column), its
  // totals, and whether its targets are all equal.
  bool fill(const pending_node& p) {
    std::fill(hist_.begin(), hist_.end(), 0.0);
    wsum_ = sum_ = 0;
    double low = m_.y[rows_[p.begin]], high = low;
    const int columns = m_.columns;
    const size_t stride = static_cast<size_t>(bins_.stride);
    for (int32_t i = p.begin; i < p.end; ++i) {
      const int32_t row = rows_[i];
      const double w = w_[row], y = m_.y[row], wy = w * y;
      wsum_ += w;
      sum_ += wy;
      low = std::min(low, y);
      high = std::max(high, y);
      const uint16_t* code = bins_.bin.data() + static_cast<size_t>(row) * columns;
      for (int c = 0; c < columns; ++c) {
        double* h = hist_.data() + 2 * (c * stride + code[c]);
        h[0] += w;
        h[1] += wy;
      }
    }
    return low == high;
  }

  // The best split and the last bin that goes left. A split falls between
  // two bins that hold rows of this node (k1 and k2, those between them
  // empty here); its threshold is the edge halfway between them, as the
  // exact split takes the midpoint.
  std::pair<split_choice, int> best_split() {
    std::iota(features_.begin(), features_.end(), 0);
    r_.shuffle(features_.data(), static_cast<int64_t>(features_.size()));
    split_choice best;
    int best_bin = -1;
    for (int c : features_) {
      const size_t nbins = bins_.threshold[c].size() + 1;
      const double* h = hist_.data() + 2 * c * static_cast<size_t>(bins_.stride);
      double wl = 0, sl = 0;
      int k1 = -1;
      for (size_t k2 = 0; k2 < nbins; ++k2) {
        if (h[2 * k2] == 0)
          continue;
        if (k1 >= 0) {
          // Weights are whole counts, so wr is exact and positive here.
          const double wr = wsum_ - wl, sr = sum_ - sl;
          const double proxy = sl * sl / wl + sr * sr / wr;
          if (proxy > best.proxy) {
            const auto edge = (static_cast<size_t>(k1) + k2 - 1) / 2;
            best = {c, 0, bins_.threshold[c][edge], proxy};
            best_bin = k1;
          }
        }
        wl += h[2 * k2];
        sl += h[2 * k2 + 1];
        k1 = static_cast<int>(k2);
      }
    }
    return {best, best_bin};
  }

  const design_matrix& m_;
  const binned_columns& bins_;
  std::vector<double> w_;
  rng& r_;
  int max_depth_;
  int min_split_;
  std::vector<int32_t> rows_;  // active rows, grouped by node
  std::vector<double> hist_;   // [(column * stride + bin) * 2 + {weight, sum}]
  double wsum_ = 0, sum_ = 0;
  std::vector<int> features_;
};

// Each column's rows by value (ties by row), once for the whole forest.
std::vector<std::vector<int32_t>> sorted_rows(const design_matrix& m) {
  std::vector<std::vector<int32_t>> sorted(static_cast<size_t>(m.columns));
  for (int c = 0; c < m.columns; ++c) {
    auto& order = sorted[c];
    order.resize(static_cast<size_t>(m.rows));
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(),
                     [&](int32_t a, int32_t b) { return m.at(a, c) < m.at(b, c); });
  }
  return sorted;
}

} // namespace

struct forest_fitter::prepared {
  std::vector<std::vector<int32_t>> sorted;  // exact splits
  binned_columns bins;                       // histogram splits
};

forest_fitter::forest_fitter(const design_matrix& m, const forest_options& o)
    : m_(m), o_(o) {
  auto p = std::make_shared<prepared>();
  if (o.max_bins <= 1)
    p->sorted = sorted_rows(m);
  else
    p->bins = make_bins(m, std::min(o.max_bins, 65535));
  prepared_ = std::move(p);
}

regression_tree forest_fitter::tree(int i) const {
  // Each tree its own stream: tree i is the same whatever the tree count.
  rng r(hash64(o_.seed, static_cast<uint64_t>(i)));
  std::vector<double> w = bootstrap_weights(m_.rows, r);
  if (o_.max_bins <= 1)
    return exact_builder(m_, prepared_->sorted, std::move(w), r, o_).build();
  return histogram_builder(m_, prepared_->bins, std::move(w), r, o_).build();
}

std::vector<regression_tree> fit_forest(const design_matrix& m, const forest_options& o) {
  forest_fitter fitter(m, o);
  std::vector<regression_tree> forest;
  for (int i = 0; i < o.trees; ++i)
    forest.push_back(fitter.tree(i));
  return forest;
}

} // namespace dtrain::tune
