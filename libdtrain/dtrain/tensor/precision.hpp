#pragma once

#include <string>

#include "dtrain/core/status.hpp"

namespace dtrain {

/// The arithmetic a GEMM computes in. Storage never changes: parameters,
/// activations and gradients stay float32 buffers (the "master weights"), and
/// only the GEMM reads its float32 operands at a lower precision, accumulating
/// in float32 and writing float32 (cuBLAS's CUBLAS_COMPUTE_32F_FAST_* modes).
/// So the gradient sync and the optimizer see float32 whatever the choice.
///
///  - fp32: plain float32 (the default; bitwise the old behaviour).
///  - tf32: operands rounded to 11 significant bits (10 stored), float32's
///    range.
///  - bf16: operands rounded to bfloat16: 8 significant bits (7 stored),
///    float32's range.
///  - fp16: operands rounded to IEEE half: 11 significant bits (10 stored),
///    largest finite 65504, so gradients need loss scaling
///    (train::loss_scaler) to neither underflow nor overflow.
enum class precision { fp32, tf32, bf16, fp16 };

const char* to_string(precision p);
/// "fp32", "tf32", "bf16" or "fp16"; anything else is invalid_argument
/// naming the value and the allowed ones.
result<precision> parse_precision(const std::string& text);

/// `x` rounded to precision `p` and widened back to float32, as the CPU's
/// emulated GEMM reads its operands: round to nearest, ties to even; NaN
/// stays NaN, infinities stay infinite; values past the format's largest
/// finite one become infinite (fp16: |x| >= 65520 rounds to inf, 65504 is
/// kept); fp16 subnormals are rounded as IEEE half does (multiples of 2^-24).
/// fp32 returns x unchanged.
float round_to(precision p, float x);

} // namespace dtrain
