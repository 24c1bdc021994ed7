#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "dtrain/security/tls_files.hpp"
#include "dtrain/train/metrics.hpp"

/// What a driver program describes: where its cluster is, and how a
/// trainer's group trains. Plain values, CAF-free; the driver library's
/// own code uses these very structs (dtrain/dtrain.hpp has the handles
/// that take them).
namespace dtrain {

/// Where dtrain::cluster::connect() finds (or makes) its cluster.
struct cluster_options {
  /// HOST:PORT of a running head; empty: $DTRAIN_ADDRESS, else an embedded
  /// cluster in this process (a head and one node, nothing to set up).
  std::string address;
  bool embedded = false;        // true: embedded even when $DTRAIN_ADDRESS is set
  int local_slots = 0;          // embedded: CPU slots, 0 = the number of cores (at least 2)
  int local_gpus = -1;          // embedded: CUDA devices offered (-1: all present)
  /// Attaching: how long to keep trying to reach the head.
  std::chrono::milliseconds connect_timeout{10000};
  /// embedded: the in-process head's experiment store (empty:
  /// $DTRAIN_HOME/experiments.db). A cluster's head keeps its own.
  std::string store_path;
  /// attach: this driver's TLS files (all empty: client.pem, client-key.pem
  /// and ca.pem in $DTRAIN_HOME/tls when present, else plain remoting,
  /// which only reaches a head on loopback). `dtrain cert create --client`
  /// makes them.
  security::tls_files tls;
};

/// Something that happened to a trainer's group, for its driver to record
/// (the tuner and `dtrain train` store it in the experiment store). Kinds:
/// "failure" (message: "failure N of at most M: CAUSE", or "failure N (not
/// retried): CAUSE"), "recovered" (the group reported an epoch again:
/// "running again with R of N replicas (generation G) from the checkpoint
/// of epoch E" or "... from the start"), "gave_up" (the error train() and
/// the other calls return from then on), "shrank" and "grew" (an elastic
/// group re-formed with fewer or more replicas than before).
struct trainer_event {
  std::string kind;
  /// For a failure, the epoch the group was in (the last one reported + 1
  /// while training, the last one while saving or validating); for a
  /// recovery, the epoch it trained again; otherwise the last reported.
  int64_t epoch = 0;
  std::string message;
};

/// A trainer's configuration (Ray's TorchTrainer arguments and
/// Determined's experiment fields).
struct trainer_config {
  std::string name = "trainer";
  std::string operator_name;                   // a registered training operator, or one of `plugins`
  /// Shared libraries of training operators (plugin/plugin.hpp). The
  /// driver loads each (a library built against another dtrain is refused
  /// naming both versions) and ships it to every node process that hosts a
  /// replica, content-addressed; the operator is looked up in these first,
  /// then among the built-in ones.
  std::vector<std::string> plugins;
  std::map<std::string, std::string> config;   // its hyperparameters
  int num_replicas = 1;
  /// Elastic training (Ray's num_workers=(min, max)): when the cluster can
  /// no longer hold num_replicas (a node died), the group re-forms with as
  /// few as min_replicas from the newest checkpoint, keeping the global
  /// batch (each replica takes a larger share), and grows back to
  /// num_replicas at an epoch boundary once slots are free again (this needs
  /// checkpoint_dir, through which the state moves). 0: num_replicas, i.e.
  /// not elastic: recovery waits up to placement_timeout for capacity.
  int min_replicas = 0;
  /// Threads each CPU replica computes with (its GEMMs and parallel loops),
  /// capped by its node's --cpus; 0: its share of the host's cores (the
  /// cores over the replicas on the host, all processes counted).
  int cpus_per_replica = 0;
  bool use_gpu = false;
  std::string backend = "auto";                // communicator backend
  /// Split evenly across replicas; the remainder is dropped.
  int64_t global_batch_size = 128;
  int aggregation_frequency = 1;
  bool average_training_metrics = true;        // else the chief's metrics
  /// The gradient sync's bucket size in bytes (PyTorch DDP's
  /// bucket_cap_mb); 0: 4 MiB on the CPU, 25 MiB on a GPU.
  int64_t bucket_bytes = 0;
  std::string compression = "none";            // none, fp16, bf16
  /// What the replicas' GEMMs compute in: fp32, tf32, bf16 or fp16
  /// (tensor/precision.hpp; fp16 adds dynamic loss scaling). Storage, the
  /// gradient sync and the optimizer stay float32.
  std::string precision = "fp32";
  /// ZeRO: 1 shards the optimizer state across the replicas, 2 also the
  /// averaged gradients, 3 also the parameters, on the CPU (docs/zero.md);
  /// 0 keeps all of it on each. Needs one of dtrain's optimizers (sgd,
  /// adam, adamw; stages 1-2 also the libtorch adapter's). A sharded group
  /// that loses a replica lost that replica's shard, so it always recovers
  /// from a checkpoint (recovery "live" acts as "checkpoint").
  int zero_stage = 0;
  /// Clips the averaged gradient to this L2 norm (torch's
  /// clip_grad_norm_); 0: off.
  double clip_grad_norm = 0;
  uint64_t seed = 0;
  std::chrono::milliseconds collective_timeout{60000};
  std::chrono::milliseconds epoch_timeout{600000};
  /// How long placement may wait for busy slots (or, when re-forming after
  /// a failure, for nodes to come back) before giving up.
  std::chrono::milliseconds placement_timeout{60000};
  /// Fault tolerance: a failed epoch (dead node or replica, hung peer,
  /// collective timeout) tears the group down, forms it again under a new
  /// rendezvous generation on the nodes still there, restores the newest
  /// valid checkpoint under checkpoint_dir (or starts over without one) and
  /// runs the epoch again, up to max_failures times. A failure during save
  /// or restore is recovered the same way. Errors that would repeat (a
  /// non-finite loss, bad input, a model too large for memory) are not
  /// retried: train() fails at once with that cause.
  int max_failures = 3;
  /// How the group recovers from a failure: "live" (the default): the
  /// surviving replicas keep their state in memory, re-form without the
  /// lost ones under a new generation and train on from their last
  /// committed step (the step in flight is redone); replacements join at a
  /// step boundary and receive the state from a survivor; no checkpoint is
  /// read. When no replica survives, or with "checkpoint", the group is
  /// torn down and restored from the newest checkpoint as described above.
  std::string recovery = "live";
  std::string checkpoint_dir;       // empty: no checkpoints
  int checkpoint_every = 1;         // epochs between checkpoints
  int checkpoint_keep = 2;          // the newest K valid ones are kept
  /// Step-granular asynchronous checkpoints (Determined's
  /// min_checkpoint_period; train/async_checkpoint.hpp): every this many
  /// optimizer steps, and/or every this many seconds of training
  /// (whichever comes first), the replicas snapshot their state in host
  /// memory at a step boundary and write it in the background while
  /// training goes on; at most one save in flight. 0: off. With either
  /// set, train() no longer saves at the end of an epoch (checkpoint_every
  /// is ignored) except for a preempted epoch. Needs checkpoint_dir.
  int64_t checkpoint_every_steps = 0;
  double checkpoint_every_seconds = 0;
  /// Progress during an epoch this often (0: never): to on_progress when
  /// set (the chief's, or every replica's with progress_all_ranks), else
  /// each replica prints a "[rank R] epoch E step S/T" line on its node.
  double progress_seconds = 0;
  /// Called in this process, on an actor system thread, with the progress
  /// the replicas send (keep it short; calls may come from several threads
  /// one after another, never at once).
  std::function<void(const train::step_progress&)> on_progress;
  bool progress_all_ranks = false;
  /// Where the trainer's notes go ("dtrain: trainer NAME: waiting for
  /// capacity ...", failures, recoveries, growing), a line each, called on
  /// the thread of the call that noticed; empty: stderr.
  std::function<void(const std::string&)> on_note;
  /// Failures, recoveries, giving up, growing and shrinking as they happen,
  /// called on the thread of the trainer call that noticed (the caller's,
  /// or the thread of a *_async call); empty: none. The notes say the same
  /// to people; this is for what records them.
  std::function<void(const trainer_event&)> on_event;
};

} // namespace dtrain
