#pragma once

#include <chrono>

#include "caf/all.hpp"
#include "dtrain/actors/experiments/service.hpp"
#include "dtrain/actors/messages.hpp"

namespace dtrain::actors {

/// How often the head probes a node reported unreachable, and how long
/// each probe (a status request to its node actor) may take.
constexpr std::chrono::milliseconds head_probe_interval{1000};
constexpr std::chrono::milliseconds head_probe_timeout{1000};

/// The head: the registry of nodes and their resources, and gang placement
/// of replica groups. An actor: its state is touched only by its handlers.
///
/// Resources: each node offers cpu_slots CPU slots and the CUDA devices in
/// node_info::gpu_devices, counted separately. A CPU replica takes one CPU
/// slot; a GPU replica takes one GPU (a device index no other replica holds
/// on that node) and no CPU slot. Release gives back exactly the slots and
/// device indices the trainer took. A registration whose gpus differs from
/// the length of gpu_devices, or lists an index twice, is refused.
///
/// place(trainer, n, gpu, owner) is all or nothing: it assigns n units
/// (CPU slots, or GPUs when gpu) on live nodes, filling one node before the
/// next, or fails. A request larger than the whole cluster fails with
/// error_code::invalid_argument saying what is missing (a GPU request on a
/// cluster whose nodes offer no GPU says so); one that fits the cluster but
/// not its free units now fails with error_code::unavailable saying who
/// holds them (the trainer retries). The head monitors each trainer's owner
/// and each node: an owner that goes away releases its slots; a node whose
/// actor goes down (down_msg) is dead for good and must register again.
/// A node a trainer reports unreachable (unreach) is suspect: nothing is
/// placed on it, and the head probes it every head_probe_interval (timers,
/// never blocking) until it answers, which makes it usable again, or goes
/// down. status lists the usable nodes with their CPU slots and GPUs in use.
///
/// The head owns the cluster's experiment service (experiments/service.hpp),
/// spawned with it and stopped when it stops, over the store `open_store` opens
/// (lazily; `store_path` for messages); `experiments` answers its handle.
/// Without an opener every store request fails with unavailable.
head_actor::behavior_type head_impl(head_actor::pointer self,
                                    experiments::store_opener open_store, std::string store_path);
head_actor spawn_head(caf::actor_system& sys, experiments::store_opener open_store = {},
                      std::string store_path = "");

} // namespace dtrain::actors
