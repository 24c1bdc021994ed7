#pragma once

#include "dtrain/roles/head.hpp"
#include "dtrain/roles/node.hpp"

namespace dtrain::roles {

/// `dtrain start`: a head or node as its own process, in the foreground or
/// detached. Detached, the process forks into the background with its
/// output in cluster_dir()/ROLE-PID.log (PID: the starting process's) and
/// the starting process returns once the role listens (it prints where, and
/// a head's dashboard URL) or failed to (naming the log); o.port_file
/// defaults to cluster_dir()/ROLE-PID.address. In the foreground a node
/// copies its output to cluster_dir()/node-PID.log (output_tee.hpp), which
/// it serves to `dtrain logs` as a detached node serves its log. Both
/// install the signal handlers the roles stop on. Returns the exit code.
int start_head(head_options o, bool detach);
int start_node(node_options o, bool detach);

} // namespace dtrain::roles
