#pragma once

#include <string>

namespace dtrain {

/// Threads OpenBLAS uses for each GEMM in this process. OpenBLAS starts one
/// per core by default; ranks sharing a host should split the cores between
/// them (two spinning thread pools on the same cores are several times
/// slower than one). Process-wide; call before training, not during a GEMM.
void set_blas_threads(int threads);
int blas_threads();

/// Names OpenBLAS's thread pool "dtrain-blas" (in /proc/PID/task/*/comm,
/// top -H, gdb), so that tools and tests can tell them apart. OpenBLAS
/// starts its pool in a library constructor, before main: call this first
/// thing in main, while those are the process's only other threads. The
/// number of threads named (0 when OpenBLAS has no pool, one core).
int name_blas_pool_threads();

/// The cores this process's CPU replicas may use together (`dtrain start
/// --cpus`): each replica's share is at most the budget divided by the
/// replicas in this process. 0 (the default): no cap but the host's cores.
void set_cpu_budget(int cpus);
int cpu_budget();

/// One CPU replica's share of its host's cores. While it lives, the replica
/// is registered in a host-wide registry (a directory under /dev/shm named
/// after the user and the host identity, one file per replica, so replicas
/// of every process on the host count: an embedded cluster, or several node
/// processes on one machine). refresh() sets this process's BLAS threads
/// (which its parallel loops use too, parallel.hpp) to the share, at least
/// 1: the host's cores divided by the live replicas on the host, and at
/// most cpu_budget() divided by the live replicas in this process when a
/// budget is set; or `fixed` (a trainer's cpus_per_replica) when it is
/// above 0, capped the same way by the budget's share. A replica calls it before each epoch, so
/// the split follows trials as they start and end. Entries of dead
/// processes are ignored and removed. $OPENBLAS_NUM_THREADS, when set,
/// wins: refresh() then changes nothing. OpenBLAS's setting is
/// process-wide: replicas of one process share the last refresh's value.
/// Not thread-safe per object; any number of objects may exist.
class blas_share {
public:
  explicit blas_share(int fixed = 0);
  ~blas_share();
  blas_share(const blas_share&) = delete;
  blas_share& operator=(const blas_share&) = delete;

  /// Recounts the host's replicas and applies the share; returns the
  /// threads now set.
  int refresh();
  /// Live replicas on this host at the last refresh().
  int replicas() const { return replicas_; }

private:
  std::string entry_;  // our file in the registry ("" when it could not be made)
  int fixed_ = 0;
  int replicas_ = 1;
};

} // namespace dtrain
