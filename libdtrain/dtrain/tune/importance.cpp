#include "dtrain/tune/importance.hpp"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <thread>

#include "dtrain/core/check.hpp"
#include "dtrain/tune/functional_anova.hpp"
#include "dtrain/tune/regression_forest.hpp"

namespace dtrain::tune {

result<importance_method> parse_importance_method(const std::string& name) {
  if (name == "fanova")
    return importance_method::fanova;
  if (name == "fast")
    return importance_method::fast;
  return invalid_argument("unknown importance method '" + name + "' (known: fanova, fast)");
}

const char* to_string(importance_method m) {
  return m == importance_method::fanova ? "fanova" : "fast";
}

namespace {

bool is_choice(const domain& d) { return d.type == domain::kind::choice; }

bool single_valued(const domain& d) {
  return is_choice(d) ? d.choices.size() <= 1 : d.low == d.high;
}

// The parameters as columns: one per number, one per choice of a choice.
struct encoding {
  std::vector<std::string> names;     // the assessed parameters, by name
  std::vector<const domain*> domains;
  std::vector<std::vector<int>> groups;                // each parameter's columns
  std::vector<std::pair<double, double>> bounds;       // per column
  std::vector<std::string> single;                     // parameters of one value
};

encoding encode_space(const space& s, bool log_scale) {
  encoding e;
  int column = 0;
  for (const auto& [name, d] : s.domains()) {
    if (d.type == domain::kind::constant)
      continue;
    if (single_valued(d)) {
      e.single.push_back(name);
      continue;
    }
    e.names.push_back(name);
    e.domains.push_back(&d);
    std::vector<int> columns;
    if (is_choice(d)) {
      for (size_t k = 0; k < d.choices.size(); ++k) {
        columns.push_back(column++);
        e.bounds.emplace_back(0.0, 1.0);
      }
    } else {
      columns.push_back(column++);
      const bool log = log_scale && d.type == domain::kind::log_uniform;
      e.bounds.emplace_back(log ? std::log(d.low) : d.low, log ? std::log(d.high) : d.high);
    }
    e.groups.push_back(std::move(columns));
  }
  return e;
}

bool same_choice(const value& a, const value& b) {
  if (a == b)
    return true;
  auto number = [](const value& v, double& x) {
    if (auto* i = std::get_if<int64_t>(&v))
      return x = static_cast<double>(*i), true;
    if (auto* f = std::get_if<double>(&v))
      return x = *f, true;
    return false;
  };
  double x = 0, y = 0;
  return number(a, x) && number(b, y) && x == y;
}

// Writes parameter p of trial t into row `row` of m.
status encode_value(const importance_trial& t, const encoding& e, size_t p, bool log_scale,
                    int64_t row, design_matrix& m) {
  const std::string& name = e.names[p];
  const domain& d = *e.domains[p];
  auto it = t.configuration.find(name);
  if (it == t.configuration.end())
    return invalid_argument("trial " + t.id + " has no value of parameter " + name);
  auto put = [&](int column, double x) { m.x[static_cast<size_t>(column) * m.rows + row] = x; };
  if (is_choice(d)) {
    for (size_t k = 0; k < d.choices.size(); ++k)
      if (same_choice(it->second, d.choices[k])) {
        for (size_t j = 0; j < d.choices.size(); ++j)
          put(e.groups[p][j], j == k ? 1.0 : 0.0);
        return {};
      }
    return invalid_argument("trial " + t.id + ": parameter " + name + " holds " +
                            to_string(it->second) + ", which is none of its choices");
  }
  double x = 0;
  if (auto* i = std::get_if<int64_t>(&it->second))
    x = static_cast<double>(*i);
  else if (auto* f = std::get_if<double>(&it->second))
    x = *f;
  else
    return invalid_argument("trial " + t.id + ": parameter " + name + " holds " +
                            to_string(it->second) + ", not a number");
  if (log_scale && d.type == domain::kind::log_uniform) {
    if (!(x > 0))
      return invalid_argument("trial " + t.id + ": parameter " + name + " holds " +
                              to_string(it->second) + ", outside its log range");
    x = std::log(x);
  }
  if (!std::isfinite(x))
    return invalid_argument("trial " + t.id + ": parameter " + name + " is not finite");
  put(e.groups[p][0], x);
  return {};
}

result<design_matrix> encode_trials(const std::vector<importance_trial>& trials, encoding& e,
                                    bool log_scale) {
  std::vector<const importance_trial*> usable;
  for (const auto& t : trials)
    if (std::isfinite(t.value))
      usable.push_back(&t);
  if (usable.size() < min_importance_trials)
    return invalid_argument("importance needs at least " + std::to_string(min_importance_trials) +
                            " completed trials with a finite value, got " +
                            std::to_string(usable.size()));
  design_matrix m;
  m.rows = static_cast<int64_t>(usable.size());
  m.columns = static_cast<int>(e.bounds.size());
  m.x.assign(static_cast<size_t>(m.rows) * m.columns, 0.0);
  for (int64_t r = 0; r < m.rows; ++r) {
    m.y.push_back(usable[r]->value);
    for (size_t p = 0; p < e.names.size(); ++p)
      DTRAIN_RETURN_IF_ERROR(encode_value(*usable[r], e, p, log_scale, r, m));
  }
  if (std::all_of(m.y.begin(), m.y.end(), [&](double y) { return y == m.y[0]; }))
    return invalid_argument("every one of the " + std::to_string(m.rows) +
                            " trials has the same value: no parameter explains any variance");
  // A value outside its domain (a space edited since) widens the bounds:
  // the tree's cells must lie inside the box.
  for (int c = 0; c < m.columns; ++c)
    for (int64_t r = 0; r < m.rows; ++r) {
      e.bounds[c].first = std::min(e.bounds[c].first, m.at(r, c));
      e.bounds[c].second = std::max(e.bounds[c].second, m.at(r, c));
    }
  return m;
}

forest_options forest_for(const importance_options& o) {
  const bool fast = o.method == importance_method::fast;
  forest_options f;
  f.trees = o.trees > 0 ? o.trees : fast ? 16 : 64;
  f.max_depth = o.max_depth > 0 ? o.max_depth : fast ? 12 : 64;
  f.max_bins = o.max_bins >= 0 ? o.max_bins : fast ? 32 : 0;
  f.min_samples_split = fast ? 8 : 2;
  f.seed = o.seed;
  return f;
}

// Per tree, each parameter's share of its variance (empty for a tree of
// no variance). Trees are grown and decomposed on o.threads threads; each
// tree's numbers depend only on its index.
result<std::vector<std::vector<double>>> tree_shares(const design_matrix& m, const encoding& e,
                                                     const importance_options& o) {
  const forest_options f = forest_for(o);
  const forest_fitter fitter(m, f);
  std::vector<std::vector<double>> shares(static_cast<size_t>(f.trees));
  std::vector<status> errors(static_cast<size_t>(f.trees));
  std::atomic<int> next{0};
  auto work = [&] {
    for (int i = next++; i < f.trees; i = next++) {
      auto v = decompose_tree(fitter.tree(i), e.bounds, e.groups);
      if (!v) {
        errors[i] = v.error();
        continue;
      }
      if (v->total > 0)
        for (double marginal : v->marginal)
          shares[i].push_back(marginal / v->total);
    }
  };
  unsigned threads = o.threads > 0 ? static_cast<unsigned>(o.threads)
                                   : std::max(1u, std::thread::hardware_concurrency());
  threads = std::min(threads, static_cast<unsigned>(f.trees));
  std::vector<std::thread> pool;
  for (unsigned t = 1; t < threads; ++t)
    pool.emplace_back(work);
  work();
  for (auto& t : pool)
    t.join();
  for (const auto& error : errors)
    if (!error)
      return error;
  return shares;
}

// Most important first, then by name.
std::vector<parameter_importance> ranked(std::vector<parameter_importance> v) {
  std::sort(v.begin(), v.end(), [](const parameter_importance& a, const parameter_importance& b) {
    return a.importance != b.importance ? a.importance > b.importance : a.name < b.name;
  });
  return v;
}

} // namespace

result<std::vector<parameter_importance>> evaluate_importance(
    const space& s, const std::vector<importance_trial>& trials, const importance_options& o) {
  encoding e = encode_space(s, o.log_scale);
  std::vector<parameter_importance> out;
  for (const auto& name : e.single)
    out.push_back({name, 0.0});
  if (e.names.empty())
    return ranked(std::move(out));
  DTRAIN_ASSIGN_OR_RETURN(design_matrix m, encode_trials(trials, e, o.log_scale));
  DTRAIN_ASSIGN_OR_RETURN(auto per_tree, tree_shares(m, e, o));
  // The shares averaged over the trees that vary (Optuna's
  // _Fanova.get_importance), in tree order whatever thread grew them.
  std::vector<double> share(e.names.size(), 0.0);
  int varying_trees = 0;
  for (const auto& tree : per_tree) {
    if (tree.empty())
      continue;
    ++varying_trees;
    for (size_t p = 0; p < share.size(); ++p)
      share[p] += tree[p];
  }
  double sum = 0;
  for (double& x : share)
    sum += x /= std::max(varying_trees, 1);
  for (size_t p = 0; p < share.size(); ++p)
    out.push_back({e.names[p], sum > 0 ? share[p] / sum : 0.0});
  return ranked(std::move(out));
}

} // namespace dtrain::tune
