#include "dtrain/tune/search.hpp"

#include <utility>
#include <vector>

namespace dtrain::tune {
namespace {

// Ray's BasicVariantGenerator with constant_grid_search = false: trial i
// takes grid point i mod |grid| and fresh draws of the random dimensions.
class variant_searcher final : public searcher {
public:
  variant_searcher(space s, int64_t num_samples, uint64_t seed)
    : space_(std::move(s)), points_(space_.grid_points()),
      total_(num_samples * static_cast<int64_t>(points_.size())), rng_(seed) {}

  suggestion suggest(const std::string& trial_id) override {
    (void)trial_id;
    suggestion out;
    if (given_ >= total_)
      return out;  // finished
    out.what = suggestion::kind::trial;
    out.configuration = space_.sample(rng_);
    for (const auto& [name, v] : points_[static_cast<size_t>(given_) % points_.size()])
      out.configuration[name] = v;
    ++given_;
    return out;
  }

  int64_t total() const override { return total_; }

private:
  space space_;
  std::vector<config> points_;  // never empty: a space without a grid has one empty point
  int64_t total_;
  int64_t given_ = 0;
  rng rng_;
};

} // namespace

std::unique_ptr<searcher> make_variant_searcher(space s, int64_t num_samples, uint64_t seed) {
  return std::make_unique<variant_searcher>(std::move(s), num_samples < 0 ? 0 : num_samples, seed);
}

} // namespace dtrain::tune
