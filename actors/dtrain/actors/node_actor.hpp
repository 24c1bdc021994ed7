#pragma once

#include "caf/all.hpp"
#include "dtrain/actors/messages.hpp"

namespace dtrain::actors {

/// A node agent: registered with the head, it hosts the replicas drivers
/// place on it. Remote drivers spawn replicas on its process with CAF's
/// remote spawn (the process registers the "replica" actor type); an
/// in-process (embedded) cluster asks the node actor itself to spawn them.
/// status answers with the number of replicas hosted by this process.
node_actor::behavior_type node_impl(node_actor::pointer self);
node_actor spawn_node(caf::actor_system& sys);

} // namespace dtrain::actors
