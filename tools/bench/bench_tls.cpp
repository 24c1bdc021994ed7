// What mutual TLS costs, plain remoting against caf::openssl in one run, on
// loopback between two processes:
//   - remote request latency: median of 5,000 int32 round trips;
//   - bulk throughput: 64 MiB as std::vector<char>, 10 times, median MiB/s;
//   - driver start to first step: a head and a node process (dtrain start),
//     then from cluster::connect to the first epoch result of a tiny trainer
//     (linear regression, 2 replicas), median of 3 drivers.
// Certificates come from security::create_ca / create_certificate in a
// temporary directory. Every process it starts is killed by pid at the end.
#include <CLI/CLI.hpp>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <thread>

#include "bench_util.hpp"
#include "dtrain/driver/cluster.hpp"
#include "dtrain/driver/trainer.hpp"
#include "dtrain/core/threads.hpp"

using namespace dtrain;
using namespace dtrain::actors;
using std::chrono::milliseconds;
using clock_type = std::chrono::steady_clock;
namespace sec = dtrain::security;

namespace {

using echo_actor = caf::typed_actor<caf::replies_to<int32_t>::with<int32_t>,
                                    caf::replies_to<std::vector<char>>::with<uint64_t>>;

echo_actor::behavior_type echo_impl(echo_actor::pointer) {
  return {
    [](int32_t x) { return x; },
    [](const std::vector<char>& bytes) { return static_cast<uint64_t>(bytes.size()); },
  };
}

double seconds_since(clock_type::time_point t) {
  return std::chrono::duration<double>(clock_type::now() - t).count();
}

std::string read_line(const std::string& path, milliseconds timeout) {
  auto deadline = clock_type::now() + timeout;
  while (clock_type::now() < deadline) {
    std::ifstream in(path);
    std::string line;
    if (std::getline(in, line) && !line.empty())
      return line;
    std::this_thread::sleep_for(milliseconds(20));
  }
  return "";
}

/// A child process, killed by pid when it goes.
struct child {
  pid_t pid = -1;
  explicit child(const std::vector<std::string>& args, const std::string& log) {
    pid = fork();
    if (pid == 0) {
      std::freopen(log.c_str(), "a", stdout);
      std::freopen(log.c_str(), "a", stderr);
      std::vector<char*> argv;
      for (auto& a : args)
        argv.push_back(const_cast<char*>(a.c_str()));
      argv.push_back(nullptr);
      execv(argv[0], argv.data());
      _exit(127);
    }
  }
  ~child() {
    if (pid > 0) {
      kill(pid, SIGKILL);
      waitpid(pid, nullptr, 0);
    }
  }
};

struct pki {
  std::string dir;
  explicit pki(const std::string& at) : dir(at) {
    sec::ca_request ca;
    ca.dir = dir;
    if (auto made = sec::create_ca(ca); !made)
      throw std::runtime_error(made.error().to_string());
    for (auto role : {sec::role::head, sec::role::node, sec::role::client}) {
      sec::certificate_request r;
      r.role_ = role;
      r.name = std::string("bench-") + sec::role_name(role);
      r.file_stem = sec::role_name(role);
      r.ca_dir = dir;
      r.out_dir = dir;
      if (auto made = sec::create_certificate(r); !made)
        throw std::runtime_error(made.error().to_string());
    }
  }
  sec::tls_files files(sec::role r) const {
    const std::string n = sec::role_name(r);
    return {dir + "/" + n + ".pem", dir + "/" + n + "-key.pem", dir + "/ca.pem"};
  }
  std::vector<std::string> flags(sec::role r) const {
    auto f = files(r);
    return {"--tls-cert", f.certificate, "--tls-key", f.key, "--tls-ca", f.ca};
  }
};

tls_identity identity(const pki* p, sec::role r) {
  tls_identity id;
  if (p) {
    id.files = p->files(r);
    id.role_ = r;
  }
  return id;
}

// --serve: publish an echo actor, write the port, wait to be killed.
int serve(bool tls, const std::string& dir, const std::string& port_file) {
  tls_identity id;
  if (tls) {
    id.files = {dir + "/head.pem", dir + "/head-key.pem", dir + "/ca.pem"};
    id.role_ = sec::role::head;
  }
  system_config cfg{id};
  caf::actor_system sys{cfg};
  auto echo = sys.spawn(echo_impl);
  auto port = publish_actor(sys, echo, 0, "127.0.0.1");
  if (!port) {
    std::fprintf(stderr, "serve: %s\n", caf::to_string(port.error()).c_str());
    return 1;
  }
  std::ofstream(port_file) << *port << "\n";
  for (;;)
    std::this_thread::sleep_for(std::chrono::seconds(1));
}

struct remoting_figures {
  double latency_us = 0, mib_per_s = 0;
};

remoting_figures measure_remoting(const char* self_path, const pki* p, const std::string& tmp,
                                  int round_trips, int bulk_repeats) {
  const bool tls = p != nullptr;
  const std::string port_file = tmp + (tls ? "/echo-tls.port" : "/echo-plain.port");
  std::vector<std::string> args{self_path, "--serve", tls ? "tls" : "plain", "--dir",
                                p ? p->dir : tmp, "--port-file", port_file};
  child server(args, tmp + "/echo.log");
  auto port_text = read_line(port_file, milliseconds(10000));
  if (port_text.empty())
    throw std::runtime_error("the echo server did not start (see " + tmp + "/echo.log)");
  const auto port = static_cast<uint16_t>(std::stoi(port_text));
  system_config cfg{identity(p, sec::role::client)};
  caf::actor_system sys{cfg};
  caf::expected<echo_actor> echo = tls ? caf::openssl::remote_actor<echo_actor>(sys, "127.0.0.1", port)
                                       : sys.middleman().remote_actor<echo_actor>("127.0.0.1", port);
  if (!echo)
    throw std::runtime_error("connecting to the echo server: " + caf::to_string(echo.error()));
  remoting_figures out;
  caf::scoped_actor self{sys};
  std::string failed;
  auto on_error = [&](caf::error& e) { failed = caf::to_string(e); };
  std::vector<double> times;
  for (int i = 0; i < round_trips && failed.empty(); ++i) {
    auto t = clock_type::now();
    self->request(*echo, std::chrono::seconds(10), int32_t{i}).receive([](int32_t) {}, on_error);
    times.push_back(seconds_since(t) * 1e6);
  }
  out.latency_us = bench::median(times);
  std::vector<char> bulk(64u << 20, 'x');
  std::vector<double> rates;
  for (int i = 0; i < bulk_repeats && failed.empty(); ++i) {
    auto t = clock_type::now();
    self->request(*echo, std::chrono::seconds(60), bulk).receive([](uint64_t) {}, on_error);
    rates.push_back(64.0 / seconds_since(t));
  }
  if (!failed.empty())
    throw std::runtime_error((tls ? "TLS" : "plain") + std::string(" echo: ") + failed);
  out.mib_per_s = bench::median(rates);
  return out;
}

trainer_config tiny() {
  trainer_config t;
  t.name = "bench-tls";
  t.operator_name = "linear_regression";
  t.config = {{"planted", "true"}, {"lr", "0.01"}};
  t.num_replicas = 2;
  t.global_batch_size = 64;
  t.seed = 3;
  t.collective_timeout = milliseconds(20000);
  t.placement_timeout = milliseconds(5000);
  return t;
}

// Head and node processes, then `drivers` drivers from connect to the first
// epoch result: the median seconds.
double measure_first_step(const pki* p, const std::string& tmp, int drivers) {
  const std::string tag = p ? "tls" : "plain";
  const std::string home = tmp + "/home-" + tag;
  std::filesystem::create_directories(home);
  setenv("DTRAIN_HOME", home.c_str(), 1);
  std::vector<std::string> args{DTRAIN_BINARY, "start", "--head", "--port", "0",
                                "--port-file", home + "/head.address"};
  if (p)
    for (auto& f : p->flags(sec::role::head))
      args.push_back(f);
  child head(args, home + "/head.log");
  const std::string address = read_line(home + "/head.address", milliseconds(10000));
  if (address.empty())
    throw std::runtime_error("the " + tag + " head did not start (see " + home + "/head.log)");
  args = {DTRAIN_BINARY, "start", "--address", address, "--slots", "2",
          "--port-file", home + "/node.address"};
  if (p)
    for (auto& f : p->flags(sec::role::node))
      args.push_back(f);
  child node(args, home + "/node.log");
  if (read_line(home + "/node.address", milliseconds(10000)).empty())
    throw std::runtime_error("the " + tag + " node did not join (see " + home + "/node.log)");
  std::vector<double> times;
  for (int i = 0; i < drivers; ++i) {
    auto t = clock_type::now();
    cluster::options o{address, 0, 0, milliseconds(10000)};
    if (p)
      o.tls = p->files(sec::role::client);
    auto c = cluster::connect(o);
    if (!c)
      throw std::runtime_error(c.error().to_string());
    auto tr = trainer::create(**c, tiny());
    if (!tr)
      throw std::runtime_error(tr.error().to_string());
    auto m = (*tr)->train();
    if (!m)
      throw std::runtime_error(m.error().to_string());
    times.push_back(seconds_since(t));
    (void)(*tr)->shutdown();
  }
  return bench::median(times);
}

} // namespace

