#include "dtrain/zero/parameter_shards.hpp"

#include <algorithm>
#include <limits>
#include <string>

#include "dtrain/core/check.hpp"
#include "dtrain/zero/huge_pages.hpp"
#include "dtrain/zero/sharded_update.hpp"

namespace dtrain::zero {

namespace {
constexpr size_t npos = std::numeric_limits<size_t>::max();
}

parameter_shards::parameter_shards(nn::model& model, comm::communicator& group,
                                   const shard_layout& layout)
    : model_(model), group_(group), layout_(layout) {}

result<std::unique_ptr<parameter_shards>> parameter_shards::create(nn::model& model,
                                                                   comm::communicator& group,
                                                                   const shard_layout& layout) {
  if (layout.count() != model.parameter_count() || layout.ranks() != group.size() ||
      layout.rank() != group.rank())
    return invalid_argument("parameter shards: the layout splits " +
                            std::to_string(layout.count()) + " elements over " +
                            std::to_string(layout.ranks()) + " ranks (this one " +
                            std::to_string(layout.rank()) + "), the model has " +
                            std::to_string(model.parameter_count()) + " parameters in rank " +
                            std::to_string(group.rank()) + " of " + std::to_string(group.size()));
  std::unique_ptr<parameter_shards> s(new parameter_shards(model, group, layout));
  for (const bucket_shard& part : layout.buckets())
    s->buckets_.push_back({part, state::gathered, nullptr, foreign_pages(part, nullptr, false)});
  s->by_layer_.resize(model.layer_count());
  for (size_t i = 0; i < model.layer_count(); ++i) {
    auto [first, end] = model.layer_range(i);
    for (size_t b = 0; b < s->buckets_.size() && first < end; ++b)
      if (s->buckets_[b].part.begin < end && first < s->buckets_[b].part.end)
        s->by_layer_[i].push_back(b);
  }
  // Every rank starts with the same whole parameters (the seed's, or the
  // restore that follows re-shards): what can be given back goes now.
  if (group.size() > 1 && model.parameters().where().is_cpu()) {
    size_t widest = 0;
    for (const bucket& b : s->buckets_)
      widest = std::max(widest, b.foreign_bytes);
    if (widest > 0) {
      DTRAIN_ASSIGN_OR_RETURN(tensor storage,
                              huge_page_buffer(model.parameter_count(), "sharded parameters"));
      // Only this rank's parts are copied: the others' pages are never
      // touched, so the whole model is not held twice while it moves.
      for (const optim::span& r : layout.owned())
        if (r.count > 0)
          storage.view(r.begin, {r.count}).copy_from(model.parameters().view(r.begin, {r.count}));
      DTRAIN_RETURN_IF_ERROR(model.adopt_parameters(std::move(storage), false));
      s->releasing_ = true;
    }
  }
  s->reshard();
  model.set_parameter_window(s.get());
  return s;
}

parameter_shards::~parameter_shards() {
  model_.set_parameter_window(nullptr);
  for (bucket& b : buckets_)
    if (b.pending)
      (void)b.pending->wait();  // the collective writes into the parameters
}

void parameter_shards::launch(size_t i) {
  bucket& b = buckets_[i];
  b.pending = launch_gather(group_, model_.parameters(), b.part, scratch_);
  b.now = state::gathering;
  ++gathers_;
}

status parameter_shards::wait(size_t i) {
  bucket& b = buckets_[i];
  status s = b.pending->wait();
  b.pending = nullptr;
  if (!s) {
    b.now = state::sharded;
    return s.with_context("gathering the parameters of bucket " + std::to_string(i + 1) + " of " +
                          std::to_string(buckets_.size()) + " [" + std::to_string(b.part.begin) +
                          ", " + std::to_string(b.part.end) + ")");
  }
  finish_gather(model_.parameters(), b.part, group_.size(), scratch_);
  b.now = state::gathered;
  return status::ok();
}

void parameter_shards::let_go(size_t i, bool stale) {
  bucket& b = buckets_[i];
  if (b.pending)
    (void)b.pending->wait();
  b.pending = nullptr;
  // A bucket whose others' parts hold no whole page costs nothing to keep:
  // it stays gathered until its values go stale.
  if (!stale && b.foreign_bytes == 0 && b.now == state::gathered)
    return;
  if (releasing_)
    (void)foreign_pages(b.part, model_.parameters().data(), true);
  b.now = state::sharded;
}

size_t parameter_shards::next_layer(size_t layer, bool backward) const {
  if (backward) {
    for (size_t j = layer; j-- > 0;)
      if (!by_layer_[j].empty())
        return j;
    return npos;
  }
  for (size_t j = layer + 1; j < by_layer_.size(); ++j)
    if (!by_layer_[j].empty())
      return j;
  return npos;
}

bool parameter_shards::used_by(size_t b, size_t layer) const {
  return layer != npos &&
         std::find(by_layer_[layer].begin(), by_layer_[layer].end(), b) != by_layer_[layer].end();
}

status parameter_shards::acquire(size_t layer, bool backward) {
  if (group_.size() == 1 || by_layer_[layer].empty())
    return status::ok();
  for (size_t b : by_layer_[layer])
    if (buckets_[b].now == state::sharded)
      launch(b);
  // The next layer's buckets go out now, behind this layer's: they arrive
  // while this layer computes.
  const size_t next = next_layer(layer, backward);
  if (next != npos)
    for (size_t b : by_layer_[next])
      if (buckets_[b].now == state::sharded)
        launch(b);
  for (size_t b : by_layer_[layer])
    if (buckets_[b].now == state::gathering)
      DTRAIN_RETURN_IF_ERROR(wait(b));
  int held = 0;
  for (const bucket& b : buckets_)
    held += b.now != state::sharded && b.foreign_bytes > 0;
  peak_gathered_ = std::max(peak_gathered_, held);
  return status::ok();
}

void parameter_shards::release(size_t layer, bool backward) {
  if (group_.size() == 1)
    return;
  const size_t next = next_layer(layer, backward);
  for (size_t b : by_layer_[layer])
    if (!used_by(b, next))
      let_go(b, false);
}

void parameter_shards::reshard() {
  for (size_t b = 0; b < buckets_.size(); ++b)
    let_go(b, true);
}

status parameter_shards::gather_all() {
  if (group_.size() == 1)
    return status::ok();
  for (size_t b = 0; b < buckets_.size(); ++b)
    if (buckets_[b].now == state::sharded)
      launch(b);
  status first;
  for (size_t b = 0; b < buckets_.size(); ++b)
    if (buckets_[b].now == state::gathering)
      if (status s = wait(b); !s && first.is_ok())
        first = s;
  return first;
}

int64_t parameter_shards::released_bytes() const {
  int64_t total = 0;
  for (const bucket& b : buckets_)
    total += releasing_ ? static_cast<int64_t>(b.foreign_bytes) : 0;
  return total;
}

} // namespace dtrain::zero
