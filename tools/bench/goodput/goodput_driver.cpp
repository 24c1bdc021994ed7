// The driver of the goodput benchmark (issue 28, tools/bench/goodput/run.sh):
// trains an experiment file on a running cluster (`dtrain start --head` and
// its nodes) through the driver API, and writes a JSON line with the wall
// time (seconds since the epoch) for everything the benchmark measures:
//
//   {"ev":"start","t":T,"recovery":M,"replicas":N,"min_replicas":K,"global_batch":B,"epochs":E}
//   {"ev":"placement","t":T,"generation":G,"pids":[P,...],"addresses":["A",...]}
//   {"ev":"step","t":T,"epoch":E,"step":S,"resumed_at":R,"spe":N,"g":G}
//                       the chief's progress: S batches of epoch E committed
//                       (G = (E-1) x N + S over the run); step <= resumed_at
//                       only marks where a resumed epoch starts
//   {"ev":"epoch","t":T,"epoch":E,"g":G,"loss":L,"accuracy":A,"seconds":S}
//   {"ev":"event","t":T,"kind":K,"epoch":E,"message":"..."}   trainer_event
//   {"ev":"end","t":T,"g":G,"val_acc":A,"finished":true|false,"failures":F,"error":"..."}
//
// analyze.py turns these (and the killer's log) into the figures. Also
// writes the pids of the node processes that host a replica to
// --placement-file (one a line, replaced atomically after every epoch and
// every trainer event), so
// that the killer hits a node that matters.
//
//   dtrain-bench-goodput --address HOST:PORT --experiment experiments/fashion_mnist.yaml
//       --events EV.jsonl [--recovery live|checkpoint] [--replicas 3] [--min-replicas 2]
//       [--global-batch 126] [--epochs E] [--checkpoint-dir DIR] [--deadline S]
#include <CLI/CLI.hpp>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <filesystem>
#include <mutex>
#include <string>
#include <thread>
#include <type_traits>
#include <utility>

#include "dtrain/core/check.hpp"
#include "dtrain/driver/trainer.hpp"
#include "dtrain/experiments/experiment.hpp"

using namespace dtrain;

namespace {

struct options {
  std::string address, experiment, events, placement_file, recovery, checkpoint_dir, data_dir;
  int replicas = 3, min_replicas = 2, max_failures = 1000, cpus_per_replica = 1;
  int64_t global_batch = 126, epochs = 0;
  double progress_seconds = 0.0001, deadline = 1800, t0 = 0;
};

double wall_now() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

std::string json_string(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      out += buf;
    } else {
      out += c;
    }
  }
  return out + "\"";
}

/// The events file: one line per write, flushed at once (the analysis reads
/// it after a kill of anything but this process; a line is never split).
/// Thread-safe: progress comes on actor threads, the rest on main's.
class event_log {
public:
  explicit event_log(const std::string& path) : file_(std::fopen(path.c_str(), "w")) {}
  ~event_log() {
    if (file_ != nullptr)
      std::fclose(file_);
  }
  bool ok() const { return file_ != nullptr; }
  /// `fields`: the line's JSON members after "ev" and "t".
  void write(const char* ev, const std::string& fields) {
    std::lock_guard<std::mutex> lock(mutex_);
    std::fprintf(file_, "{\"ev\":\"%s\",\"t\":%.6f%s%s}\n", ev, wall_now(),
                 fields.empty() ? "" : ",", fields.c_str());
    std::fflush(file_);
  }

private:
  std::mutex mutex_;
  std::FILE* file_;
};

/// Chief's progress -> step lines, each (epoch, step) once.
class step_logger {
public:
  explicit step_logger(event_log& log) : log_(log) {}
  void on_progress(const train::step_progress& p) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (p.epoch == epoch_ && p.step == step_)
      return;
    epoch_ = p.epoch;
    step_ = p.step;
    spe_.store(p.steps_per_epoch);
    const int64_t g = (p.epoch - 1) * p.steps_per_epoch + p.step;
    char buf[200];
    std::snprintf(buf, sizeof buf,
                  "\"epoch\":%lld,\"step\":%lld,\"resumed_at\":%lld,\"spe\":%lld,\"g\":%lld",
                  static_cast<long long>(p.epoch), static_cast<long long>(p.step),
                  static_cast<long long>(p.resumed_at), static_cast<long long>(p.steps_per_epoch),
                  static_cast<long long>(g));
    log_.write("step", buf);
  }
  int64_t steps_per_epoch() const { return spe_.load(); }

private:
  event_log& log_;
  std::mutex mutex_;
  int64_t epoch_ = -1, step_ = -1;
  std::atomic<int64_t> spe_{0};
};

// trainer_config::recovery arrives with live recovery (issue 28); until then
// this program still builds and runs checkpoint-restart, today's only mode.
template <class T, class = void>
struct has_recovery : std::false_type {};
template <class T>
struct has_recovery<T, std::void_t<decltype(std::declval<T&>().recovery)>> : std::true_type {};

