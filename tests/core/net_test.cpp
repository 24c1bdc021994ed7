// What counts as loopback (and so may go without TLS): literal addresses
// in 127.0.0.0/8, ::1 and "localhost", never a name that only looks like one.
#include <boost/test/unit_test.hpp>

#include <string>

#include "dtrain/core/net.hpp"


BOOST_AUTO_TEST_SUITE(net)

BOOST_AUTO_TEST_CASE(literal_loopback_addresses_and_localhost_are_loopback) {
  for (const std::string address : {"127.0.0.1", "127.1.2.3", "127.0.1.1", "127.255.255.255",
                                    "::1", "0:0:0:0:0:0:0:1", "localhost"})
    BOOST_TEST(dtrain::net::is_loopback(address), address);
}

BOOST_AUTO_TEST_CASE(names_that_begin_like_a_loopback_address_are_not_loopback) {
  for (const std::string address :
       {"127.example.net", "127.0.0.1.example.net", "127.", "127", "127.0.0.1 ", " 127.0.0.1",
        "127.0.0.1:4000", "127.0.0.256", "localhost.example.net", "localhostx", "::1.example",
        "::2", "::", "", "0.0.0.0", "10.0.0.1", "128.0.0.1", "1.127.0.0", "::ffff:10.0.0.1"})
    BOOST_TEST(!dtrain::net::is_loopback(address), "'" << address << "'");
}

BOOST_AUTO_TEST_SUITE_END()
