#include <boost/test/unit_test.hpp>

#include "dtrain/tensor/tensor.hpp"

using namespace dtrain;

BOOST_AUTO_TEST_SUITE(tensors)

BOOST_AUTO_TEST_CASE(from_vector_round_trips_values_and_shape) {
  auto t = dtrain::tensor::from_vector({1, 2, 3, 4, 5, 6}, {2, 3});
  BOOST_TEST(t.numel() == 6);
  BOOST_TEST(t.size(0) == 2);
  BOOST_TEST(t.size(-1) == 3);
  BOOST_TEST((t.to_vector() == std::vector<float>{1, 2, 3, 4, 5, 6}));
  BOOST_TEST(shape_string(t.shape()) == "[2, 3]");
}

BOOST_AUTO_TEST_CASE(host_memory_is_64_byte_aligned) {
  auto t = dtrain::tensor::empty({3, 7});
  BOOST_TEST(reinterpret_cast<uintptr_t>(t.data()) % 64 == 0);
}

BOOST_AUTO_TEST_CASE(views_alias_their_parent) {
  auto flat = dtrain::tensor::zeros({10});
  auto v = flat.view(4, {2, 3});
  v.data()[0] = 7.0f;
  v.data()[5] = 9.0f;
  BOOST_TEST(flat.data()[4] == 7.0f);
  BOOST_TEST(flat.data()[9] == 9.0f);
  auto r = dtrain::tensor::from_vector({1, 2, 3, 4, 5, 6}, {3, 2}).rows(1, 3);
  BOOST_TEST((r.to_vector() == std::vector<float>{3, 4, 5, 6}));
}

BOOST_AUTO_TEST_CASE(clone_is_a_deep_copy) {
  auto a = dtrain::tensor::full({4}, 2.5f);
  auto b = a.clone();
  b.data()[0] = 0.0f;
  BOOST_TEST(a.data()[0] == 2.5f);
  BOOST_TEST(!a.bitwise_equal(b));
  b.copy_from(a);
  BOOST_TEST(a.bitwise_equal(b));
}

BOOST_AUTO_TEST_CASE(empty_shapes_are_allowed) {
  auto t = dtrain::tensor::zeros({0, 5});
  BOOST_TEST(t.numel() == 0);
  BOOST_TEST(t.to_vector().empty());
  BOOST_TEST(t.defined());
}

BOOST_AUTO_TEST_SUITE_END()