template <class Config>
status set_recovery(Config& c, const std::string& mode) {
  if (mode.empty())
    return status::ok();
  if constexpr (has_recovery<Config>::value) {
    c.recovery = mode;
    return status::ok();
  } else {
    if (mode == "checkpoint")
      return status::ok();
    return invalid_argument("--recovery " + mode +
                            ": this build's trainer_config has no recovery field (live recovery "
                            "has not landed); only 'checkpoint' runs");
  }
}

void log_placement(event_log& log, const actors::trainer& t, const std::string& file);

/// The trainer once created, for the event callback (which runs on the
/// thread of the trainer call that noticed, i.e. main's: trainer_config::
/// on_event), so that the killer's list follows every shrink and growth.
const actors::trainer* current_trainer = nullptr;

result<actors::trainer_config> make_config(const options& o, step_logger& steps,
                                           event_log& log) {
  auto e = experiments::load_experiment(o.experiment);
  if (!e)
    return e.error().with_context("--experiment " + o.experiment);
  actors::trainer_config c = actors::trainer_config_from(*e);
  c.num_replicas = o.replicas;
  c.min_replicas = o.min_replicas;
  c.global_batch_size = o.global_batch;
  c.cpus_per_replica = o.cpus_per_replica;
  c.max_failures = o.max_failures;
  c.checkpoint_dir = o.checkpoint_dir;
  c.checkpoint_every = 1;
  if (o.epochs > 0)
    c.config["epochs"] = std::to_string(o.epochs);  // the schedule's length
  if (!o.data_dir.empty())
    c.config["data_dir"] = o.data_dir;
  DTRAIN_RETURN_IF_ERROR(set_recovery(c, o.recovery));
  c.progress_seconds = o.progress_seconds;
  c.on_progress = [&steps](const train::step_progress& p) { steps.on_progress(p); };
  c.on_note = [](const std::string& text) { std::fprintf(stderr, "%s\n", text.c_str()); };
  c.on_event = [&log, file = o.placement_file](const trainer_event& ev) {
    log.write("event", "\"kind\":" + json_string(ev.kind) + ",\"epoch\":" +
                           std::to_string(ev.epoch) + ",\"message\":" + json_string(ev.message));
    if (current_trainer != nullptr)
      log_placement(log, *current_trainer, file);
  };
  return c;
}

void log_placement(event_log& log, const actors::trainer& t, const std::string& file) {
  std::string pids, addresses, lines;
  for (const auto& a : t.placement()) {
    pids += (pids.empty() ? "" : ",") + std::to_string(a.info.pid);
    addresses += (addresses.empty() ? "" : ",") + json_string(a.info.address);
    lines += std::to_string(a.info.pid) + "\n";
  }
  log.write("placement", "\"generation\":" + std::to_string(t.generation()) + ",\"pids\":[" +
                             pids + "],\"addresses\":[" + addresses + "]");
  if (file.empty())
    return;
  const std::string tmp = file + ".tmp";
  if (std::FILE* f = std::fopen(tmp.c_str(), "w")) {
    std::fputs(lines.c_str(), f);
    std::fclose(f);
    std::error_code ec;
    std::filesystem::rename(tmp, file, ec);
  }
}

/// Calls preempt() once `seconds` have passed (unless stopped first): the
/// run ends at the replicas' next check instead of running on unbounded.
class deadline_guard {
public:
  deadline_guard(actors::trainer& t, double seconds)
      : thread_([this, &t, seconds] {
          std::unique_lock<std::mutex> lock(mutex_);
          if (!cv_.wait_for(lock, std::chrono::duration<double>(seconds), [this] { return done_; })) {
            std::fprintf(stderr, "goodput driver: deadline of %.0f s passed; preempting\n", seconds);
            (void)t.preempt();
          }
        }) {}
  ~deadline_guard() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      done_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }

private:
  std::mutex mutex_;
  std::condition_variable cv_;
  bool done_ = false;
  std::thread thread_;
};

