#pragma once

#include <string>

#include "dtrain/roles/dashboard_serving.hpp"
#include "dtrain/roles/listen.hpp"

namespace dtrain::roles {

/// What a head process is given (`dtrain start --head`).
struct head_options : listen_options {
  std::string store_path;     // its experiment store (empty: $DTRAIN_HOME/experiments.db)
  dashboard_flags dashboard;  // the web dashboard (port -1: none)
};

/// Runs a head in this process until SIGINT/SIGTERM (install_signal_handlers
/// first): the node registry and placement, the experiment store, and the
/// dashboard when asked for. It records itself in the pid-file registry
/// (processes.hpp) with the address it is reached at, writes o.port_file
/// once it listens, and says on stdout where it listens. Returns the
/// process exit code: 0 after a stop, 2 for options that cannot work
/// (said on stderr, naming the option), 1 when it cannot listen.
int run_head(const head_options& o);

} // namespace dtrain::roles
