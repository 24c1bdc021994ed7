#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "dtrain/nn/module.hpp"

/// Finite-difference gradient checks shared by the nn suites.
///
/// A module's output y is reduced to L = sum(y * R) for a fixed random R, so
/// dL/dy = R; every input and parameter element is nudged by +-eps and the
/// central difference (L+ - L-) / 2 eps compared with the analytic gradient.
namespace dtrain::testing {

constexpr float fd_eps = 1e-2f;

/// sum(y * r) in double.
double weighted_sum(const tensor& y, const tensor& r);

/// Central differences of f over every element of `values` (a host tensor
/// that f reads), against `analytic`; logs and counts the elements that
/// disagree beyond 2e-3 + 2e-2 |analytic|.
int count_mismatches(tensor values, const std::vector<float>& analytic,
                     const std::function<double()>& f, const std::string& what);

/// Binds `m` to fresh parameters initialized from `seed` (then perturbed by
/// normal(0, 0.3) noise when `perturb`, so that weights of 1 and biases of
/// 0 do not hide a wrong gradient), runs forward(x) and backward(R), and
/// returns the mismatches of dL/dx (when check_input) and of every
/// parameter. The module's buffers are bound to fresh initial values.
int check_module_gradients(nn::module& m, const tensor& x, uint64_t seed, bool training = true,
                           bool check_input = true, bool perturb = false);

} // namespace dtrain::testing
