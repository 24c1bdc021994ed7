// The Boost.Test module of dtrain-actors-test.
#define BOOST_TEST_MODULE dtrain_actors
#include <boost/test/unit_test.hpp>
