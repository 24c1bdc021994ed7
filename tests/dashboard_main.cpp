// The Boost.Test module of dtrain-dashboard-test.
#define BOOST_TEST_MODULE dtrain_dashboard
#include <boost/test/unit_test.hpp>
