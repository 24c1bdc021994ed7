#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "dtrain/comm/communicator.hpp"
#include "dtrain/core/status.hpp"
#include "dtrain/nn/model.hpp"
#include "dtrain/zero/shard_layout.hpp"

namespace dtrain::zero {

/// ZeRO stage 3: each rank keeps only its own parts of the parameters
/// (the layout's, the same parts whose gradients and optimizer state it
/// keeps); a layer's buckets are all-gathered just before the layer
/// computes and given back just after, forward and again backward, while
/// the next layer's buckets are gathered in the background (prefetch).
///
/// The flat-buffer contract holds: parameters() keeps its address and
/// size, and layers keep their views. What changes is which parts of it
/// are memory: in host memory, when some bucket's other parts span whole 2
/// MiB pages, the parameters move to private huge-page memory
/// (huge_pages.hpp) and those pages are given back to the system whenever
/// their bucket is let go, so that between steps a rank holds about 1/N of
/// the parameters, plus one or two layers' worth during a pass. A bucket
/// too small to free a page stays gathered until its values go stale.
///
/// After this rank's parts change (an optimizer step, a restore) call
/// reshard(): every gathered copy of the others' parts is stale then.
/// Collectives are issued from the model's passes, on the caller's thread,
/// in the same order on every rank (the model's layer order), interleaved
/// with the gradient sync's. Installs itself as the model's parameter
/// window and removes itself on destruction. Not thread-safe.
class parameter_shards final : public nn::parameter_window {
public:
  /// `layout` is the gradient sync's (gradient_sync::layout()).
  static result<std::unique_ptr<parameter_shards>> create(nn::model& model,
                                                          comm::communicator& group,
                                                          const shard_layout& layout);
  ~parameter_shards() override;
  parameter_shards(const parameter_shards&) = delete;
  parameter_shards& operator=(const parameter_shards&) = delete;

  status acquire(size_t layer, bool backward) override;
  void release(size_t layer, bool backward) override;

  /// Lets every bucket go (waiting for gathers in flight; their errors are
  /// dropped, the next pass gathers again).
  void reshard();
  /// Gathers every bucket: the whole parameters, until reshard().
  /// Collective (every rank at once). Errors name the bucket's position.
  status gather_all();

  /// Bytes of parameter memory given back between passes (0 when nothing
  /// is large enough to free a page).
  int64_t released_bytes() const;
  /// The most buckets gathered at once during the passes so far.
  int peak_gathered() const { return peak_gathered_; }
  /// All-gathers issued so far.
  int64_t gathers() const { return gathers_; }

private:
  enum class state { sharded, gathering, gathered };
  struct bucket {
    bucket_shard part;
    state now = state::sharded;
    comm::work_ptr pending;
    size_t foreign_bytes = 0;  // whole pages of the others' parts
  };

  parameter_shards(nn::model& model, comm::communicator& group, const shard_layout& layout);
  void launch(size_t b);
  status wait(size_t b);
  void let_go(size_t b, bool stale);
  /// The next layer with parameters after `layer` in the pass, or npos.
  size_t next_layer(size_t layer, bool backward) const;
  bool used_by(size_t b, size_t layer) const;

  nn::model& model_;
  comm::communicator& group_;
  shard_layout layout_;
  std::vector<bucket> buckets_;                   // by position
  std::vector<std::vector<size_t>> by_layer_;     // the buckets layer i reads
  tensor scratch_;                                // the padded bucket's all-gather
  bool releasing_ = false;
  int peak_gathered_ = 0;
  int64_t gathers_ = 0;
};

} // namespace dtrain::zero
