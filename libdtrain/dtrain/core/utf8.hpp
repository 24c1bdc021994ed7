#pragma once

#include <cstddef>
#include <string>
#include <string_view>

/// UTF-8 in byte strings that may not be UTF-8 (a process's log, cut into
/// chunks): where a cut leaves a character whole, and a valid copy for
/// documents that must be UTF-8 (JSON). Well-formed means Unicode's table
/// 3-7: no overlong forms, no surrogates, nothing above U+10FFFF. Pure
/// functions, thread-safe, nothing throws.
namespace dtrain::utf8 {

/// U+FFFD REPLACEMENT CHARACTER, encoded.
inline constexpr std::string_view replacement = "\xEF\xBF\xBD";

/// The length of `s` without a multi-byte sequence it ends inside of: when
/// its last 1-3 bytes are the well-formed beginning of a longer sequence,
/// the offset where that sequence starts; else s.size() (a whole
/// character at the end, or bytes that are invalid however they go on).
size_t complete_prefix_length(std::string_view s);

/// `s` with each maximal ill-formed subsequence replaced by U+FFFD (the
/// Unicode/WHATWG practice: an invalid byte is one U+FFFD, so is a
/// truncated sequence); well-formed text comes back unchanged.
std::string replace_invalid(std::string_view s);

} // namespace dtrain::utf8
