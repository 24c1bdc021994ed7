// The Boost.Test module of dtrain-roles-test.
#define BOOST_TEST_MODULE dtrain_roles
#include <boost/test/unit_test.hpp>
