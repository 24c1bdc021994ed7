#include "dtrain/tune/search.hpp"

#include <algorithm>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace dtrain::tune {
namespace {

// Ray's BasicVariantGenerator with constant_grid_search = false: trial i
// takes grid point i mod |grid| and fresh draws of the random dimensions.
// The grid's points are decoded one at a time, never held all at once.
class variant_searcher final : public searcher {
public:
  variant_searcher(space s, int64_t num_samples, uint64_t seed)
    : space_(std::move(s)), grid_(space_), rng_(seed) {
    if (__builtin_mul_overflow(num_samples, grid_.size(), &total_))
      total_ = INT64_MAX;  // variant_trial_count refuses this; a sweep never gets that far
  }

  suggestion suggest(const std::string& trial_id) override {
    (void)trial_id;
    suggestion out;
    if (given_ >= total_)
      return out;  // finished
    out.what = suggestion::kind::trial;
    out.configuration = space_.sample(rng_);
    for (auto& [name, v] : grid_.point(given_))
      out.configuration[name] = std::move(v);
    ++given_;
    return out;
  }

  int64_t total() const override { return total_; }

private:
  space space_;
  grid_enumerator grid_;  // a space without a grid has one empty point
  int64_t total_ = 0;
  int64_t given_ = 0;
  rng rng_;
};

} // namespace

result<int64_t> variant_trial_count(const space& s, int64_t num_samples) {
  const int64_t points = s.grid_size();
  int64_t total = 0;
  if (__builtin_mul_overflow(std::max<int64_t>(num_samples, 0), points, &total))
    return invalid_argument("num_samples: " + std::to_string(num_samples) +
                            " repetitions of a grid of " + std::to_string(points) +
                            " points are more trials than can be counted (over 2^63 - 1)");
  return total;
}

std::unique_ptr<searcher> make_variant_searcher(space s, int64_t num_samples, uint64_t seed) {
  return std::make_unique<variant_searcher>(std::move(s), num_samples < 0 ? 0 : num_samples, seed);
}

} // namespace dtrain::tune
