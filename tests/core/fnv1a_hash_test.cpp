// FNV-1a 64: the reference's test vectors, pieces hashed as one, and the
// hex spelling the configuration hash and registry names use.
#include <boost/test/unit_test.hpp>

#include <cstdint>
#include <string>

#include "dtrain/core/hash.hpp"

using namespace dtrain;

BOOST_AUTO_TEST_SUITE(fnv1a_hash)

BOOST_AUTO_TEST_CASE(the_reference_test_vectors_come_out) {
  BOOST_TEST(hash::fnv1a("") == 0xcbf29ce484222325ull);
  BOOST_TEST(hash::fnv1a("") == hash::fnv1a_offset_basis);
  BOOST_TEST(hash::fnv1a("a") == 0xaf63dc4c8601ec8cull);
  BOOST_TEST(hash::fnv1a("foobar") == 0x85944171f73967e8ull);
}

BOOST_AUTO_TEST_CASE(pieces_hashed_in_turn_equal_their_concatenation) {
  const std::string foo = "foo", bar = "bar";
  const uint64_t first = hash::fnv1a(foo.data(), foo.size());
  BOOST_TEST(hash::fnv1a(bar.data(), bar.size(), first) == hash::fnv1a("foobar"));
}

BOOST_AUTO_TEST_CASE(bytes_past_a_nul_count) {
  const std::string with_nul("a\0b", 3);
  BOOST_TEST(hash::fnv1a(with_nul) != hash::fnv1a("a"));
  BOOST_TEST(hash::fnv1a(with_nul) != hash::fnv1a("ab"));
}

BOOST_AUTO_TEST_CASE(hex16_is_sixteen_lowercase_zero_padded_digits) {
  BOOST_TEST(hash::hex16(0xaf63dc4c8601ec8cull) == "af63dc4c8601ec8c");
  BOOST_TEST(hash::hex16(0x1f) == "000000000000001f");
  BOOST_TEST(hash::hex16(0) == "0000000000000000");
  BOOST_TEST(hash::hex16(UINT64_MAX) == "ffffffffffffffff");
}

BOOST_AUTO_TEST_SUITE_END()
