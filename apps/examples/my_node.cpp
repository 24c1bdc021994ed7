// A node program of your own: the role `dtrain start --address` runs,
// called from your binary (to preload your operators, set up the host, or
// ship one program instead of dtrain). It joins a head started by `dtrain
// start --head` and hosts replicas until Ctrl-C or the head goes.
//
//   build/bin/dtrain start --head --port 0 --port-file head.address &
//   build/bin/dtrain-example-node $(cat head.address) [SLOTS] [PLUGIN.so ...]
//   build/bin/dtrain status      # lists the node
//   build/bin/dtrain stop        # stops both (the node records itself too)
//
// It links dtrain_roles only: a node needs the cluster side, not the
// driver's.
#include <cstdio>
#include <cstdlib>

#include "dtrain/roles/node.hpp"
#include "dtrain/roles/processes.hpp"

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s HEAD_HOST:PORT [SLOTS] [PLUGIN.so ...]\n", argv[0]);
    return 2;
  }
  dtrain::roles::node_options o;
  o.address = argv[1];
  if (argc > 2) {
    char* end = nullptr;
    long slots = std::strtol(argv[2], &end, 10);
    if (end == argv[2] || *end != 0 || slots < 1 || slots > 1024) {
      std::fprintf(stderr, "error: SLOTS: '%s' is not a number of slots (1 to 1024)\n", argv[2]);
      return 2;
    }
    o.slots = static_cast<int>(slots);
  }
  for (int i = 3; i < argc; ++i)
    o.plugins.push_back(argv[i]);
  dtrain::roles::install_signal_handlers();  // run_node stops on SIGINT/SIGTERM
  return dtrain::roles::run_node(o);
}
