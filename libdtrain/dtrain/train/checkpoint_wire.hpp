#pragma once

// How the replica group's checkpoint code (replica_checkpoint.cpp,
// async_checkpoint.cpp) moves statuses, shard descriptions and a save's
// directories through the small byte collectives of replica_context.
// Internal to dtrain::train.

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "dtrain/checkpoint/checkpoint.hpp"
#include "dtrain/core/status.hpp"
#include "dtrain/optim/optimizer.hpp"

namespace dtrain::train::wire {

using bytes = std::vector<char>;

/// A status as bytes: empty when ok, else the code's byte (never 0) and
/// the message.
inline bytes to_bytes(const status& s) {
  if (s.is_ok())
    return {};
  bytes out(1, static_cast<char>(s.code()));
  out.insert(out.end(), s.message().begin(), s.message().end());
  return out;
}

inline status from_bytes(const bytes& b) {
  if (b.empty())
    return status::ok();
  return status(static_cast<error_code>(b[0]), std::string(b.begin() + 1, b.end()));
}

/// A value, or the error that stands for it: a 0 byte then the value's
/// bytes, or to_bytes(error).
inline bytes value_to_bytes(const result<bytes>& r) {
  if (!r.is_ok())
    return to_bytes(r.error());
  bytes out(1, '\0');
  out.insert(out.end(), r->begin(), r->end());
  return out;
}

inline result<bytes> value_from_bytes(const bytes& b) {
  if (b.empty() || b[0] != '\0')
    return b.empty() ? status(error_code::internal, "an empty reply") : from_bytes(b);
  return bytes(b.begin() + 1, b.end());
}

template <class T>
void put(bytes& out, T v) {
  const char* p = reinterpret_cast<const char*>(&v);
  out.insert(out.end(), p, p + sizeof v);
}

inline bytes encode(const checkpoint::shard_info& s) {
  bytes out;
  put(out, s.rank);
  put(out, s.size);
  put(out, s.checksum);
  out.insert(out.end(), s.file.begin(), s.file.end());
  return out;
}

inline result<checkpoint::shard_info> decode(const bytes& b) {
  checkpoint::shard_info s;
  constexpr size_t fixed = sizeof s.rank + sizeof s.size + sizeof s.checksum;
  if (b.size() < fixed)
    return status(error_code::internal, "a shard description of " + std::to_string(b.size()) +
                                            " bytes");
  std::memcpy(&s.rank, b.data(), sizeof s.rank);
  std::memcpy(&s.size, b.data() + sizeof s.rank, sizeof s.size);
  std::memcpy(&s.checksum, b.data() + sizeof s.rank + sizeof s.size, sizeof s.checksum);
  s.file.assign(b.begin() + fixed, b.end());
  return s;
}

/// A save's two directories, NUL-separated (no path holds a NUL).
inline bytes encode(const checkpoint::pending_save& save) {
  bytes out(save.dir.begin(), save.dir.end());
  out.push_back('\0');
  out.insert(out.end(), save.temp.begin(), save.temp.end());
  return out;
}

inline checkpoint::pending_save decode_pending(const bytes& b) {
  const auto nul = std::find(b.begin(), b.end(), '\0');
  checkpoint::pending_save save;
  save.dir.assign(b.begin(), nul);
  save.temp.assign(nul == b.end() ? nul : nul + 1, b.end());
  return save;
}

/// The manifest's shard list from every replica's value_to_bytes(encode(
/// shard_info)) in rank order; the first replica that failed names the error.
inline result<std::vector<checkpoint::shard_info>> decode_shards(const std::vector<bytes>& all) {
  std::vector<checkpoint::shard_info> out;
  for (size_t r = 0; r < all.size(); ++r) {
    auto described = value_from_bytes(all[r]);
    if (!described.is_ok())
      return described.error().with_context("replica " + std::to_string(r));
    auto info = decode(*described);
    if (!info.is_ok())
      return info.error().with_context("replica " + std::to_string(r));
    out.push_back(std::move(*info));
  }
  return out;
}

/// The pieces (checkpoint::piece or target_piece) of a buffer this rank
/// holds only in part (ZeRO): the `owned` ranges, packed in order from
/// `data` (optimizer state) or, when not `packed`, each at its own
/// position in a buffer of the whole count (stage 3's parameters); one
/// empty piece when it owns none (no pieces at all would mean the whole
/// buffer). Nothing for a buffer held whole (`sharded` false).
template <class Piece, class Float>
std::vector<Piece> pieces_of(const std::vector<optim::span>& owned, Float* data, bool sharded,
                             bool packed) {
  std::vector<Piece> out;
  int64_t at = 0;
  for (const optim::span& r : owned) {
    out.push_back({r.begin, r.count, data + (packed ? at : r.begin)});
    at += r.count;
  }
  if (sharded && out.empty())
    out.push_back({0, 0, nullptr});
  return out;
}

} // namespace dtrain::train::wire
