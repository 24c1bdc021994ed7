#pragma once

#include <string>
#include <vector>

/// A small network of separate hosts on one machine, for multi-host tests:
/// one network namespace per host, each with its own interface and address
/// (10.213.0.(i+1)/24) on a bridge that lives in a namespace of its own, and
/// its own host name (the processes run in a UTS namespace) and a stock
/// Debian /etc/hosts naming it at 127.0.1.1 (/etc/netns/NS/hosts, which
/// `ip netns exec` binds over /etc/hosts). Traffic goes
/// only between these namespaces. Everything is created by the constructor
/// and removed by the destructor (also when a test fails): deleting a
/// namespace removes its interfaces. Names carry the test's pid, so labs of
/// concurrent test runs never meet.
namespace dtrain::testing {

class netns_lab {
public:
  /// Empty when this machine lets us make network and UTS namespaces (root,
  /// `ip netns`, `unshare --uts`); otherwise why not.
  static std::string unavailable_reason();

  /// Creates `hosts` hosts; check ok() (and error()) afterwards.
  explicit netns_lab(int hosts);
  ~netns_lab();
  netns_lab(const netns_lab&) = delete;
  netns_lab& operator=(const netns_lab&) = delete;

  bool ok() const { return error_.empty(); }
  const std::string& error() const { return error_; }
  int hosts() const { return static_cast<int>(addresses_.size()); }
  const std::string& address(int host) const { return addresses_[host]; }
  std::string host_name(int host) const { return "dtrain-host" + std::to_string(host); }

  /// The command line that runs `args` on `host`: in its network namespace
  /// and with its host name (the process keeps the pid of `ip`, which execs).
  std::vector<std::string> on_host(int host, const std::vector<std::string>& args) const;

  /// Cuts (or mends) `host`'s cable: its port on the bridge goes down (up).
  bool set_link(int host, bool up) const;

  /// Runs a shell command on `host`; its standard output.
  std::string run_on(int host, const std::string& command) const;

  /// Moves the calling thread into `host`'s network namespace for its
  /// lifetime (threads it creates meanwhile, e.g. an actor system's, stay
  /// there), and back when destroyed.
  class enter {
  public:
    enter(const netns_lab& lab, int host);
    ~enter();
    enter(const enter&) = delete;
    enter& operator=(const enter&) = delete;
    bool ok() const { return ok_; }

  private:
    int original_ = -1;
    bool ok_ = false;
  };

private:
  std::string ns(int host) const;
  std::string bridge_ns() const;
  std::string port(int host) const;

  std::string prefix_;
  std::vector<std::string> addresses_;
  std::vector<std::string> created_;
  std::string error_;
};

} // namespace dtrain::testing
