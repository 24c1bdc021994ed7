#include "command_line.hpp"

#include <CLI/CLI.hpp>

#include <cstdio>

#include "commands.hpp"
#include "dtrain/core/check.hpp"
#include "dtrain/roles/processes.hpp"

namespace dtrain::cli {

void add_tls_options(CLI::App* cmd, security::tls_files& tls) {
  cmd->add_option("--tls-cert", tls.certificate,
                  "this process's certificate (PEM; default: $DTRAIN_HOME/tls/<role>.pem)");
  cmd->add_option("--tls-key", tls.key, "its private key (default: $DTRAIN_HOME/tls/<role>-key.pem)");
  cmd->add_option("--tls-ca", tls.ca, "the cluster CA's certificate (default: $DTRAIN_HOME/tls/ca.pem)");
}

void add_dashboard_options(CLI::App* cmd, roles::dashboard_flags& d, bool driver) {
  if (driver)
    cmd->add_flag_callback("--dashboard", [&d] { d.port = d.port < 0 ? 0 : d.port; },
                           "serve the web dashboard of the cluster this runs on (any free port)");
  cmd->add_option("--dashboard-port", d.port,
                  "serve the web dashboard on this port (0: any free port; default: none)");
  cmd->add_option("--dashboard-bind", d.bind,
                  "the dashboard's address: off loopback HTTPS only, with the head's certificate")
      ->capture_default_str();
  cmd->add_option("--dashboard-file", d.url_file, "write the dashboard's URL here once it listens");
  cmd->add_flag("--dashboard-tls", d.tls,
                "serve the dashboard over HTTPS on loopback too (with the head's certificate; "
                "off loopback it always is)");
}

void add_address_option(CLI::App* cmd, std::string& address, const char* otherwise) {
  cmd->add_option("--address", address,
                  std::string("the head's HOST:PORT (default: $DTRAIN_ADDRESS, else the head "
                              "started on this host, else ") + otherwise + ")");
}

result<actors::cluster_address> find_cluster(const std::string& flag) {
  // These commands go on without a cluster (embedded, or the local store
  // file), so a record of a head that is gone (stale, or unreadable) is
  // said on stderr and passed over, not an error: a head killed, or a host
  // rebooted, must not stop `dtrain train` until someone runs `dtrain
  // stop`. status and logs, which need a cluster, refuse it
  // (require_cluster).
  return actors::resolve_cluster_address(flag, []() -> result<std::string> {
    auto found = roles::local_head_address();
    if (!found && (found.error().code() == error_code::unavailable ||
                   found.error().code() == error_code::corrupt_data)) {
      std::fprintf(stderr, "dtrain: passing over %s\n", found.error().message().c_str());
      return std::string();
    }
    return found;
  });
}

// The cluster options of `dtrain train/tune/predict`: find_cluster's
// answer (said on stderr when it is the head started on this host, with
// how to run without it), else an embedded cluster; --embedded skips the
// search.
result<actors::cluster::options> attach_options(const std::string& given, bool embedded,
                                        const security::tls_files& tls, const char* command) {
  actors::cluster::options co;
  co.tls = tls;
  co.embedded = embedded;
  if (embedded)
    return co;
  DTRAIN_ASSIGN_OR_RETURN(auto found, find_cluster(given));
  co.address = found.address;
  if (found.source == actors::address_source::local_head)
    std::fprintf(stderr,
                 "dtrain %s: attaching to the cluster started on this host at %s "
                 "(--embedded runs one of its own)\n",
                 command, co.address.c_str());
  return co;
}

int fail(const status& s) {
  std::fprintf(stderr, "error: %s\n", s.message().c_str());
  return 1;
}

result<actors::cluster_address> require_cluster(const std::string& flag) {
  return actors::require_cluster_address(flag, [] { return roles::local_head_address(); });
}

} // namespace dtrain::cli
