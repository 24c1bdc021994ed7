// What counts as loopback (and so may go without TLS): literal addresses
// in 127.0.0.0/8, ::1 and "localhost", never a name that only looks like one.
#include <boost/test/unit_test.hpp>

#include <string>

#include <unistd.h>

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

// Owners ("host pid"), node names and registry names all take the host's
// name from here: the kernel's (gethostname), never an empty one.
BOOST_AUTO_TEST_CASE(the_host_name_is_the_kernels_and_never_empty) {
  char kernel[256] = {};
  BOOST_REQUIRE(gethostname(kernel, sizeof kernel - 1) == 0);
  const std::string name = dtrain::net::host_name();
  BOOST_TEST(!name.empty());
  if (kernel[0] != 0)
    BOOST_TEST(name == kernel);
  BOOST_TEST(dtrain::net::host_identity().rfind(name + "/", 0) == 0u);
}

BOOST_AUTO_TEST_SUITE_END()
