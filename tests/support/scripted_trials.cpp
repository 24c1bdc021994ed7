// Scripted trials for the tuner's tests and benchmarks (scripted_trials.hpp).
#include "support/scripted_trials.hpp"

#include <functional>
#include <map>
#include <string>

#include "dtrain/checkpoint/checkpoint.hpp"

namespace dtrain::testing {

using namespace dtrain::actors;
using std::chrono::milliseconds;

namespace {

double number(const trainer_config& c, const std::string& key, double fallback) {
  auto it = c.config.find(key);
  return it == c.config.end() ? fallback : std::stod(it->second);
}

// A runner that reports accuracy a - b / epoch (a and b from the trial's
// hyperparameters), fails at epoch `fail_at` when set, and waits `delay_ms`
// per epoch (0: none).
caf::behavior scripted_runner(caf::event_based_actor* self, caf::actor tuner, trial_launch l,
                              std::shared_ptr<launch_counters> n) {
  auto epoch = std::make_shared<int64_t>(0);
  auto finish = [self, tuner, l, n](const std::string& error, bool interrupted) {
    --n->live;
    self->send(tuner, trial_end_atom::value, l.id, int32_t{0}, error, interrupted);
    self->quit();
  };
  auto step = std::make_shared<std::function<void()>>();
  *step = [self, tuner, l, n, epoch, finish, step] {
    int64_t e = ++*epoch;
    ++n->epochs;
    double a = number(l.config, "a", 0.5), b = number(l.config, "b", 0.1);
    if (number(l.config, "fail_at", 0) == static_cast<double>(e))
      return finish("scripted failure at epoch " + std::to_string(e), false);
    std::map<std::string, double> m{{"validation_accuracy", a - b / static_cast<double>(e)},
                                    {"validation_loss", b / static_cast<double>(e)},
                                    {"loss", 0.0},
                                    {"accuracy", 0.0}};
    // Its checkpoint directory as a real runner lists it (a test may
    // write checkpoints there).
    auto checkpoints = l.config.checkpoint_dir.empty()
                           ? std::map<int64_t, std::string>()
                           : checkpoint::checkpoint_dirs(l.config.checkpoint_dir);
    self->request(tuner, std::chrono::seconds(10), trial_report_atom::value, l.id, e, m,
                  checkpoints)
        .then([=](bool go_on) {
          if (!go_on || *epoch >= l.max_epochs)
            return finish("", false);
          auto delay = milliseconds(static_cast<int>(number(l.config, "delay_ms", 0)));
          if (delay.count() > 0)
            self->delayed_send(self, delay, caf::tick_atom::value);
          else
            (*step)();
        });
  };
  self->send(tuner, trial_up_atom::value, l.id);
  (*step)();
  return {
      [step](caf::tick_atom) { (*step)(); },
      [finish](stop_atom) { finish("", true); },
  };
}

} // namespace

trial_launcher scripted_trials(std::shared_ptr<launch_counters> n) {
  return [n](caf::actor_system& sys, const caf::actor& tuner, const trial_launch& l) {
    ++n->launched;
    int now = ++n->live;
    int seen = n->most_live.load();
    while (now > seen && !n->most_live.compare_exchange_weak(seen, now)) {
    }
    trial_handle h;
    h.runner = sys.spawn(scripted_runner, tuner, l, n);
    caf::actor runner = h.runner;
    h.interrupt = [runner] { caf::anon_send(runner, stop_atom::value); };
    return h;
  };
}

} // namespace dtrain::testing