/// Trains until `epochs` are done (or preempted, or failed past recovery),
/// then validates; writes the epoch and end lines. The process's exit code.
int train_to_end(actors::trainer& t, int64_t epochs, const options& o, step_logger& steps,
                 event_log& log) {
  std::string error;
  bool finished = false;
  int64_t done = 0;
  {
    deadline_guard guard(t, o.deadline);
    while (done < epochs) {
      auto m = t.train();
      if (!m) {
        error = m.error().to_string();
        break;
      }
      done = m->epoch;
      char buf[200];
      std::snprintf(buf, sizeof buf,
                    "\"epoch\":%lld,\"g\":%lld,\"loss\":%.6f,\"accuracy\":%.6f,\"seconds\":%.3f,"
                    "\"preempted\":%s",
                    static_cast<long long>(m->epoch),
                    static_cast<long long>(m->epoch * steps.steps_per_epoch()), m->loss,
                    m->accuracy, m->seconds, m->preempted ? "true" : "false");
      log.write("epoch", buf);
      log_placement(log, t, o.placement_file);
      if (m->preempted) {
        error = "preempted at the deadline";
        break;
      }
    }
    finished = done >= epochs;
  }
  double accuracy = -1;
  if (auto v = t.validate(); v)
    accuracy = v->accuracy;
  else if (error.empty())
    error = "validate: " + v.error().to_string();
  char buf[120];
  std::snprintf(buf, sizeof buf, "\"g\":%lld,\"val_acc\":%.6f,\"finished\":%s,\"failures\":%zu",
                static_cast<long long>(done * steps.steps_per_epoch()), accuracy,
                finished ? "true" : "false", t.failures().size());
  log.write("end", std::string(buf) + ",\"error\":" + json_string(error));
  std::fprintf(stderr, "goodput driver: %lld epochs, val_acc %.4f, %zu failures%s%s\n",
               static_cast<long long>(done), accuracy, t.failures().size(),
               error.empty() ? "" : ": ", error.c_str());
  return finished ? 0 : 1;
}

int run(const options& o) {
  event_log log(o.events);
  if (!log.ok()) {
    std::fprintf(stderr, "goodput driver: cannot write --events %s\n", o.events.c_str());
    return 2;
  }
  step_logger steps(log);
  auto config = make_config(o, steps, log);
  if (!config) {
    std::fprintf(stderr, "goodput driver: %s\n", config.error().to_string().c_str());
    return 2;
  }
  auto e = experiments::load_experiment(o.experiment);  // checked by make_config
  const int64_t epochs = o.epochs > 0 ? o.epochs : e->epochs;
  char buf[200];
  std::snprintf(buf, sizeof buf,
                "\"recovery\":%s,\"replicas\":%d,\"min_replicas\":%d,\"global_batch\":%lld,"
                "\"epochs\":%lld,\"t0\":%.6f",
                json_string(o.recovery.empty() ? "default" : o.recovery).c_str(), o.replicas,
                o.min_replicas, static_cast<long long>(o.global_batch),
                static_cast<long long>(epochs), o.t0 > 0 ? o.t0 : wall_now());
  log.write("start", buf);
  auto c = actors::cluster::connect({o.address, 0, 0, std::chrono::milliseconds(20000)});
  if (!c) {
    std::fprintf(stderr, "goodput driver: %s\n", c.error().to_string().c_str());
    return 2;
  }
  auto t = actors::trainer::create(**c, *config);
  if (!t) {
    std::fprintf(stderr, "goodput driver: %s\n", t.error().to_string().c_str());
    log.write("end", "\"g\":0,\"val_acc\":-1,\"finished\":false,\"failures\":0,\"error\":" +
                         json_string(t.error().to_string()));
    return 1;
  }
  log_placement(log, **t, o.placement_file);
  current_trainer = t->get();
  int rc = train_to_end(**t, epochs, o, steps, log);
  current_trainer = nullptr;
  (void)(*t)->shutdown();
  return rc;
}

} // namespace

int main(int argc, char** argv) {
  options o;
  CLI::App app{"goodput benchmark driver: trains an experiment, logs every committed step"};
  app.add_option("--address", o.address, "the head, HOST:PORT")->required();
  app.add_option("--experiment", o.experiment, "experiment YAML")->required();
  app.add_option("--events", o.events, "JSON lines written here")->required();
  app.add_option("--placement-file", o.placement_file, "pids of the nodes hosting replicas");
  app.add_option("--recovery", o.recovery, "live or checkpoint (default: the build's)");
  app.add_option("--replicas", o.replicas, "replicas")->check(CLI::PositiveNumber);
  app.add_option("--min-replicas", o.min_replicas, "elastic lower bound")->check(CLI::PositiveNumber);
  app.add_option("--global-batch", o.global_batch, "samples per step over the group")
      ->check(CLI::PositiveNumber);
  app.add_option("--epochs", o.epochs, "epochs (and the schedule's length); 0: the file's");
  app.add_option("--checkpoint-dir", o.checkpoint_dir, "checkpoints here (empty: none)");
  app.add_option("--data-dir", o.data_dir, "Fashion-MNIST directory (default: the operator's)");
  app.add_option("--max-failures", o.max_failures, "failures recovered before giving up");
  app.add_option("--cpus-per-replica", o.cpus_per_replica, "threads per replica");
  app.add_option("--progress-seconds", o.progress_seconds, "chief progress interval (> 0)")
      ->check(CLI::PositiveNumber);
  app.add_option("--deadline", o.deadline, "preempt the run after this many seconds")
      ->check(CLI::PositiveNumber);
  app.add_option("--t0", o.t0, "wall time the run was launched (default: now)");
  CLI11_PARSE(app, argc, argv);
  if (o.min_replicas > o.replicas) {
    std::fprintf(stderr, "goodput driver: --min-replicas %d exceeds --replicas %d\n",
                 o.min_replicas, o.replicas);
    return 2;
  }
  return run(o);
}
