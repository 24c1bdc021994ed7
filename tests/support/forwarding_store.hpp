#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "support/memory_store.hpp"

namespace dtrain::testing {

/// An experiment_store that forwards every call to a memory_store, with
/// enter() before it and leave() after it: the seam tests use to make a
/// store slow, hold its calls, or count them (store_offload, tuner_stop).
class forwarding_store : public experiments::experiment_store {
public:
  forwarding_store(std::shared_ptr<memory_store> rows, std::string name)
    : rows(std::move(rows)), name_(std::move(name)) {}

  const std::shared_ptr<memory_store> rows;

  result<int64_t> create_experiment(const experiments::experiment_row& e) override {
    return through([&] { return rows->create_experiment(e); });
  }
  status update_experiment(const experiments::experiment_row& e) override {
    return through([&] { return rows->update_experiment(e); });
  }
  result<experiments::experiment_row> experiment(int64_t id) override {
    return through([&] { return rows->experiment(id); });
  }
  result<std::vector<experiments::experiment_row>> experiments() override {
    return through([&] { return rows->experiments(); });
  }
  status delete_experiment(int64_t id) override {
    return through([&] { return rows->delete_experiment(id); });
  }
  status put_trial(const experiments::trial_row& t) override {
    return through([&] { return rows->put_trial(t); });
  }
  result<std::vector<experiments::trial_row>> trials(int64_t e) override {
    return through([&] { return rows->trials(e); });
  }
  status add_metrics(const std::vector<experiments::metric_row>& r) override {
    return through([&] { return rows->add_metrics(r); });
  }
  result<std::vector<experiments::metric_row>> metrics(int64_t e, const std::string& t) override {
    return through([&] { return rows->metrics(e, t); });
  }
  status put_checkpoint(const experiments::checkpoint_row& c) override {
    return through([&] { return rows->put_checkpoint(c); });
  }
  result<std::vector<experiments::checkpoint_row>> checkpoints(int64_t e, const std::string& t) override {
    return through([&] { return rows->checkpoints(e, t); });
  }
  status add_lineage(const experiments::lineage_row& l) override {
    return through([&] { return rows->add_lineage(l); });
  }
  result<std::vector<experiments::lineage_row>> lineage(int64_t e) override {
    return through([&] { return rows->lineage(e); });
  }
  status add_event(const experiments::event_row& e) override {
    return through([&] { return rows->add_event(e); });
  }
  result<std::vector<experiments::event_row>> events(int64_t e, const std::string& t) override {
    return through([&] { return rows->events(e, t); });
  }
  status flush() override {
    return through([&] { return rows->flush(); });
  }
  std::string where() const override { return name_; }

protected:
  virtual void enter() {}
  virtual void leave() {}

private:
  template <class F>
  auto through(F f) -> decltype(f()) {
    enter();
    auto out = f();
    leave();
    return out;
  }

  std::string name_;
};

} // namespace dtrain::testing
