// The Boost.Test module of dtrain-libtorch-test: the libtorch adapter's
// suites (built only where libtorch is found).
#define BOOST_TEST_MODULE dtrain_libtorch
#include <boost/test/unit_test.hpp>
