// FIFO, the numpy percentile the rules share, and the sweep's choice of
// scheduler. ASHA is in asha.cpp, the median rule in median.cpp, PBT in
// pbt.cpp, Hyperband in hyperband.cpp.
#include "dtrain/tune/scheduler.hpp"

#include <algorithm>
#include <cmath>

#include "dtrain/tune/percentile.hpp"
#include "dtrain/tune/sweep.hpp"

namespace dtrain::tune {

namespace {

class fifo final : public scheduler {
public:
  decision on_result(const std::string&, int64_t, double) override { return decision::go_on; }
  void on_end(const std::string&, trial_end) override {}
  std::string describe() const override { return "FIFO: no early stopping; every trial runs its epochs"; }
};

} // namespace

std::unique_ptr<scheduler> make_fifo() { return std::make_unique<fifo>(); }

double nan_percentile(std::vector<double> values, double q) {
  values.erase(std::remove_if(values.begin(), values.end(), [](double x) { return std::isnan(x); }),
               values.end());
  if (values.empty())
    return std::nan("");
  std::sort(values.begin(), values.end());
  const double last = static_cast<double>(values.size() - 1);
  const double index = last * (q / 100.0);
  if (index >= last)
    return values.back();
  if (index < 0)
    return values.front();
  const double below = std::floor(index);
  const double gamma = index - below;
  const double a = values[static_cast<size_t>(below)];
  const double b = values[static_cast<size_t>(below) + 1];
  const double diff = b - a;
  // numpy's _lerp: from the upper neighbour when gamma >= 0.5; the two
  // forms can differ in the last bit, and a tie against the cut decides.
  return gamma >= 0.5 ? b - diff * (1 - gamma) : a + diff * gamma;
}

result<std::unique_ptr<scheduler>> make_scheduler(const sweep_config& c, const space& s) {
  if (c.scheduler == "fifo")
    return make_fifo();
  if (multi_objective(c))  // mo: no scheduler stops on one of several metrics
    return invalid_argument("scheduler: " + c.scheduler + " stops trials on one metric; a " +
                            "multi-objective sweep runs every trial to its end (scheduler fifo)");
  if (c.scheduler == "asha") {
    asha_options o = c.asha;
    o.direction = c.direction;
    o.max_t = c.max_epochs;
    return make_asha(o);
  }
  if (c.scheduler == "median") {
    median_options o = c.median;
    o.direction = c.direction;
    return make_median(o);
  }
  if (c.scheduler == "pbt") {
    pbt_options o = c.pbt;
    o.direction = c.direction;
    o.seed = c.seed;
    return make_pbt(s, o);
  }
  if (c.scheduler == "hyperband") {
    hyperband_options o = c.hyperband;
    o.direction = c.direction;
    if (o.max_resource == 0)
      o.max_resource = c.max_epochs;
    return make_hyperband(o);
  }
  return invalid_argument("scheduler: unknown scheduler '" + c.scheduler +
                          "' (expected fifo, asha, median, pbt or hyperband)");
}

} // namespace dtrain::tune
