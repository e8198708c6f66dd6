/// @file fp8_checks.h
/// @brief Lesson 11's outputs against the fp64 oracle: each row's scale and every e4m3 q.
#pragma once

#include <cuda_runtime.h>

#include <string>

#include "engine/device_tensor.h"
#include "workbook/oracle.h"

namespace workbook {

/// What one lesson 11 call is judged against: the problem (x, weight, eps), the clip and T.
struct Fp8Problem {
    OracleProblem p;
    double clip = 0;  ///< +infinity: no clip
    DType dtype = DType::f32;
};

/**
 * Checks `scale` (rows fp32 values) and `q` (rows × cols e4m3 bytes) with the rules of
 * tolerance.h (fp8_scale_accepts, fp8_accepts) and the contract's rows: an all-zero row has
 * scale 0 and q 0, a row holding a NaN dequantises to NaN. Returns "" when both are right,
 * otherwise what is wrong, with the first wrong row or element recomputed on the CPU and its
 * likely cause named where the values show it (a scale taken before the weight, a conversion
 * that does not saturate, a 0 / 0 on an all-zero row, a NaN hidden by the max).
 */
std::string check_fp8_outputs(const Fp8Problem& f, const DeviceTensor& q, const DeviceTensor& scale,
                              cudaStream_t stream);

}  // namespace workbook
