// The Boost.Test module of dtrain-core-test: every suite in tests/ links in.
#define BOOST_TEST_MODULE dtrain_core
#include <boost/test/unit_test.hpp>
