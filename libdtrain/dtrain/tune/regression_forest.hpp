#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

namespace dtrain::tune {

/// Trials as a regression problem: `rows` observations of `columns`
/// features, column-major (x[c * rows + r]), and one target each. A plain
/// value; importance.cpp builds it from a space's trials.
struct design_matrix {
  int64_t rows = 0;
  int columns = 0;
  std::vector<double> x;
  std::vector<double> y;

  double at(int64_t row, int column) const { return x[static_cast<size_t>(column) * rows + row]; }
};

/// One node of a binary regression tree: an inner node sends a point left
/// when x[feature] <= threshold; a leaf (feature -1) predicts `value`.
struct tree_node {
  int32_t feature = -1;
  double threshold = 0;
  int32_t left = -1;
  int32_t right = -1;
  double value = 0;  // the weighted mean of the node's targets
};

/// Nodes with the root first; children come after their parent.
using regression_tree = std::vector<tree_node>;

/// How fit_forest grows its trees.
struct forest_options {
  int trees = 64;
  int max_depth = 64;
  /// 0: exact splits, as sklearn's RandomForestRegressor: every midpoint
  /// between two neighbouring distinct values is a candidate. > 1: at most
  /// this many bins per column (quantiles of the column's distinct values,
  /// computed once for the forest), splits only between bins.
  int max_bins = 0;
  /// A node of fewer distinct rows is a leaf (sklearn's min_samples_split).
  int min_samples_split = 2;
  uint64_t seed = 0;
};

/// A random forest regressor in the shape of sklearn's
/// RandomForestRegressor with its defaults (what Optuna 3.1's fANOVA
/// fits): each tree on a bootstrap sample of the rows (n draws with
/// replacement, a row drawn k times weighing k), every feature a candidate
/// at every node (max_features = 1.0) in a random order (the first of equal
/// best splits wins), the split that most reduces the weighted squared
/// error, min_samples_split 2 and min_samples_leaf 1 (counted in distinct
/// rows), a node whose targets are all equal is a leaf. Thresholds are the
/// midpoint of the two values a split falls between (the lower value when
/// the midpoint rounds to the upper one); values closer than 1e-7 are not
/// split apart (sklearn's FEATURE_THRESHOLD).
///
/// Deterministic: the same matrix, options and seed give the same trees on
/// every platform (dtrain::rng, no std distributions). The random draws are
/// dtrain's own, so the trees are not sklearn's trees for the same seed.
/// Precondition: m.rows >= 1, m.columns >= 1, every value finite.
std::vector<regression_tree> fit_forest(const design_matrix& m, const forest_options& o);

/// fit_forest one tree at a time: the columns are sorted (exact) or binned
/// (histogram) once at construction; tree(i) is fit_forest's tree i.
/// tree() is const and thread-safe, so trees may be grown in parallel.
/// Holds a reference to `m`, which must outlive it.
class forest_fitter {
public:
  forest_fitter(const design_matrix& m, const forest_options& o);
  regression_tree tree(int i) const;

private:
  struct prepared;
  const design_matrix& m_;
  forest_options o_;
  std::shared_ptr<const prepared> prepared_;
};

} // namespace dtrain::tune
