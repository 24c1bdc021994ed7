#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

/// 64-bit FNV-1a (Fowler-Noll-Vo, the xor-then-multiply variant): the one
/// non-cryptographic hash dtrain uses where a short stable name or a quick
/// equality check of bytes is wanted (a configuration's hash, a shared
/// memory registry's name, a long store key's file name, replicas'
/// parameters). Not for anything an adversary chooses: use SHA-256 there.
/// Pure functions, thread-safe, nothing throws.
namespace dtrain::hash {

/// FNV-1a's 64-bit offset basis and prime, as the reference defines them.
inline constexpr uint64_t fnv1a_offset_basis = 14695981039346656037ull;  // 0xcbf29ce484222325
inline constexpr uint64_t fnv1a_prime = 1099511628211ull;                 // 0x100000001b3

/// FNV-1a of `size` bytes at `data`, continuing from `h` (the basis for a
/// fresh hash; a previous result to hash several pieces as one).
inline uint64_t fnv1a(const void* data, size_t size, uint64_t h = fnv1a_offset_basis) {
  const auto* p = static_cast<const unsigned char*>(data);
  for (size_t i = 0; i < size; ++i)
    h = (h ^ p[i]) * fnv1a_prime;
  return h;
}

/// FNV-1a of the bytes of `s`: "" gives the offset basis, "a"
/// 0xaf63dc4c8601ec8c.
inline uint64_t fnv1a(std::string_view s) { return fnv1a(s.data(), s.size()); }

/// `h` as 16 lowercase hex digits, zero-padded.
std::string hex16(uint64_t h);

} // namespace dtrain::hash
