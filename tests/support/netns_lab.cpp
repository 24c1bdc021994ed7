#include "support/netns_lab.hpp"

#include <fcntl.h>
#include <sched.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <memory>

namespace dtrain::testing {

namespace {

// Runs a command through the shell; its exit code and output (stdout and
// stderr together).
int shell(const std::string& command, std::string* output = nullptr) {
  std::unique_ptr<FILE, int (*)(FILE*)> pipe(popen((command + " 2>&1").c_str(), "r"), pclose);
  if (!pipe)
    return -1;
  std::array<char, 256> chunk{};
  std::string text;
  while (fgets(chunk.data(), chunk.size(), pipe.get()) != nullptr)
    text += chunk.data();
  int rc = pclose(pipe.release());
  if (output)
    *output = text;
  return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

} // namespace

std::string netns_lab::unavailable_reason() {
  if (geteuid() != 0)
    return "not root";
  std::string out;
  const std::string probe = "dtrain-probe-" + std::to_string(getpid());
  if (shell("ip netns add " + probe, &out) != 0)
    return "ip netns add failed: " + out;
  shell("ip netns del " + probe);
  if (shell("unshare --uts true", &out) != 0)
    return "unshare --uts failed: " + out;
  return "";
}

netns_lab::netns_lab(int hosts) : prefix_("dt" + std::to_string(getpid()) + "-") {
  std::vector<std::string> steps{"ip netns add " + bridge_ns()};
  created_.push_back(bridge_ns());
  steps.push_back("ip -n " + bridge_ns() + " link add br0 type bridge");
  steps.push_back("ip -n " + bridge_ns() + " link set br0 up");
  for (int i = 0; i < hosts; ++i) {
    addresses_.push_back("10.213.0." + std::to_string(i + 1));
    steps.push_back("ip netns add " + ns(i));
    created_.push_back(ns(i));
    steps.push_back("ip -n " + bridge_ns() + " link add " + port(i) + " type veth peer name eth0 netns " + ns(i));
    steps.push_back("ip -n " + bridge_ns() + " link set " + port(i) + " master br0 up");
    steps.push_back("ip -n " + ns(i) + " addr add " + addresses_[i] + "/24 dev eth0");
    steps.push_back("ip -n " + ns(i) + " link set eth0 up");
    steps.push_back("ip -n " + ns(i) + " link set lo up");
    // A stock Debian /etc/hosts on every host (`ip netns exec` binds
    // /etc/netns/NS/hosts over /etc/hosts): the host's own name at
    // 127.0.1.1, the classic trap of multi-host launchers.
    steps.push_back("mkdir -p /etc/netns/" + ns(i) + " && printf '127.0.0.1\\tlocalhost\\n"
                    "127.0.1.1\\t" + host_name(i) + "\\n' > /etc/netns/" + ns(i) + "/hosts");
  }
  for (auto& step : steps) {
    std::string out;
    if (shell(step, &out) != 0) {
      error_ = "'" + step + "' failed: " + out;
      return;
    }
  }
}

netns_lab::~netns_lab() {
  for (auto it = created_.rbegin(); it != created_.rend(); ++it) {
    shell("ip netns del " + *it);
    shell("rm -rf /etc/netns/" + *it);
  }
  shell("rmdir /etc/netns");  // when no other lab's files are there
}

std::string netns_lab::ns(int host) const { return prefix_ + "h" + std::to_string(host); }
std::string netns_lab::bridge_ns() const { return prefix_ + "br"; }
std::string netns_lab::port(int host) const { return "p" + std::to_string(host); }

std::vector<std::string> netns_lab::on_host(int host, const std::vector<std::string>& args) const {
  std::vector<std::string> out{"/usr/sbin/ip", "netns", "exec", ns(host), "unshare", "--uts", "--",
                               "/bin/sh", "-c", "hostname " + host_name(host) + " && exec \"$@\"",
                               "sh"};
  out.insert(out.end(), args.begin(), args.end());
  return out;
}

bool netns_lab::set_link(int host, bool up) const {
  return shell("ip -n " + bridge_ns() + " link set " + port(host) + (up ? " up" : " down")) == 0;
}

std::string netns_lab::run_on(int host, const std::string& command) const {
  std::string out;
  shell("ip netns exec " + ns(host) + " " + command, &out);
  return out;
}

netns_lab::enter::enter(const netns_lab& lab, int host) {
  original_ = open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
  int target = open(("/var/run/netns/" + lab.ns(host)).c_str(), O_RDONLY | O_CLOEXEC);
  ok_ = original_ >= 0 && target >= 0 && setns(target, CLONE_NEWNET) == 0;
  if (target >= 0)
    close(target);
}

netns_lab::enter::~enter() {
  if (original_ >= 0) {
    if (ok_)
      setns(original_, CLONE_NEWNET);
    close(original_);
  }
}

} // namespace dtrain::testing
