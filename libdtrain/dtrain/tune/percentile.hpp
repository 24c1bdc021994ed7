#pragma once

#include <vector>

namespace dtrain::tune {

/// numpy.nanpercentile(values, q) with numpy's default "linear" method,
/// computed with the same floating-point steps as numpy 1.24 (the index
/// (n - 1) * (q / 100), and its lerp that works from the upper neighbour
/// when the fraction is >= 0.5), so that comparisons against it decide as
/// Optuna and Ray do, to the last bit. NaNs are skipped; NaN when none is
/// left. q in [0, 100]. Used by the ASHA percentile rule and the median
/// rule.
double nan_percentile(std::vector<double> values, double q);

} // namespace dtrain::tune
