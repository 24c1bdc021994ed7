// Population based training in Ray's asynchronous form (see pbt.hpp for
// the exact semantics): the ranking at a perturbation, the exploit plans
// the tuner carries out, and the explore step.
#include "dtrain/tune/pbt.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <optional>
#include <sstream>

#include "dtrain/core/check.hpp"

namespace dtrain::tune {

namespace {

// Ray's perturbation_factors, in its order (random.choice picks one).
constexpr double perturbation_factors[] = {1.2, 0.8};

std::optional<double> as_number(const value& v) {
  if (const auto* i = std::get_if<int64_t>(&v))
    return static_cast<double>(*i);
  if (const auto* d = std::get_if<double>(&v))
    return *d;
  return std::nullopt;
}

// A list move: a neighbouring index (-1 or +1, clamped at the ends: Ray's
// "noop" there), or a fresh choice when the value is not in the list.
value move_in_list(const domain& d, const value* current, double resample_probability, rng& r) {
  const auto& list = d.choices;
  const auto at = current ? std::find(list.begin(), list.end(), *current) : list.end();
  if (r.uniform_double() < resample_probability || at == list.end())
    return list[r.below(list.size())];
  const auto index = static_cast<int64_t>(at - list.begin());
  const int64_t shifted = index + (r.below(2) == 0 ? -1 : 1);
  return list[static_cast<size_t>(std::clamp<int64_t>(shifted, 0, int64_t(list.size()) - 1))];
}

// A number move: times 0.8 or 1.2, clamped to the domain's bounds; an
// integer domain's value truncated toward zero (Ray's int()) first.
value move_number(const domain& d, const value* current, double resample_probability, rng& r) {
  const std::optional<double> x = current ? as_number(*current) : std::nullopt;
  if (r.uniform_double() < resample_probability || !x || !std::isfinite(*x))
    return space::sample_one(d, r);
  const double moved = *x * perturbation_factors[r.below(2)];
  if (d.type == domain::kind::integer)
    return static_cast<int64_t>(std::clamp(std::trunc(moved), d.low, d.high));
  return std::clamp(moved, d.low, d.high);
}

class pbt final : public scheduler {
public:
  pbt(const space& s, pbt_options o, std::vector<std::string> mutable_names)
    : space_(s), o_(std::move(o)), names_(std::move(mutable_names)), rng_(o_.seed) {}

  decision on_result(const std::string& trial, int64_t epoch, double value) override {
    member& t = member_of(trial);
    t.ended = false;  // a report means it runs (again, after an exploit or a retry)
    if (epoch < o_.burn_in || epoch - t.last_perturbation < o_.perturbation_interval)
      return decision::go_on;
    // Ray's last_score: larger is better whatever the direction; NaN last.
    const double score = o_.direction == mode::max ? value : -value;
    t.score = std::isnan(score) ? -std::numeric_limits<double>::infinity() : score;
    t.scored = true;
    t.last_perturbation = epoch;
    const std::vector<std::string> ranked = ranking();
    const size_t q = quantile(ranked.size());
    const auto lower_end = ranked.begin() + static_cast<std::ptrdiff_t>(q);
    if (std::find(ranked.begin(), lower_end, trial) == lower_end)
      return decision::go_on;
    // A uniform choice among the top q that have a checkpoint (ray#27170:
    // Ray picks first and then finds no checkpoint to copy).
    std::vector<std::string> sources;
    for (auto it = ranked.end() - static_cast<std::ptrdiff_t>(q); it != ranked.end(); ++it)
      if (members_.at(*it).has_checkpoint)
        sources.push_back(*it);
    if (sources.empty())
      return decision::go_on;
    const std::string& source = sources[rng_.below(sources.size())];
    const config explored =
        pbt_explore(space_, members_.at(source).configuration, names_, o_.resample_probability, rng_);
    pending_[trial] = exploit_plan{source, explored};
    return decision::exploit;
  }

  void on_end(const std::string& trial, trial_end) override { member_of(trial).ended = true; }

  void on_add(const std::string& trial, const config& c) override {
    member_of(trial).configuration = c;
  }

  void on_checkpoint(const std::string& trial, int64_t) override {
    member_of(trial).has_checkpoint = true;
  }

  exploit_plan exploit(const std::string& trial) override {
    auto it = pending_.find(trial);
    return it == pending_.end() ? exploit_plan{} : it->second;
  }

  void on_exploited(const std::string& trial, const exploit_plan& plan) override {
    pending_.erase(trial);
    member& t = member_of(trial);
    t.configuration = plan.configuration;
    // Its directory holds the source's checkpoint now, and it continues
    // from the source's epoch: Ray copies last_perturbation_time.
    t.has_checkpoint = true;
    t.ended = false;
    if (auto source = members_.find(plan.source); source != members_.end())
      t.last_perturbation = source->second.last_perturbation;
  }

