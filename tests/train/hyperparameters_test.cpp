// An operator's string-keyed configuration: typed getters with defaults,
// integer lists, errors that name the key and the value, unknown keys.
#include <boost/test/unit_test.hpp>

#include "dtrain/train/hyperparameters.hpp"

using dtrain::error_code;
// The suite is a namespace of the same name: the type goes by another one.
using config = dtrain::train::hyperparameters;

namespace {

bool names(const dtrain::status& s, const std::string& text) {
  return s.message().find(text) != std::string::npos;
}

} // namespace

BOOST_AUTO_TEST_SUITE(hyperparameters)

BOOST_AUTO_TEST_CASE(typed_getters_parse_the_values_that_are_set) {
  config hp({{"name", "adam"}, {"epochs", " 15 "}, {"lr", "1e-3"},
                        {"on", "true"}, {"off", "no"}, {"one", "1"}});
  BOOST_TEST(hp.get_string("name", "sgd").value() == "adam");
  BOOST_TEST(hp.get_int("epochs", 1).value() == 15);
  BOOST_TEST(hp.get_double("lr", 0.5).value() == 1e-3);
  BOOST_TEST(hp.get_double("epochs", 0.5).value() == 15.0);
  BOOST_TEST(hp.get_bool("on", false).value());
  BOOST_TEST(!hp.get_bool("off", true).value());
  BOOST_TEST(hp.get_bool("one", false).value());
}

BOOST_AUTO_TEST_CASE(missing_keys_take_the_default) {
  config hp;
  BOOST_TEST(hp.get_string("name", "sgd").value() == "sgd");
  BOOST_TEST(hp.get_int("epochs", 3).value() == 3);
  BOOST_TEST(hp.get_double("lr", 0.25).value() == 0.25);
  BOOST_TEST(hp.get_bool("on", true).value());
  BOOST_TEST((hp.get_int_list("hidden", {1, 2}).value() == std::vector<int64_t>{1, 2}));
  BOOST_TEST(!hp.contains("name"));
  hp.set("name", "adamw");
  BOOST_TEST(hp.contains("name"));
  BOOST_TEST(hp.get_string("name", "sgd").value() == "adamw");
}

BOOST_AUTO_TEST_CASE(integer_lists_read_with_or_without_brackets) {
  config hp({{"plain", "256,128,100"}, {"bracketed", "[3, 6]"}, {"one", "7"},
                        {"empty", ""}, {"empty_brackets", "[]"}});
  using list = std::vector<int64_t>;
  BOOST_TEST((hp.get_int_list("plain", {}).value() == list{256, 128, 100}));
  BOOST_TEST((hp.get_int_list("bracketed", {}).value() == list{3, 6}));
  BOOST_TEST((hp.get_int_list("one", {}).value() == list{7}));
  BOOST_TEST(hp.get_int_list("empty", {1}).value().empty());
  BOOST_TEST(hp.get_int_list("empty_brackets", {1}).value().empty());
}

BOOST_AUTO_TEST_CASE(a_value_that_does_not_parse_names_the_key_and_the_value) {
  config hp({{"epochs", "many"}, {"lr", "fast"}, {"on", "maybe"},
                        {"hidden", "256,x"}, {"gap", "1,,2"}, {"frac", "2.5"}});
  struct case_t {
    dtrain::status status;
    std::string key, value;
  };
  for (auto& c : {case_t{hp.get_int("epochs", 0).to_status(), "epochs", "many"},
                  case_t{hp.get_int("frac", 0).to_status(), "frac", "2.5"},
                  case_t{hp.get_double("lr", 0).to_status(), "lr", "fast"},
                  case_t{hp.get_bool("on", false).to_status(), "on", "maybe"},
                  case_t{hp.get_int_list("hidden", {}).to_status(), "hidden", "256,x"},
                  case_t{hp.get_int_list("gap", {}).to_status(), "gap", "1,,2"}}) {
    BOOST_TEST(c.status.code() == error_code::invalid_argument, c.key);
    BOOST_TEST(names(c.status, "'" + c.key + "'"), c.status.message());
    BOOST_TEST(names(c.status, c.value), c.status.message());
  }
}

BOOST_AUTO_TEST_CASE(check_known_names_the_first_unknown_key_and_the_accepted_ones) {
  config hp({{"lr", "0.1"}, {"lernrate", "0.1"}});
  auto s = hp.check_known({"lr", "epochs"}, "operator 'demo'");
  BOOST_TEST(s.code() == error_code::invalid_argument);
  BOOST_TEST(names(s, "operator 'demo'"), s.message());
  BOOST_TEST(names(s, "'lernrate'"), s.message());
  BOOST_TEST(names(s, "lr, epochs"), s.message());
  BOOST_TEST(hp.check_known({"lr", "lernrate"}, "demo").is_ok());
  BOOST_TEST(config().check_known({}, "demo").is_ok());
}

BOOST_AUTO_TEST_SUITE_END()
