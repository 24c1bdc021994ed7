#pragma once

// `dtrain cert`: the cluster's certificate authority and the certificates of
// its processes, in the shape of `consul tls ca create` / `consul tls cert
// create`. A thin layer over dtrain/security/certificates.hpp.
#include <string>
#include <vector>

namespace CLI {
class App;
}

namespace dtrain::cli {

struct cert_options {
  std::string action;              // "ca create", "create" or "check"
  std::string dir;                 // empty: $DTRAIN_HOME/tls
  std::string out;                 // create: where the files go (empty: dir)
  std::string name;                // common name (CA: "dtrain cluster CA")
  int days = 0;                    // 0: the library's default for the kind
  bool head = false, node = false, client = false;
  std::vector<std::string> hosts;  // create: DNS/IP subjectAltNames
  bool force = false;              // replace existing files
  std::vector<std::string> files;  // check: certificates (empty: all in dir)
  std::string ca;                  // check: the CA file (empty: dir/ca.pem)
};

/// Adds `cert ca create`, `cert create` and `cert check` to `app`, filling
/// `o` (which must outlive the parse); returns the `cert` command.
CLI::App* add_cert_command(CLI::App& app, cert_options& o);

/// Runs the parsed `dtrain cert ...`: the process's exit code (0 ok; 1 a
/// creation or a check failed, with one line naming the file and why).
int run_cert(const cert_options& o);

} // namespace dtrain::cli
