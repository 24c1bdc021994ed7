// The TPE searcher (tpe.hpp): Optuna 3.1's TPESampler, independent or
// multivariate, with or without the constant liar.
// Written from the algorithm as Optuna 3.1 (samplers/_tpe/) defines it:
// its gamma, its weights, its Parzen bandwidths and prior, its truncated
// normals; the numerics are our own.
#include "dtrain/tune/tpe.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <numeric>
#include <tuple>
#include <utility>
#include <vector>

#include "dtrain/tune/parzen_estimator.hpp"
#include "dtrain/tune/tpe_split.hpp"

namespace dtrain::tune {
namespace {

using detail::dimension;
using detail::parzen_estimator;

constexpr double inf = std::numeric_limits<double>::infinity();

// ---------------------------------------------------------------------------
// The searcher.

struct trial_record {
  config configuration;
  bool has_value = false;
  double last_value = 0;  // the metric of the last report that carried it
  int64_t last_epoch = 0;
  std::map<std::string, double> last;  // every metric, as its last report gave it
  bool ended = false;
  trial_end how = trial_end::completed;
};

class tpe_searcher final : public searcher {
public:
  tpe_searcher(const space& s, const tpe_options& o)
    : options_(o), random_(o.seed), model_(o.seed) {
    for (const auto& [name, d] : s.domains())
      dims_.push_back(detail::make_dimension(name, d));
  }

  suggestion suggest(const std::string& trial_id) override {
    suggestion out;
    if (static_cast<int64_t>(order_.size()) >= std::max<int64_t>(options_.num_samples, 0))
      return out;  // finished
    // Chronological, as Optuna lists trials: the ended ones, and with the
    // constant liar the running ones too (they only ever count as bad).
    std::vector<const trial_record*> observed;
    int64_t ended = 0;
    for (const auto& id : order_) {
      const trial_record& t = trials_.at(id);
      ended += t.ended;
      if (t.ended || options_.constant_liar)
        observed.push_back(&t);
    }
    // Optuna's n, which the random startup counts: the observations that
    // are not running. With several objectives only completed trials that
    // reported every objective are observations; a failed or stopped trial
    // does not end the startup.
    const int64_t n =
        multi_objective() ? static_cast<int64_t>(observations(observed).size()) : ended;
    out.what = suggestion::kind::trial;
    // The startup draws are Optuna's RandomSampler's, in name order.
    out.configuration = n < options_.startup_trials
                            ? detail::random_sampler_config(dims_, random_)
                            : model_draw(observed);
    trials_[trial_id].configuration = out.configuration;
    order_.push_back(trial_id);
    return out;
  }

  void on_result(const report& r) override {
    auto trial = trials_.find(r.trial);
    auto metric = r.metrics.find(options_.metric);
    if (trial == trials_.end() || metric == r.metrics.end())
      return;
    for (const auto& [name, v] : r.metrics)
      trial->second.last[name] = v;
    trial->second.has_value = true;
    trial->second.last_value = metric->second;
    trial->second.last_epoch = r.epoch;
  }

  void on_end(const std::string& trial_id, trial_end how) override {
    auto trial = trials_.find(trial_id);
    if (trial == trials_.end())
      return;
    trial->second.ended = true;
    trial->second.how = how;
  }

  int64_t total() const override { return std::max<int64_t>(options_.num_samples, 0); }

private:
  // Optuna's ordering key, smaller is better: completed trials by value,
  // then stopped ones (the later they stopped the better, then by value),
  // then failed trials, trials without a finite value and trials that
  // never reported, then (constant liar) running trials, in trial order.
  std::tuple<int, double, double> rank_key(const trial_record& t) const {
    if (!t.ended)
      return {3, 0, 0};
    if (t.how == trial_end::failed || !t.has_value || std::isnan(t.last_value))
      return {2, 0, 0};
    const double loss = options_.direction == mode::min ? t.last_value : -t.last_value;
    if (t.how == trial_end::stopped)
      return {1, -static_cast<double>(t.last_epoch), loss};
    return {0, 0, loss};
  }

  bool multi_objective() const { return options_.objectives.size() > 1; }

  // Optuna's observations, in trial order: with one objective the ended
  // trials (and the liar's running ones); with several only completed
  // trials that reported every objective (Optuna skips pruned and running
  // trials then, and a NaN objective fails the trial).
  std::vector<const trial_record*> observations(const std::vector<const trial_record*>& all) const {
    if (!multi_objective())
      return all;
    std::vector<const trial_record*> out;
    for (const auto* t : all) {
      bool complete = t->ended && t->how == trial_end::completed;
      for (const auto& o : options_.objectives) {
        auto v = t->last.find(o.metric);
        complete = complete && v != t->last.end() && !std::isnan(v->second);
      }
      if (complete)
        out.push_back(t);
    }
    return out;
  }

  // A trial's total constraint violation (0: feasible); infinite while it
  // runs or when it never reported a constrained metric.
  double violation_of(const trial_record& t) const {
    if (!t.ended)
      return inf;
    const auto values = constraint_values_of(options_.constraints, t.last);
    for (double v : values)
      if (std::isnan(v))
        return inf;
    return violation(values);
  }

  // The good ones among `subset` (indices into observed) by Optuna's
  // single-objective ordering: the best n_below by rank_key.
  detail::tpe_split rank_split(const std::vector<const trial_record*>& observed,
                               const std::vector<size_t>& subset, size_t n_below) const {
    std::vector<size_t> ranked(subset.size());
    std::iota(ranked.begin(), ranked.end(), 0);
    std::stable_sort(ranked.begin(), ranked.end(), [&](size_t a, size_t b) {
      return rank_key(*observed[subset[a]]) < rank_key(*observed[subset[b]]);
    });
    detail::tpe_split out;
    for (size_t i = 0; i < ranked.size(); ++i)
      (i < n_below ? out.below : out.above).push_back(ranked[i]);
    std::sort(out.below.begin(), out.below.end());
    std::sort(out.above.begin(), out.above.end());
    return out;
  }

