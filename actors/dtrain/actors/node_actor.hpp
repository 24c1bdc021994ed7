#pragma once

#include "caf/all.hpp"
#include "dtrain/actors/messages.hpp"
#include "dtrain/core/status.hpp"

namespace dtrain::actors {

/// A node agent: registered with the head, it hosts the replicas drivers
/// place on it. Remote drivers spawn replicas on its process with CAF's
/// remote spawn (the process registers the "replica" actor type); an
/// in-process (embedded) cluster asks the node actor itself to spawn them.
/// status answers with the number of replicas hosted by this process.
node_actor::behavior_type node_impl(node_actor::pointer self);
node_actor spawn_node(caf::actor_system& sys);

/// The CUDA device indices a node offers when asked for `requested` GPUs:
/// 0 .. requested-1, or every device this process sees when requested is
/// negative. Asking for more than there are is an error naming both counts
/// and why there are no more (a CPU-only build: "built without CUDA").
result<std::vector<int32_t>> offered_gpus(int32_t requested);

} // namespace dtrain::actors
