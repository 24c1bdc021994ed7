// The NSGA-II searcher (nsga2.hpp): Optuna 3.1's NSGAIISampler with
// UniformCrossover. Written from the algorithm as Optuna 3.1
// (samplers/nsgaii/) defines it; the code is our own.
#include "dtrain/tune/nsga2.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "dtrain/core/check.hpp"
#include "dtrain/tune/parzen_estimator.hpp"

namespace dtrain::tune {

status validate(const nsga2_options& o) {
  if (o.objectives.empty())
    return invalid_argument("metrics: NSGA-II needs at least one objective");
  if (o.population_size < 2)
    return invalid_argument("nsga2.population_size: must be at least 2, got " +
                            std::to_string(o.population_size));
  auto probability = [](const char* field, double p, bool negative_ok) {
    if ((p >= 0 && p <= 1) || (negative_ok && p < 0))
      return status::ok();
    return invalid_argument(std::string(field) + ": must be in [0, 1], got " + to_string(value{p}));
  };
  DTRAIN_RETURN_IF_ERROR(probability("nsga2.mutation_prob", o.mutation_prob, true));
  DTRAIN_RETURN_IF_ERROR(probability("nsga2.crossover_prob", o.crossover_prob, false));
  return probability("nsga2.swapping_prob", o.swapping_prob, false);
}

namespace {

using detail::dimension;

struct member {
  config configuration;
  int64_t generation = 0;
  std::map<std::string, double> last;  // each metric's last reported value
  bool ended = false;
  trial_end how = trial_end::completed;
};

// A completed trial as the population sees it.
struct individual {
  const member* trial = nullptr;
  point values;  // to minimize
  constraint_values constraints;
};

class nsga2_searcher final : public searcher {
public:
  nsga2_searcher(const space& s, const nsga2_options& o)
    : options_(o), random_(o.seed), genetic_(o.seed) {
    for (const auto& [name, d] : s.domains())
      dims_.push_back(detail::make_dimension(name, d));
    for (const auto& dim : dims_)
      if (dim.type != dimension::kind::fixed)
        ++varying_;
  }

  suggestion suggest(const std::string& trial_id) override {
    suggestion out;
    if (static_cast<int64_t>(order_.size()) >= std::max<int64_t>(options_.num_samples, 0))
      return out;  // finished
    auto [parent_generation, parents] = parent_population();
    out.what = suggestion::kind::trial;
    // The first generation is Optuna's RandomSampler's draws.
    out.configuration = parent_generation < 0 ? detail::random_sampler_config(dims_, random_)
                                              : child(parents);
    member& m = trials_[trial_id];
    m.configuration = out.configuration;
    m.generation = parent_generation + 1;
    order_.push_back(trial_id);
    return out;
  }

