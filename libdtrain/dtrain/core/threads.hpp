#pragma once

#include <string>

namespace dtrain {

/// Threads OpenBLAS uses for each GEMM in this process. OpenBLAS starts one
/// per core by default; ranks sharing a host should split the cores between
/// them (two spinning thread pools on the same cores are several times
/// slower than one). Process-wide; call before training, not during a GEMM.
void set_blas_threads(int threads);
int blas_threads();

/// One CPU replica's share of its host's cores. While it lives, the replica
/// is registered in a host-wide registry (a directory under /dev/shm named
/// after the user and the host identity, one file per replica, so replicas
/// of every process on the host count: an embedded cluster, or several node
/// processes on one machine). refresh() sets this process's BLAS threads to
/// the host's cores divided by the live replicas, at least 1; a replica
/// calls it before each epoch, so the split follows trials as they start
/// and end. Entries of dead processes are ignored and removed.
/// $OPENBLAS_NUM_THREADS, when set, wins: refresh() then changes nothing.
/// Not thread-safe per object; any number of objects may exist.
class blas_share {
public:
  blas_share();
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
  int replicas_ = 1;
};

} // namespace dtrain