  void on_exploit_failed(const std::string& trial) override { pending_.erase(trial); }

  std::string describe() const override {
    std::ostringstream out;
    out << "PBT (asynchronous, as Ray): every " << o_.perturbation_interval << " epoch"
        << (o_.perturbation_interval == 1 ? "" : "s");
    if (o_.burn_in > 0)
      out << " from epoch " << o_.burn_in;
    out << ", a trial in the bottom " << o_.quantile_fraction * 100
        << " % copies one in the top from its checkpoint and explores";
    for (size_t i = 0; i < names_.size(); ++i)
      out << (i == 0 ? " " : ", ") << names_[i];
    out << " (x0.8 or x1.2, list neighbours; resampled with probability "
        << o_.resample_probability << ")";
    return out.str();
  }

private:
  struct member {
    config configuration;
    int64_t last_perturbation = 0;  // epoch; Ray's last_perturbation_time
    bool scored = false;            // Ray's last_score is set
    double score = 0;               // larger is better; NaN as -inf
    bool has_checkpoint = false;
    bool ended = false;
    size_t order = 0;               // first seen: ties rank in this order
  };

  member& member_of(const std::string& trial) {
    auto [it, added] = members_.try_emplace(trial);
    if (added)
      it->second.order = members_.size();
    return it->second;
  }

  // The scored trials that have not ended, worst first (ties by arrival,
  // as Python's stable sort of Ray's list).
  std::vector<std::string> ranking() const {
    std::vector<std::pair<const std::string*, const member*>> live;
    for (const auto& [name, m] : members_)
      if (m.scored && !m.ended)
        live.emplace_back(&name, &m);
    std::sort(live.begin(), live.end(), [](const auto& a, const auto& b) {
      return a.second->score != b.second->score ? a.second->score < b.second->score
                                                : a.second->order < b.second->order;
    });
    std::vector<std::string> out;
    for (const auto& entry : live)
      out.push_back(*entry.first);
    return out;
  }

  // Ray's quantile size: ceil(n * fraction), at most floor(n / 2).
  size_t quantile(size_t n) const {
    if (n <= 1)
      return 0;
    const auto q = static_cast<size_t>(std::ceil(static_cast<double>(n) * o_.quantile_fraction));
    return std::min(q, n / 2);
  }

  space space_;
  pbt_options o_;
  std::vector<std::string> names_;
  rng rng_;
  std::map<std::string, member> members_;
  std::map<std::string, exploit_plan> pending_;
};

status check_options(const space& s, const pbt_options& o) {
  if (o.perturbation_interval < 1)
    return invalid_argument("pbt: perturbation_interval is " +
                            std::to_string(o.perturbation_interval) + ", must be at least 1");
  if (o.burn_in < 0)
    return invalid_argument("pbt: burn_in is " + std::to_string(o.burn_in) +
                            ", must be at least 0");
  if (!(o.quantile_fraction >= 0 && o.quantile_fraction <= 0.5))
    return invalid_argument("pbt: quantile_fraction is " + to_string(value{o.quantile_fraction}) +
                            ", must be in [0, 0.5]");
  if (!(o.resample_probability >= 0 && o.resample_probability <= 1))
    return invalid_argument("pbt: resample_probability is " +
                            to_string(value{o.resample_probability}) + ", must be in [0, 1]");
  for (const std::string& name : o.mutations) {
    auto it = s.domains().find(name);
    if (it == s.domains().end())
      return invalid_argument("pbt: mutations: '" + name + "' is not a searched hyperparameter");
    if (it->second.type == domain::kind::constant)
      return invalid_argument("pbt: mutations: '" + name + "' is a constant");
  }
  return s.validate();
}

} // namespace

result<std::unique_ptr<scheduler>> make_pbt(const space& s, const pbt_options& o) {
  DTRAIN_RETURN_IF_ERROR(check_options(s, o));
  std::vector<std::string> names = o.mutations.empty() ? s.varying() : o.mutations;
  std::sort(names.begin(), names.end());
  names.erase(std::unique(names.begin(), names.end()), names.end());
  if (names.empty())
    return invalid_argument("pbt: mutations: the search space has no hyperparameter that varies");
  return std::unique_ptr<scheduler>(std::make_unique<pbt>(s, o, std::move(names)));
}

config pbt_explore(const space& s, const config& source, const std::vector<std::string>& mutable_names,
                   double resample_probability, rng& r) {
  config out = source;
  for (const std::string& name : mutable_names) {
    auto d = s.domains().find(name);
    if (d == s.domains().end() || d->second.type == domain::kind::constant)
      continue;
    auto it = source.find(name);
    const value* current = it == source.end() ? nullptr : &it->second;
    out[name] = d->second.type == domain::kind::choice
                    ? move_in_list(d->second, current, resample_probability, r)
                    : move_number(d->second, current, resample_probability, r);
  }
  return out;
}

} // namespace dtrain::tune