int main(int argc, char** argv) {
  CLI::App app{"dtrain-bench-tls: plain remoting against mutual TLS, loopback"};
  std::string serve_mode, dir, port_file;
  int round_trips = 5000, bulk_repeats = 10, drivers = 3;
  app.add_option("--serve", serve_mode, "internal: run the echo server (plain or tls)");
  app.add_option("--dir", dir, "internal: the certificates' directory");
  app.add_option("--port-file", port_file, "internal: where the server writes its port");
  app.add_option("--round-trips", round_trips, "int32 round trips")->capture_default_str();
  app.add_option("--bulk-repeats", bulk_repeats, "64 MiB transfers")->capture_default_str();
  app.add_option("--drivers", drivers, "drivers timed to their first step")->capture_default_str();
  CLI11_PARSE(app, argc, argv);
  if (!serve_mode.empty())
    return serve(serve_mode == "tls", dir, port_file);
  set_blas_threads(1);
  char tmpl[] = "/tmp/dtrain-bench-tls-XXXXXX";
  const std::string tmp = mkdtemp(tmpl);
  try {
    pki certs(tmp + "/pki");
    std::printf("dtrain-bench-tls: loopback, two processes, plain CAF remoting vs mutual TLS\n\n");
    std::fflush(stdout);  // the children it forks must not repeat it
    auto plain = measure_remoting(argv[0], nullptr, tmp, round_trips, bulk_repeats);
    auto tls = measure_remoting(argv[0], &certs, tmp, round_trips, bulk_repeats);
    double plain_start = measure_first_step(nullptr, tmp, drivers);
    double tls_start = measure_first_step(&certs, tmp, drivers);
    std::printf("%-44s %12s %12s %8s\n", "measure", "plain", "TLS", "TLS/plain");
    std::printf("%-44s %12.1f %12.1f %8.2f\n", "request latency, median of int32 RTT (us)",
                plain.latency_us, tls.latency_us, tls.latency_us / plain.latency_us);
    std::printf("%-44s %12.0f %12.0f %8.2f\n", "bulk 64 MiB vector<char>, median (MiB/s)",
                plain.mib_per_s, tls.mib_per_s, tls.mib_per_s / plain.mib_per_s);
    std::printf("%-44s %12.3f %12.3f %8.2f\n", "driver connect to first epoch, median (s)",
                plain_start, tls_start, tls_start / plain_start);
    std::printf("\nsummary: TLS costs %.0f%% latency, %.0f%% throughput, %.0f%% start-to-first-step "
                "(%d round trips, %d x 64 MiB, %d drivers)\n",
                100 * (tls.latency_us / plain.latency_us - 1), 100 * (1 - tls.mib_per_s / plain.mib_per_s),
                100 * (tls_start / plain_start - 1), round_trips, bulk_repeats, drivers);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "dtrain-bench-tls: %s\n", e.what());
    std::filesystem::remove_all(tmp);
    return 1;
  }
  std::filesystem::remove_all(tmp);
  return 0;
}
