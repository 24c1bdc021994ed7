#include "support/finite_difference.hpp"

#include <boost/test/unit_test.hpp>

#include <cmath>

#include "support/test_util.hpp"

namespace dtrain::testing {

double weighted_sum(const tensor& y, const tensor& r) {
  double s = 0;
  for (int64_t i = 0; i < y.numel(); ++i)
    s += static_cast<double>(y.data()[i]) * r.data()[i];
  return s;
}

int count_mismatches(tensor values, const std::vector<float>& analytic,
                     const std::function<double()>& f, const std::string& what) {
  int bad = 0;
  for (int64_t i = 0; i < values.numel(); ++i) {
    float saved = values.data()[i];
    values.data()[i] = saved + fd_eps;
    double plus = f();
    values.data()[i] = saved - fd_eps;
    double minus = f();
    values.data()[i] = saved;
    double numeric = (plus - minus) / (2.0 * fd_eps);
    if (std::abs(numeric - analytic[i]) > 2e-3 + 2e-2 * std::abs(analytic[i])) {
      BOOST_TEST_MESSAGE(what << "[" << i << "]: numeric " << numeric << ", analytic "
                              << analytic[i]);
      ++bad;
    }
  }
  return bad;
}

int check_module_gradients(nn::module& m, const tensor& x, uint64_t seed, bool training,
                           bool check_input, bool perturb) {
  std::vector<tensor> params, grads, buffers;
  rng gen(seed);
  for (auto& spec : m.parameter_specs()) {
    params.push_back(tensor::empty(spec.shape));
    grads.push_back(tensor::zeros(spec.shape));
  }
  m.initialize(params, gen);
  if (perturb)
    for (size_t p = 0; p < params.size(); ++p) {
      auto noise = random_tensor(params[p].shape(), seed + 10 + p, 0.3f);
      for (int64_t i = 0; i < params[p].numel(); ++i)
        params[p].data()[i] += noise.data()[i];
    }
  m.bind(params, grads);
  for (auto& spec : m.buffer_specs())
    buffers.push_back(tensor::full(spec.shape, spec.initial));
  m.bind_buffers(buffers);
  nn::forward_context ctx{training, seed + 2};
  int64_t out = m.output_features(x.size(1)).value();
  auto r = random_tensor({x.size(0), out}, seed + 3);
  m.forward(x, ctx);
  BOOST_REQUIRE(m.last_status().is_ok());
  const tensor& input_grad = m.backward(r, {check_input, true});
  std::vector<float> dx = check_input ? input_grad.to_vector() : std::vector<float>{};
  int bad = 0;
  auto loss = [&] { return weighted_sum(m.forward(x, ctx), r); };
  if (check_input)
    bad += count_mismatches(x, dx, loss, m.describe() + " input");
  for (size_t p = 0; p < params.size(); ++p)
    bad += count_mismatches(params[p], grads[p].to_vector(), loss,
                            m.describe() + " " + m.parameter_specs()[p].name);
  return bad;
}

} // namespace dtrain::testing
