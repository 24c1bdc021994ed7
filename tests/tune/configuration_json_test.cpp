// Typed JSON for configurations (tune/space.hpp: to_json, config_from_json)
// and the JSON text helpers under it (core/json.hpp): every value type
// round trips to the bit, the text is what Python's json module writes,
// and malformed text is corrupt_data naming the offset.
#include <boost/test/unit_test.hpp>

#include <cmath>
#include <cstring>
#include <limits>

#include "dtrain/core/json.hpp"
#include "dtrain/tune/space.hpp"

using namespace dtrain;
using namespace dtrain::tune;

namespace {

bool same_bits(double a, double b) {
  if (std::isnan(a) || std::isnan(b))
    return std::isnan(a) && std::isnan(b);
  return std::memcmp(&a, &b, sizeof a) == 0;
}

bool same(const config& a, const config& b) {
  if (a.size() != b.size())
    return false;
  for (const auto& [name, v] : a) {
    const auto it = b.find(name);
    if (it == b.end() || it->second.index() != v.index())
      return false;
    if (const auto* d = std::get_if<double>(&v)) {
      if (!same_bits(*d, std::get<double>(it->second)))
        return false;
    } else if (v != it->second) {
      return false;
    }
  }
  return true;
}

} // namespace

BOOST_AUTO_TEST_SUITE(configuration_json)

BOOST_AUTO_TEST_CASE(every_value_type_round_trips_to_the_bit) {
  const double inf = std::numeric_limits<double>::infinity();
  config c;
  c["int_max"] = std::numeric_limits<int64_t>::max();
  c["int_min"] = std::numeric_limits<int64_t>::min();
  c["zero"] = int64_t{0};
  const std::vector<double> doubles = {0.1, 1.0, 1e-300, 4.9e-324, 2.2250738585072009e-308,
                                       -0.0, 0.0, 1.7976931348623157e308, 1e22, 123456789.0,
                                       std::numeric_limits<double>::quiet_NaN(), inf, -inf};
  for (size_t i = 0; i < doubles.size(); ++i)
    c["d" + std::to_string(10 + i)] = doubles[i];
  c["quotes"] = std::string("say \"hi\" \\ back/slash");
  c["controls"] = std::string("a\nb\tc\rd\x01\x1f\b\f");
  c["utf8"] = std::string("héllo 日本 🎉");
  c["empty"] = std::string();
  c["weird \"key\"\n"] = true;
  c["no"] = false;
  const std::string text = to_json(c);
  const auto back = config_from_json(text);
  BOOST_REQUIRE_MESSAGE(back.is_ok(), back.error().to_string() << " reading " << text);
  BOOST_TEST(same(c, *back), text);
  BOOST_TEST(to_json(*back) == text);
}

BOOST_AUTO_TEST_CASE(the_text_is_what_python_s_json_module_writes) {
  const config c = {{"a", 1.0},
                    {"b", int64_t{1}},
                    {"c", std::numeric_limits<double>::quiet_NaN()},
                    {"d", -std::numeric_limits<double>::infinity()},
                    {"e", std::string("x\"y\n")},
                    {"f", true},
                    {"g", -0.0},
                    {"h", 0.1}};
  BOOST_TEST(to_json(c) == R"({"a": 1.0, "b": 1, "c": NaN, "d": -Infinity, "e": "x\"y\n", )"
                           R"("f": true, "g": -0.0, "h": 0.1})");
  BOOST_TEST(to_json(config{}) == "{}");
  BOOST_TEST(json::number(1e-300) == "1e-300");
  BOOST_TEST(json::number(1e22) == "1e+22");
  BOOST_TEST(json::number(std::numeric_limits<double>::infinity()) == "Infinity");
  BOOST_TEST(json::quoted(std::string("\x01", 1)) == "\"\\u0001\"");
}

BOOST_AUTO_TEST_CASE(json_from_elsewhere_is_read_with_its_escapes_and_spaces) {
  const auto c = config_from_json(" { \"a\" : 2 ,\n\"b\":\"\\u00e9\\ud83c\\udf89\\/\" , \"c\":1E3 } ");
  BOOST_REQUIRE_MESSAGE(c.is_ok(), c.error().to_string());
  BOOST_TEST(std::get<int64_t>(c->at("a")) == 2);
  BOOST_TEST(std::get<std::string>(c->at("b")) == "é🎉/");
  BOOST_TEST(std::get<double>(c->at("c")) == 1000.0);
}

BOOST_AUTO_TEST_CASE(malformed_text_is_corrupt_data_naming_the_offset) {
  for (const char* text :
       {"", "[]", "{", "{\"a\"}", "{\"a\": }", "{\"a\": 1,}", "{\"a\": 1} x", "{a: 1}",
        "{\"a\": null}", "{\"a\": [1]}", "{\"a\": {}}", "{\"a\": 1.2.3}", "{\"a\": 1e999}",
        "{\"a\": 99999999999999999999}", "{\"a\": \"unterminated}", "{\"a\": \"\\x\"}",
        "{\"a\": \"\\ud800\"}", "{\"a\": \"\\u12\"}", "{\"a\": 1, \"a\": 2}", "{\"a\": tru}",
        "{\"a\": \"raw\nnewline\"}", "{\"a\": nan}"}) {
    const auto c = config_from_json(text);
    BOOST_TEST(c.error().code() == error_code::corrupt_data, text);
    BOOST_TEST(c.error().message().find("offset") != std::string::npos, c.error().message());
  }
}

BOOST_AUTO_TEST_SUITE_END()
