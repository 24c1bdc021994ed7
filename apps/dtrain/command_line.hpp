#pragma once

// The command line's parts: each command file registers its subcommand
// (add_*_command) and how to run it once parsed; main.cpp lists them.
#include <functional>
#include <string>
#include <vector>

#include "dtrain/driver/cluster_address.hpp"
#include "dtrain/roles/dashboard_serving.hpp"
#include "dtrain/security/certificates.hpp"

namespace CLI {
class App;
}

namespace dtrain::cli {

/// A registered subcommand and what runs when it was parsed: the exit
/// code. `run` holds the options the parse filled.
struct command {
  CLI::App* app;
  std::function<int()> run;
};
using command_list = std::vector<command>;

void add_start_command(CLI::App& app, command_list& out);
void add_status_command(CLI::App& app, command_list& out);
void add_stop_command(CLI::App& app, command_list& out);
void add_train_command(CLI::App& app, command_list& out);
void add_tune_command(CLI::App& app, command_list& out);
void add_experiments_command(CLI::App& app, command_list& out);
void add_report_command(CLI::App& app, command_list& out);
void add_logs_command(CLI::App& app, command_list& out);
void add_cert_command(CLI::App& app, command_list& out);
void add_dashboard_token_command(CLI::App& app, command_list& out);
void add_predict_command(CLI::App& app, command_list& out);
void add_launch_command(CLI::App& app, command_list& out);
void add_data_command(CLI::App& app, command_list& out);

/// `dtrain launch [OPTIONS] [--] COMMAND...`: drops the "--" that ends
/// launch's own options from `args` (CLI11 refuses what follows a "--" in
/// a prefix command); whether there was one.
bool drop_launch_separator(std::vector<char*>& args);

/// --tls-cert/--tls-key/--tls-ca on every command that listens or connects.
void add_tls_options(CLI::App* cmd, security::tls_files& tls);
/// --dashboard-port/--dashboard-bind/--dashboard-file/--dashboard-tls, and
/// for a driver --dashboard (any free port).
void add_dashboard_options(CLI::App* cmd, roles::dashboard_flags& d, bool driver);
/// --address of a command that attaches to a cluster; `otherwise` says what
/// it does when no cluster is named (resolve_cluster_address's order).
void add_address_option(CLI::App* cmd, std::string& address, const char* otherwise);

/// The cluster a command means: actors::resolve_cluster_address with the
/// head recorded on this host (roles::local_head_address) as its last
/// source; require_cluster: none is an error.
result<actors::cluster_address> find_cluster(const std::string& flag);
result<actors::cluster_address> require_cluster(const std::string& flag);

/// Says "error: MESSAGE" on stderr; the exit code 1.
int fail(const status& s);

} // namespace dtrain::cli
