#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>

#include "dtrain/tune/space.hpp"

namespace dtrain::tune {

/// Which way a metric improves.
enum class mode { max, min };

/// How a trial ended, as searchers and schedulers hear it.
enum class trial_end {
  completed,  // ran its epochs, or a stopper ended it (Optuna's COMPLETE)
  stopped,    // the scheduler stopped it early (Optuna's PRUNED)
  failed,     // an error its trainer could not recover from
};

/// One epoch's metrics of one trial, as the chief reported them
/// ("loss", "accuracy", "validation_loss", "validation_accuracy", ...).
/// Epochs count from 1.
struct report {
  std::string trial;
  int64_t epoch = 0;
  std::map<std::string, double> metrics;
};

/// What a searcher offers next.
struct suggestion {
  enum class kind {
    trial,     // start a trial with `configuration`
    wait,      // nothing now; ask again after the next result or trial end
    finished,  // no more trials will come
  };
  kind what = kind::finished;
  config configuration;
  /// A population searcher's exploit (PBT): the trial starts from this
  /// earlier trial's newest checkpoint instead of from scratch. Empty: none.
  std::string restore_from;
};

/// Chooses trials' configurations (Ray's Searcher, Optuna's sampler,
/// Determined's searcher). The tuner calls it from one thread; it hears
/// every result, not only final ones, so model-based (TPE) and population
/// (PBT) searchers fit the same interface.
class searcher {
public:
  virtual ~searcher() = default;
  /// The configuration for trial `trial_id` (ids are unique and given in
  /// creation order), or wait, or finished.
  virtual suggestion suggest(const std::string& trial_id) = 0;
  /// Every report of every trial, in the order the tuner received them.
  virtual void on_result(const report& r) { (void)r; }
  /// A trial ended.
  virtual void on_end(const std::string& trial_id, trial_end how) { (void)trial_id; (void)how; }
  /// Trials it will suggest in all, or -1 when it cannot say.
  virtual int64_t total() const { return -1; }
};

/// Ray's BasicVariantGenerator: the grid's cross product repeated
/// `num_samples` times, each trial drawing fresh values for the random
/// dimensions; a space without grid dimensions gives `num_samples` random
/// trials. Seeded: the same seed, the same trials in the same order.
/// Grid points are decoded as trials ask for them (grid_enumerator), so
/// the grid's size costs no memory. Precondition: `s.validate()` passed.
std::unique_ptr<searcher> make_variant_searcher(space s, int64_t num_samples, uint64_t seed);

/// The trials make_variant_searcher(s, num_samples) gives in all: the
/// grid's size times num_samples, or invalid_argument naming num_samples
/// and the grid's size when that does not fit in an int64_t.
/// Precondition: `s.validate()` passed.
result<int64_t> variant_trial_count(const space& s, int64_t num_samples);

} // namespace dtrain::tune
