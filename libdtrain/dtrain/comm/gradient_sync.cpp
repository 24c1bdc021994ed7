#include "dtrain/comm/gradient_sync.hpp"

#include <algorithm>
#include <cstring>

#include "dtrain/core/check.hpp"
#include "dtrain/tensor/ops.hpp"
#include "dtrain/zero/huge_pages.hpp"

namespace dtrain::comm {

const char* to_string(compression c) {
  switch (c) {
    case compression::none: return "none";
    case compression::fp16: return "fp16";
    case compression::bf16: return "bf16";
  }
  return "unknown";
}

result<compression> parse_compression(const std::string& name) {
  if (name == "none")
    return compression::none;
  if (name == "fp16")
    return compression::fp16;
  if (name == "bf16")
    return compression::bf16;
  return invalid_argument("unknown gradient compression '" + name + "' (choose none, fp16 or bf16)");
}

namespace {

uint32_t bits_of(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

float float_of(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

// Round to nearest even; NaN stays NaN.
uint16_t to_bf16(float f) {
  uint32_t u = bits_of(f);
  if ((u & 0x7fffffffu) > 0x7f800000u)
    return static_cast<uint16_t>((u >> 16) | 0x40);
  u += 0x7fffu + ((u >> 16) & 1u);
  return static_cast<uint16_t>(u >> 16);
}

float from_bf16(uint16_t h) { return float_of(static_cast<uint32_t>(h) << 16); }

// IEEE binary16, round to nearest even, with subnormals, infinities and NaN.
uint16_t to_fp16(float f) {
  uint32_t u = bits_of(f);
  uint16_t sign = static_cast<uint16_t>((u >> 16) & 0x8000u);
  uint32_t abs = u & 0x7fffffffu;
  if (abs >= 0x7f800000u)  // inf or NaN
    return static_cast<uint16_t>(sign | 0x7c00u | (abs > 0x7f800000u ? 0x200u : 0u));
  if (abs >= 0x477ff000u)  // rounds to >= 65520: overflow to infinity
    return static_cast<uint16_t>(sign | 0x7c00u);
  if (abs < 0x38800000u) {  // below 2^-14: subnormal or zero
    if (abs < 0x33000000u)
      return sign;
    uint32_t mant = (abs & 0x7fffffu) | 0x800000u;
    // value = mant24 * 2^(exp - 150) = half * 2^-24: half = mant24 >> (126 - exp)
    int shift = 126 - static_cast<int>(abs >> 23);
    uint32_t half = mant >> (shift);
    uint32_t rest = mant & ((1u << shift) - 1u), mid = 1u << (shift - 1);
    if (rest > mid || (rest == mid && (half & 1u)))
      ++half;
    return static_cast<uint16_t>(sign | half);
  }
  uint32_t rounded = abs + 0xfffu + ((abs >> 13) & 1u);
  return static_cast<uint16_t>(sign | ((rounded - 0x38000000u) >> 13));
}

float from_fp16(uint16_t h) {
  uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1fu, mant = h & 0x3ffu;
  if (exp == 0x1f)
    return float_of(sign | 0x7f800000u | (mant << 13));
  if (exp == 0) {
    if (mant == 0)
      return float_of(sign);
    float value = static_cast<float>(mant) * (1.0f / 16777216.0f);  // mant * 2^-24
    return sign != 0 ? -value : value;
  }
  return float_of(sign | ((exp + 112) << 23) | (mant << 13));
}

} // namespace

gradient_sync::gradient_sync(nn::model& model, communicator& comm,
                             const gradient_sync_options& options)
  : model_(model), comm_(comm), options_(options) {}

gradient_sync::~gradient_sync() {
  model_.set_gradient_ready_hook(nullptr);
  for (auto& b : buckets_)
    if (b.pending)
      (void)b.pending->wait();
}

result<std::unique_ptr<gradient_sync>> gradient_sync::create(
    nn::model& model, communicator& comm, const gradient_sync_options& options) {
  if (options.bucket_bytes < 4 || options.first_bucket_bytes < 4)
    return invalid_argument("gradient_sync: bucket sizes must be at least 4 bytes");
  if (options.aggregation_frequency < 1)
    return invalid_argument("gradient_sync: aggregation_frequency must be >= 1, got " +
                            std::to_string(options.aggregation_frequency));
  if (!comm.supports(model.gradients().where()))
    return invalid_argument("gradient_sync: the " + comm.backend() +
                            " communicator does not take gradients on " +
                            model.gradients().where().to_string());
  if (options.zero_stage >= 2 && options.compress != compression::none)
    return invalid_argument("gradient_sync: zero_stage 2 reduce-scatters float32 gradients; "
                            "it does not combine with gradient compression '" +
                            std::string(to_string(options.compress)) + "'");
  if (options.compress != compression::none && model.gradients().is_cuda())
    return invalid_argument("gradient_sync: compression is implemented for CPU gradients only");
  std::unique_ptr<gradient_sync> s(new gradient_sync(model, comm, options));
  DTRAIN_RETURN_IF_ERROR(s->plan_buckets(comm.size()));
  DTRAIN_RETURN_IF_ERROR(s->place_gradients());
  gradient_sync* self = s.get();
  model.set_gradient_ready_hook([self](int64_t offset, int64_t) { self->on_ready(offset); });
  return s;
}

status gradient_sync::plan_buckets(int64_t align) {
  // Buckets hold whole parameters, taken from the end of the buffer: a
  // bucket is closed before the parameter that would take it past its
  // size, and a parameter larger than that is a bucket of its own. So no
  // bucket waits for a layer it holds only a slice of (the gradient-ready
  // hook reports whole layers), as PyTorch DDP assigns whole parameters.
  // A boundary then moves up to a multiple of the group's size, so that
  // under ZeRO every bucket but the one at the end splits evenly: the
  // bucket below it takes the first few (< N) elements of the parameter it
  // cuts, and launches after that parameter's layer anyway. Unsharded
  // buckets move the same way, so that a ring backend (Gloo) reduces every
  // element in the same order whatever the stage.
  buckets_.clear();
  std::vector<std::pair<int64_t, int64_t>> ranges;  // the parameters, [begin, end)
  for (const auto& slot : model_.slots())
    if (slot.count > 0)
      ranges.emplace_back(slot.offset, slot.offset + slot.count);
  std::sort(ranges.begin(), ranges.end());
  if (ranges.empty() && model_.parameter_count() > 0)
    ranges.emplace_back(0, model_.parameter_count());
  int64_t cap = options_.first_bucket_bytes / 4;
  int64_t end = model_.parameter_count(), begin = end;
  for (auto it = ranges.rbegin(); it != ranges.rend(); ++it) {
    const int64_t cut = (begin + align - 1) / align * align;
    if (begin < end && end - it->first > cap && cut < end) {
      buckets_.push_back({cut, end, nullptr, {}, {}});
      end = cut;
      cap = options_.bucket_bytes / 4;
    }
    begin = it->first;
  }
  if (options_.zero_stage > 0)
    begin = 0;  // the layout covers the whole buffer
  if (begin < end)
    buckets_.push_back({begin, end, nullptr, {}, {}});
  if (options_.zero_stage == 0)
    return status::ok();
  DTRAIN_ASSIGN_OR_RETURN(layout_, zero::shard_layout::plan(model_.parameter_count(), comm_.size(),
                                                            comm_.rank(), bucket_ranges()));
  return status::ok();
}


status gradient_sync::place_gradients() {
  if (comm_.size() == 1 || !model_.gradients().where().is_cpu() ||
      options_.compress != compression::none)
    return status::ok();
  // Stage 2 gives back the pages of the chunks other ranks own, a whole
  // huge page at a time; when a bucket's other chunks span enough to hold
  // some, the gradients live in private huge-page memory (and buckets go
  // through the communicator's staging). Otherwise they live in the
  // communicator's shared buffer and are reduced where they are (shared
  // memory: no copy in or out); elsewhere that is a plain tensor.
  int64_t widest = 0;  // the most elements of a bucket other ranks own
  for (const auto& b : layout_.buckets())
    widest = std::max(widest, b.end - b.begin - b.chunk);
  releasing_ = options_.zero_stage >= 2 &&
               widest * static_cast<int64_t>(sizeof(float)) >= 2 * static_cast<int64_t>(zero::huge_page_bytes);
  tensor storage;
  if (releasing_) {
    // Boundaries at multiples of N huge pages: every chunk then begins and
    // ends on a page, and all of the others' chunks can go back (a bucket
    // grows or shrinks by at most N pages).
    const int64_t page_floats = static_cast<int64_t>(zero::huge_page_bytes / sizeof(float));
    DTRAIN_RETURN_IF_ERROR(plan_buckets(comm_.size() * page_floats));
    DTRAIN_ASSIGN_OR_RETURN(storage, zero::huge_page_buffer(model_.parameter_count(), "gradients"));
  } else {
    DTRAIN_ASSIGN_OR_RETURN(storage, comm_.shared_buffer(model_.parameter_count()));
  }
  return model_.adopt_gradients(std::move(storage));
}

int64_t gradient_sync::released_bytes() const {
  int64_t total = 0;
  if (!releasing_)
    return total;
  for (const auto& b : layout_.buckets())
    total += static_cast<int64_t>(zero::foreign_pages(b, nullptr, false));
  return total;
}


std::vector<std::pair<int64_t, int64_t>> gradient_sync::bucket_ranges() const {
  std::vector<std::pair<int64_t, int64_t>> out;
  for (const auto& b : buckets_)
    out.emplace_back(b.begin, b.end);
  return out;
}

gradient_sync::micro_batch gradient_sync::begin_micro_batch() {
  syncing_ = micro_ == options_.aggregation_frequency - 1;
  backward_done_ = false;
  held_ = false;
  if (syncing_) {
    next_launch_ = 0;
    early_launches_ = 0;
  }
  return {micro_ > 0, syncing_};
}

status gradient_sync::hold() {
  if (syncing_ && next_launch_ > 0)
    return invalid_argument("gradient sync: held after backward had launched " +
                            std::to_string(next_launch_) + " bucket(s) of this step; hold before the first backward");
  held_ = true;
  return status::ok();
}

void gradient_sync::on_ready(int64_t offset) {
  if (!syncing_ || held_)
    return;
  while (next_launch_ < buckets_.size() && buckets_[next_launch_].begin >= offset) {
    launch(buckets_[next_launch_++]);
    ++early_launches_;
  }
  // Stage 2: buckets already reduced give their foreign pages back while
  // backward still writes the earlier layers, so that the whole gradient
  // is never resident at once.
  size_t in_flight = 0;
  for (size_t i = 0; options_.zero_stage >= 2 && i < next_launch_; ++i) {
    bucket& b = buckets_[i];
    // A failed one stays pending: finish() returns its error.
    if (b.pending && b.pending->completed() && b.pending->wait(milliseconds(0)).is_ok())
      (void)complete(b);
    in_flight += b.pending != nullptr;
  }
  // When pages go back, backward waits for the oldest buckets beyond two
  // in flight (their reduce-scatters are on the wire already, in order):
  // otherwise a link slower than backward lets every layer's gradient be
  // written, whole, before the first bucket is reduced, and the whole
  // gradient is resident at once after all.
  constexpr size_t max_in_flight = 2;
  for (size_t i = 0; releasing_ && in_flight > max_in_flight && i < next_launch_; ++i) {
    bucket& b = buckets_[i];
    if (!b.pending)
      continue;
    if (!b.pending->wait().is_ok())
      break;  // finish() returns the error
    (void)complete(b);
    --in_flight;
  }
}

void gradient_sync::launch(bucket& b) {
  if (comm_.size() == 1)
    return;  // the mean over one replica is its own gradient
  if (options_.zero_stage >= 2) {
    launch_scatter(b, part_of(b));
    return;
  }
  tensor grads = model_.gradients().view(b.begin, {b.end - b.begin});
  if (options_.compress == compression::none) {
    b.pending = comm_.all_reduce(grads, reduce_op::average);
    return;
  }
  // Two 16-bit values per float slot; an odd count leaves half a slot unused.
  const int64_t n = b.end - b.begin, slots = (n + 1) / 2;
  nn::ensure(b.packed, {slots}, device::cpu());
  nn::ensure(b.gathered, {slots * comm_.size()}, device::cpu());
  auto* out = reinterpret_cast<uint16_t*>(b.packed.data());
  const float* in = grads.data();
  bool bf16 = options_.compress == compression::bf16;
  for (int64_t i = 0; i < n; ++i)
    out[i] = bf16 ? to_bf16(in[i]) : to_fp16(in[i]);
  if (n % 2 != 0)
    out[n] = 0;
  b.pending = comm_.all_gather(b.packed, b.gathered);
}

const zero::bucket_shard& gradient_sync::part_of(const bucket& b) const {
  // buckets_ runs from the buffer's end, the layout from its start.
  return layout_.buckets()[buckets_.size() - 1 - static_cast<size_t>(&b - buckets_.data())];
}

void gradient_sync::launch_scatter(bucket& b, const zero::bucket_shard& part) {
  const int n = comm_.size();
  const int64_t mine = part.chunk * comm_.rank();
  tensor& grads = model_.gradients();
  if (!part.padded(n)) {  // in place: this rank's chunk lies in the bucket
    b.pending = comm_.reduce_scatter(grads.view(b.begin, {b.end - b.begin}),
                                     grads.view(b.begin + mine, {part.chunk}), reduce_op::average);
    return;
  }
  const int64_t len = b.end - b.begin;
  nn::ensure(b.packed, {part.chunk * n}, grads.where());
  b.packed.view(0, {len}).copy_from(grads.view(b.begin, {len}));
  tensor tail = b.packed.view(len, {part.chunk * n - len});
  ops::fill(tail, 0.0f);
  b.pending = comm_.reduce_scatter(b.packed, b.packed.view(mine, {part.chunk}), reduce_op::average);
}

void gradient_sync::release_foreign(const zero::bucket_shard& part) {
  // The parts other ranks own hold this rank's own, unreduced values that
  // nothing reads again: their whole huge pages go back to the system
  // until the next backward writes them (which overwrites: fresh zero
  // pages do).
  if (releasing_)
    (void)zero::foreign_pages(part, model_.gradients().data(), true);
}

status gradient_sync::complete(bucket& b) {
  if (!b.pending)
    return status::ok();  // nothing was sent (a group of one)
  status outcome = b.pending->wait();
  b.pending = nullptr;
  if (outcome && options_.zero_stage >= 2) {
    const zero::bucket_shard& part = part_of(b);
    if (part.padded(comm_.size()) && part.own_end > part.own_begin)
      model_.gradients().view(part.own_begin, {part.own_end - part.own_begin})
          .copy_from(b.packed.view(part.chunk * comm_.rank(), {part.own_end - part.own_begin}));
    release_foreign(part);
    return outcome;
  }
  if (!outcome || options_.compress == compression::none)
    return outcome;
  const int64_t n = b.end - b.begin, slots = (n + 1) / 2;
  float* grads = model_.gradients().data() + b.begin;
  bool bf16 = options_.compress == compression::bf16;
  const float inv = 1.0f / static_cast<float>(comm_.size());
  for (int q = 0; q < comm_.size(); ++q) {  // rank order: identical bits everywhere
    auto* part = reinterpret_cast<const uint16_t*>(b.gathered.data() + q * slots);
    for (int64_t i = 0; i < n; ++i) {
      float v = bf16 ? from_bf16(part[i]) : from_fp16(part[i]);
      grads[i] = q == 0 ? v : grads[i] + v;
    }
  }
  for (int64_t i = 0; i < n; ++i)
    grads[i] *= inv;
  return status::ok();
}

result<bool> gradient_sync::finish() {
  backward_done_ = true;
  if (!syncing_) {
    ++micro_;
    return false;
  }
  micro_ = 0;
  syncing_ = false;
  while (next_launch_ < buckets_.size())  // buckets backward never reported
    launch(buckets_[next_launch_++]);
  status first;
  for (auto& b : buckets_) {
    status s = complete(b);
    if (!s && first.is_ok())
      first = s.with_context("gradient sync");
  }
  if (!first)
    return first;
  if (options_.aggregation_frequency > 1)
    ops::scale(model_.gradients(), 1.0f / static_cast<float>(options_.aggregation_frequency));
  return true;
}

} // namespace dtrain::comm