  // Which observations are good, and (several objectives) their weights.
  detail::tpe_split split(const std::vector<const trial_record*>& observed, size_t n_below) const {
    std::vector<point> losses;
    if (multi_objective())
      for (const auto* t : observed) {
        std::vector<double> values;
        std::vector<mode> directions;
        for (const auto& o : options_.objectives) {
          values.push_back(t->last.at(o.metric));
          directions.push_back(o.direction);
        }
        losses.push_back(to_minimize(values, directions));
      }
    auto feasible_split = [&](const std::vector<size_t>& subset, size_t below) {
      if (!multi_objective())
        return rank_split(observed, subset, below);
      std::vector<point> part;
      for (size_t i : subset)
        part.push_back(losses[i]);
      return detail::split_objectives(part, below);
    };
    std::vector<size_t> everyone(observed.size());
    std::iota(everyone.begin(), everyone.end(), 0);
    std::vector<double> violations;
    for (const auto* t : observed)
      if (!options_.constraints.empty())
        violations.push_back(violation_of(*t));
    detail::tpe_split out = violations.empty()
                                ? feasible_split(everyone, n_below)
                                : detail::split_with_violations(violations, n_below, feasible_split);
    if (multi_objective())
      out.below_weights = detail::below_weights(losses, out.below, violations);
    return out;
  }

  config model_draw(const std::vector<const trial_record*>& all) {
    // gamma(n) = min(ceil(n / 10), 25) best of the n ended trials are
    // "below" (good); running ones (the liar's) never are.
    const std::vector<const trial_record*> observed = observations(all);
    size_t n_ended = 0;
    for (const auto* t : observed)
      n_ended += t->ended;
    const size_t n_below = std::min<size_t>((n_ended + 9) / 10, 25);
    const detail::tpe_split parts = split(observed, n_below);

    config out;
    std::vector<const dimension*> free;
    for (const auto& dim : dims_) {
      if (dim.type == dimension::kind::fixed)
        out[dim.name] = dim.fixed_value;
      else
        free.push_back(&dim);
    }
    if (!options_.multivariate) {
      for (const dimension* dim : free)
        out[dim->name] = best_candidate({dim}, observed, parts, detail::bandwidth::neighbours)[0];
      return out;
    }
    // One joint estimator: every trial holds every hyperparameter of a
    // dtrain space, so Optuna's group decomposition has one part.
    const auto values = best_candidate(free, observed, parts, detail::bandwidth::scott);
    for (size_t d = 0; d < free.size(); ++d)
      out[free[d]->name] = values[d];
    return out;
  }

  // ei_candidates draws from l (the good trials' estimator over `dims`),
  // each scored by log l(x) - log g(x); the first best wins. The good
  // trials keep the split's order (it decides which component a draw
  // picks); trials that lack one of `dims` (or hold a value from another
  // space) are left out, as Optuna masks them.
  std::vector<value> best_candidate(const std::vector<const dimension*>& dims,
                                    const std::vector<const trial_record*>& observed,
                                    const detail::tpe_split& parts, detail::bandwidth rule) {
    auto row_of = [&](size_t i, std::vector<double>& row) {
      row.clear();
      for (const dimension* dim : dims) {
        auto v = observed[i]->configuration.find(dim->name);
        row.push_back(v == observed[i]->configuration.end() ? std::nan("")
                                                             : dim->to_internal(v->second));
      }
      return std::none_of(row.begin(), row.end(), [](double x) { return std::isnan(x); });
    };
    std::vector<std::vector<double>> below, above;
    std::vector<double> below_weights, row;
    for (size_t k = 0; k < parts.below.size(); ++k)
      if (row_of(parts.below[k], row)) {
        below.push_back(row);
        if (!parts.below_weights.empty())
          below_weights.push_back(parts.below_weights[k]);
      }
    for (size_t i : parts.above)
      if (row_of(i, row))
        above.push_back(row);
    const parzen_estimator good(dims, below, rule, below_weights), bad(dims, above, rule);
    const auto candidates =
        good.sample(model_, static_cast<size_t>(std::max<int64_t>(options_.ei_candidates, 1)));
    double best_score = -inf;
    std::vector<double> best_x;
    for (size_t i = 0; i < candidates.size(); ++i) {
      std::vector<double> x = candidates[i];
      for (size_t d = 0; d < dims.size(); ++d)
        x[d] = dims[d]->to_internal(dims[d]->to_value(x[d]));  // as the domain rounds it
      const double score = good.log_pdf(x) - bad.log_pdf(x);
      if (i == 0 || score > best_score) {
        best_score = score;
        best_x = std::move(x);
      }
    }
    std::vector<value> out;
    for (size_t d = 0; d < dims.size(); ++d)
      out.push_back(dims[d]->to_value(best_x[d]));
    return out;
  }

  tpe_options options_;
  std::vector<dimension> dims_;  // in name order
  std::map<std::string, trial_record> trials_;
  std::vector<std::string> order_;  // trial ids in suggestion order
  // Two NumPy streams seeded alike, as Optuna's TPESampler holds them.
  detail::numpy_random random_;  // its RandomSampler's: the startup draws
  detail::numpy_random model_;   // its own: the estimators' draws
};

} // namespace

std::unique_ptr<searcher> make_tpe(const space& s, const tpe_options& o) {
  return std::make_unique<tpe_searcher>(s, o);
}

} // namespace dtrain::tune
