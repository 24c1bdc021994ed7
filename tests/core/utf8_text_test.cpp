// UTF-8 in byte strings: where a cut leaves characters whole, and invalid
// bytes replaced by U+FFFD.
#include <boost/test/unit_test.hpp>

#include <string>

#include "dtrain/core/utf8.hpp"

using namespace dtrain;

namespace {
const std::string euro = "\xE2\x82\xAC";            // U+20AC, 3 bytes
const std::string smile = "\xF0\x9F\x98\x80";       // U+1F600, 4 bytes
const std::string fffd(utf8::replacement);
} // namespace

BOOST_AUTO_TEST_SUITE(utf8_text)

BOOST_AUTO_TEST_CASE(a_cut_inside_a_character_ends_before_it) {
  const std::string text = "ab" + euro;
  BOOST_TEST(utf8::complete_prefix_length(text) == 5u);
  BOOST_TEST(utf8::complete_prefix_length(text.substr(0, 4)) == 2u);
  BOOST_TEST(utf8::complete_prefix_length(text.substr(0, 3)) == 2u);
  BOOST_TEST(utf8::complete_prefix_length(text.substr(0, 2)) == 2u);
  const std::string four = "x" + smile;
  for (size_t cut = 2; cut < four.size(); ++cut)
    BOOST_TEST(utf8::complete_prefix_length(four.substr(0, cut)) == 1u, "cut " << cut);
  BOOST_TEST(utf8::complete_prefix_length(four) == four.size());
  BOOST_TEST(utf8::complete_prefix_length("") == 0u);
  BOOST_TEST(utf8::complete_prefix_length(euro.substr(0, 2)) == 0u);
}

BOOST_AUTO_TEST_CASE(bytes_invalid_however_they_go_on_are_not_cut) {
  BOOST_TEST(utf8::complete_prefix_length("ab\xFF") == 3u);
  BOOST_TEST(utf8::complete_prefix_length("ab\x80\x80") == 4u);      // no lead
  BOOST_TEST(utf8::complete_prefix_length("ab\xE0\x80") == 4u);      // overlong
  BOOST_TEST(utf8::complete_prefix_length("ab\xED\xA0") == 4u);      // surrogate
  BOOST_TEST(utf8::complete_prefix_length("ab\x80\x80\x80\x80") == 6u);
}

BOOST_AUTO_TEST_CASE(invalid_bytes_become_the_replacement_character) {
  BOOST_TEST(utf8::replace_invalid("plain text\n") == "plain text\n");
  BOOST_TEST(utf8::replace_invalid(euro + smile + "\xC3\xA9") == euro + smile + "\xC3\xA9");
  BOOST_TEST(utf8::replace_invalid("a\xFF" "b") == "a" + fffd + "b");
  // A truncated sequence is one U+FFFD, the byte after it kept.
  BOOST_TEST(utf8::replace_invalid("a\xE2\x82" "b") == "a" + fffd + "b");
  BOOST_TEST(utf8::replace_invalid("a\xE2\x82") == "a" + fffd);
  // Overlong forms, surrogates and beyond U+10FFFF: one U+FFFD per byte.
  BOOST_TEST(utf8::replace_invalid("\xC0\xAF") == fffd + fffd);
  BOOST_TEST(utf8::replace_invalid("\xED\xA0\x80") == fffd + fffd + fffd);
  BOOST_TEST(utf8::replace_invalid("\xF4\x90\x80\x80") == fffd + fffd + fffd + fffd);
  BOOST_TEST(utf8::replace_invalid("\x80") == fffd);
}

BOOST_AUTO_TEST_SUITE_END()