  void on_result(const report& r) override {
    auto trial = trials_.find(r.trial);
    if (trial == trials_.end())
      return;
    for (const auto& [name, v] : r.metrics)
      trial->second.last[name] = v;
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
  // The trial as a member of a population, or false when it is not one
  // (not completed, or a value missing or NaN).
  bool as_individual(const member& m, individual& out) const {
    if (!m.ended || m.how != trial_end::completed)
      return false;
    out.trial = &m;
    out.values.clear();
    for (const auto& o : options_.objectives) {
      auto it = m.last.find(o.metric);
      if (it == m.last.end() || std::isnan(it->second))
        return false;
      out.values.push_back(to_minimize(it->second, o.direction));
    }
    out.constraints = constraint_values_of(options_.constraints, m.last);
    return std::none_of(out.constraints.begin(), out.constraints.end(),
                        [](double v) { return std::isnan(v); });
  }

  // (Constrained) domination, as the elite was sorted by.
  bool beats(const individual& a, const individual& b) const {
    return options_.constraints.empty()
               ? dominates(a.values, b.values)
               : constrained_dominates(a.values, a.constraints, b.values, b.constraints);
  }

  // Optuna's _select_elite_population (pareto.hpp's select_elite).
  std::vector<individual> elite(const std::vector<individual>& population) const {
    std::vector<point> points;
    std::vector<constraint_values> constraints;
    for (const auto& i : population) {
      points.push_back(i.values);
      if (!options_.constraints.empty())
        constraints.push_back(i.constraints);
    }
    std::vector<individual> out;
    for (size_t i : select_elite(points, constraints, static_cast<size_t>(options_.population_size)))
      out.push_back(population[i]);
    return out;
  }

  // Optuna's _collect_parent_population: the newest generation whose
  // population is known and its elite; -1 and none before the first.
  // Elites are kept per generation with the number of completed trials of
  // generations <= g they were chosen from: those sets only grow, so an
  // equal count means the same trials.
  std::pair<int64_t, std::vector<individual>> parent_population() {
    std::map<int64_t, std::vector<individual>> by_generation;
    for (const auto& id : order_) {
      individual i;
      const member& m = trials_.at(id);
      if (as_individual(m, i))
        by_generation[m.generation].push_back(std::move(i));
    }
    std::vector<individual> parents;
    int64_t generation = -1;
    size_t counted = 0;
    while (true) {
      const auto& population = by_generation[generation + 1];
      if (static_cast<int64_t>(population.size()) < options_.population_size)
        break;
      ++generation;
      counted += population.size();
      auto& memo = elites_[generation];
      if (memo.first != counted) {
        std::vector<individual> candidates = population;
        candidates.insert(candidates.end(), parents.begin(), parents.end());
        memo = {counted, elite(candidates)};
      }
      parents = memo.second;
    }
    return {generation, std::move(parents)};
  }

  // Optuna's _select_parent: two draws with replacement from the
  // population without the parents already chosen; the first wins only
  // when it dominates the second.
  const individual& tournament(const std::vector<individual>& population, const member* chosen) {
    std::vector<const individual*> pool;
    for (const auto& i : population)
      if (i.trial != chosen)
        pool.push_back(&i);
    const individual& a = *pool[genetic_.randint(pool.size())];
    const individual& b = *pool[genetic_.randint(pool.size())];
    return beats(a, b) ? a : b;
  }

  config child(const std::vector<individual>& parents) {
    // The inherited values in Optuna's order: after a crossover the
    // categorical dimensions, then the numeric ones; without one, the
    // search space's order (names).
    std::vector<std::pair<const dimension*, value>> inherited;
    if (genetic_.random_sample() < options_.crossover_prob) {
      const individual& first = tournament(parents, nullptr);
      const individual& second = tournament(parents, first.trial);
      // Each takes the second parent's value when its draw is >=
      // swapping_prob.
      for (auto type : {dimension::kind::categorical, dimension::kind::numeric})
        for (const auto& dim : dims_)
          if (dim.type == type) {
            const bool swap = genetic_.random_sample() >= options_.swapping_prob;
            inherited.emplace_back(&dim,
                                   (swap ? second : first).trial->configuration.at(dim.name));
          }
    } else {
      const individual& only = parents[genetic_.randint(parents.size())];
      for (const auto& dim : dims_)
        if (dim.type != dimension::kind::fixed)
          inherited.emplace_back(&dim, only.trial->configuration.at(dim.name));
    }
    const double mutation = options_.mutation_prob >= 0
                                ? options_.mutation_prob
                                : 1.0 / std::max<double>(1.0, static_cast<double>(varying_));
    std::map<std::string, value> kept;
    for (const auto& [dim, v] : inherited)
      if (genetic_.random_sample() >= mutation)
        kept[dim->name] = v;
    // The rest is drawn afresh by the random sampler, in name order.
    config out;
    for (const auto& dim : dims_) {
      auto it = kept.find(dim.name);
      out[dim.name] = it != kept.end() ? it->second : detail::random_sampler_draw(dim, random_);
    }
    return out;
  }

  nsga2_options options_;
  std::vector<dimension> dims_;  // in name order
  size_t varying_ = 0;           // dimensions with more than one value
  std::map<std::string, member> trials_;
  std::vector<std::string> order_;  // trial ids in suggestion order
  std::map<int64_t, std::pair<size_t, std::vector<individual>>> elites_;
  // Two NumPy streams seeded alike, as Optuna's NSGAIISampler holds them.
  detail::numpy_random random_;   // its RandomSampler's: first generation, mutations
  detail::numpy_random genetic_;  // its own: selection, crossover, mutation draws
};

} // namespace

std::unique_ptr<searcher> make_nsga2(const space& s, const nsga2_options& o) {
  return std::make_unique<nsga2_searcher>(s, o);
}

} // namespace dtrain::tune
