/// @file prod_case.h
/// @brief Lesson 9's case description: the options of a call, its tensors, their own layouts, and
/// what the caller does with its problem after norm_create. Included by plan.cu alone (its
/// definitions sit in plan.cu's unnamed namespace).
#pragma once

#include <array>
#include <cstdint>
#include <string>

#include "engine/gpu_case.h"
#include "lessons/09-production-norm/api.h"
#include "lessons/common/plan_helpers.h"

namespace workbook {
namespace {

namespace l9 = lesson9;

/// Options of a call, as bits.
enum : unsigned {
    kLayer = 1u << 0,       ///< LayerNorm (else RMSNorm)
    kBias = 1u << 1,        ///< a bias
    kRstd = 1u << 2,        ///< rstd written out
    kResidual = 1u << 3,    ///< a residual input
    kResidualOut = 1u << 4, ///< residual_out written (needs kResidual)
    kWeightF32 = 1u << 5,   ///< the weight stored in fp32
    kBiasF32 = 1u << 6,     ///< the bias stored in fp32
    kYInPlace = 1u << 7,    ///< y is exactly x
    kResInPlace = 1u << 8,  ///< residual_out is exactly residual
    kYDense = 1u << 9,      ///< y contiguous even where x is strided
    kPreNorm = kResidual | kResidualOut,
};

/// The tensors of a call, in the order prod_call creates them.
enum TensorId : int { tX, tResidual, tWeight, tBias, tY, tResidualOut, tRstd, kTensorCount };
const char* const kTensorName[kTensorCount] = {"x", "residual", "weight", "bias", "y", "residual_out", "rstd"};

/// One tensor's own layout where it differs from the case's (the layout table's cases).
struct OwnLayout {
    int64_t stride0 = 0, stride1 = 0;  ///< outer strides, 0: the case's (rstd: its batch stride, 3-D only)
    int64_t misalign = -1;             ///< elements past alignment, -1: the case's
};

/// What the caller does with its NormProblem between norm_create and the launch.
enum class AfterCreate {
    keep,    ///< keeps it alive and unchanged until the case ends
    change,  ///< reuses it for another call: the other mode, another eps, x and y exchanged, one row
    free,    ///< clears it and frees it
};

/// One GPU case. heads = 0: x is 2-D [rows = outer, cols]; otherwise 3-D [outer, heads, cols].
struct ProdCase {
    std::string name, what;
    int64_t outer, heads, cols;
    unsigned opts = 0;
    int64_t stride0 = 0, stride1 = 0;  ///< x's outer strides (0: contiguous)
    InputKind kind = InputKind::normal;
    bool large_mean = false;  ///< rows whose mean is far from zero (make_large_mean)
    float eps = 1e-5f;
    int64_t misalign = 0;         ///< every tensor this many elements off alignment
    int64_t weight_misalign = 0;  ///< the weight alone
    bool f16_only = false;
    int repeats = 2;
    std::array<OwnLayout, kTensorCount> own{};  ///< per-tensor strides and misalignment
    bool outlier_col0 = false;  ///< every row of x has one outlier of 30000; in some rows it is column 0
    float x_scale = 1.0f;       ///< x's magnitudes times this (0: every element of x is ±0 but an outlier)
    float x_outlier = 0.0f;     ///< non-zero: one element of each row of x (a column hashed from the row) this large
    AfterCreate after_create = AfterCreate::keep;
    bool relaunch = false;  ///< the descriptor launched twice, new input values at the same addresses between
};

int64_t rows_of(const ProdCase& c) { return c.heads ? c.outer * c.heads : c.outer; }

}  // namespace
}  // namespace workbook
