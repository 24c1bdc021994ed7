#pragma once

#include "caf/all.hpp"
#include "dtrain/actors/messages.hpp"

namespace dtrain::actors {

/// The head: the registry of nodes and their slots, and gang placement of
/// replica groups.
///
/// place(trainer, n, gpu, owner) is all or nothing: it assigns n slots
/// (CPU slots, or GPUs when gpu) on live nodes, filling one node before the
/// next, or fails. A request larger than the whole cluster fails with
/// error_code::invalid_argument saying what is missing; one that fits the
/// cluster but not its free slots now fails with error_code::unavailable
/// saying who holds them (the trainer retries). The head monitors each
/// trainer's owner and each node: an owner that goes away releases its
/// slots; a node that goes away leaves the registry, as does one a trainer
/// reports unreachable (unreach), which must register again to return.
head_actor::behavior_type head_impl(head_actor::pointer self);
head_actor spawn_head(caf::actor_system& sys);

} // namespace dtrain::actors
