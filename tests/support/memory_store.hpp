#pragma once

#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "dtrain/experiments/store.hpp"

namespace dtrain::testing {

/// An experiment_store in memory, for tests of what sits on the interface
/// (the experiment service, `dtrain experiments`). Writes are synchronous;
/// a row of an experiment that does not exist is refused with not_found,
/// as the SQLite store's foreign keys do. Thread-safe.
class memory_store final : public experiments::experiment_store {
public:
  explicit memory_store(std::string name = "memory") : name_(std::move(name)) {}

  result<int64_t> create_experiment(const experiments::experiment_row& e) override;
  status update_experiment(const experiments::experiment_row& e) override;
  result<experiments::experiment_row> experiment(int64_t id) override;
  result<std::vector<experiments::experiment_row>> experiments() override;
  status delete_experiment(int64_t id) override;
  status put_trial(const experiments::trial_row& t) override;
  result<std::vector<experiments::trial_row>> trials(int64_t experiment) override;
  status add_metrics(const std::vector<experiments::metric_row>& rows) override;
  result<std::vector<experiments::metric_row>> metrics(int64_t experiment,
                                                 const std::string& trial = "") override;
  status put_checkpoint(const experiments::checkpoint_row& c) override;
  result<std::vector<experiments::checkpoint_row>> checkpoints(int64_t experiment,
                                                         const std::string& trial = "") override;
  status add_lineage(const experiments::lineage_row& l) override;
  result<std::vector<experiments::lineage_row>> lineage(int64_t experiment) override;
  status add_event(const experiments::event_row& e) override;
  result<std::vector<experiments::event_row>> events(int64_t experiment,
                                               const std::string& trial = "") override;
  status flush() override { return status::ok(); }
  std::string where() const override { return name_; }

private:
  struct tables {
    experiments::experiment_row row;
    std::vector<experiments::trial_row> trials;
    std::vector<experiments::metric_row> metrics;
    std::vector<experiments::checkpoint_row> checkpoints;
    std::vector<experiments::lineage_row> lineage;
    std::vector<experiments::event_row> events;  // by seq
  };
  status missing(int64_t id) const;
  tables* find(int64_t id);

  std::string name_;
  std::mutex mutex_;
  int64_t next_id_ = 1;
  std::map<int64_t, tables> experiments_;
};

} // namespace dtrain::testing
