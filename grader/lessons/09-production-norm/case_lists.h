/// @file case_lists.h
/// @brief Lesson 9's GPU cases: the hand-written list by option, rows and values, the layout cases
/// generated for every tensor, the cases of the contract's rules, and those written from surviving
/// mutants (the kernels' own paths and the launch plan's boundaries). Included by plan.cu alone.
#pragma once

#include <cstdint>
#include <vector>

#include "lessons/09-production-norm/prod_case.h"

namespace workbook {
namespace {

/// Layout cases generated for every tensor argument, 2-D and 3-D: a base aligned only to its
/// element size (every other pointer 16-byte aligned), an outer stride that no vector width
/// divides, padded rows (the padding must stay untouched), and for the weight and bias the same
/// in fp32. Every option is on, out of place, so each tensor is present; rows of 264 columns let
/// every dtype use 16-byte vectors where the layout allows them.
std::vector<ProdCase> layout_cases() {
    std::vector<ProdCase> out;
    const unsigned every = kLayer | kBias | kRstd | kPreNorm;
    const int64_t cols = 264;
    for (const bool three_d : {false, true}) {
        const std::string dims = three_d ? "3d" : "2d";
        const int64_t outer = three_d ? 6 : 40, heads = three_d ? 4 : 0;
        auto add = [&](TensorId which, const std::string& variant, const std::string& what, OwnLayout own,
                       unsigned extra = 0) {
            const std::string shape = three_d ? "3-D [6, 4, 264]" : "2-D [40, 264]";
            ProdCase c{"layout_" + dims + "_" + variant + "_" + kTensorName[which],
                       shape + ", " + kTensorName[which] + " " + what + ", every other tensor aligned and dense", outer,
                       heads, cols, every | extra};
            c.own[which] = own;
            out.push_back(c);
        };
        for (TensorId which : {tX, tResidual, tWeight, tBias, tY, tResidualOut, tRstd}) {
            add(which, "misaligned_base", "one element past a 16-byte boundary", {0, 0, 1});
            if (which == tWeight || which == tBias) {
                add(which, "misaligned_fp32", "in fp32, one element past a 16-byte boundary", {0, 0, 1},
                    which == tWeight ? kWeightF32 : kBiasF32);
                continue;
            }
            if (which == tRstd) {
                if (three_d) add(which, "padded_batch_stride", "[6, 4] with batch stride 7", {7, 0, -1});
                continue;
            }
            if (!three_d) {
                add(which, "odd_row_stride", "with row stride 265: no vector width divides it", {cols + 1, 0, -1});
                add(which, "padded_rows", "with row stride 304: 40 elements of padding a row", {cols + 40, 0, -1});
            } else {
                add(which, "odd_head_stride", "with head stride 265 (batch stride 4 x 265)", {0, cols + 1, -1});
                add(which, "odd_batch_stride", "with head stride 264 and batch stride 1057", {4 * cols + 1, cols, -1});
                add(which, "padded_heads",
                    "with head stride 288 and batch stride 1168: padding after every head and batch",
                    {4 * (cols + 24) + 16, cols + 24, -1});
            }
        }
    }
    return out;
}

/// Cases of the rules the hand-written list below leaves out: the descriptor's lifetime, repeated
/// launches, eps = 0, a padded 3-D rstd on every kernel's path, and LayerNorm rows whose first
/// element is far from their mean. The freed problem comes last (production_plan says why).
std::vector<ProdCase> rule_cases() {
    const unsigned full = kLayer | kBias | kRstd | kPreNorm;
    std::vector<ProdCase> out;
    auto add = [&](ProdCase c, auto&& set) {
        set(c);
        out.push_back(std::move(c));
    };
    // The descriptor holds what create validated: the caller's problem may change or go away.
    add({"descriptor_problem_changed_after_create",
         "the caller's NormProblem reused after create (other mode, eps 0.5, x and y exchanged, one row): the launch "
         "computes the problem create saw",
         100, 0, 1024, kBias | kRstd | kPreNorm},
        [](ProdCase& c) { c.after_create = AfterCreate::change; });
    // One descriptor, launched again on new values at the same addresses.
    add({"repeat_new_inputs_same_addresses",
         "one descriptor launched twice, every input rewritten with new values between the launches", 200, 0, 1024,
         full | kWeightF32},
        [](ProdCase& c) { c.relaunch = true; });
    add({"repeat_new_inputs_same_addresses_in_place_3d",
         "3-D [20, 8, 128] in place, launched twice, the inputs rewritten between the launches", 20, 8, 128,
         kRstd | kPreNorm | kYInPlace | kResInPlace},
        [](ProdCase& c) { c.relaunch = true; });
    add({"eps_zero", "eps = 0, the smallest valid eps, on rows of nonzero variance", 200, 0, 1024,
         kLayer | kBias | kRstd},
        [](ProdCase& c) { c.eps = 0.0f; });
    // rstd of a 3-D call in a [batch, heads] slice whose batch stride is padded, on each kernel's path.
    add({"rstd_3d_padded_batch_stride_decode", "3-D [8, 16, 1024] pre-norm, rstd [8, 16] with batch stride 19", 8, 16,
         1024, kRstd | kPreNorm},
        [](ProdCase& c) { c.own[tRstd].stride0 = 19; });
    add({"rstd_3d_padded_batch_stride_long_rows", "3-D [4, 8, 16384] RMSNorm, rstd [4, 8] with batch stride 11", 4, 8,
         16384, kRstd},
        [](ProdCase& c) { c.own[tRstd].stride0 = 11; });
    add({"rstd_3d_padded_batch_stride_cluster", "3-D [2, 3, 65536] LayerNorm + bias, rstd [2, 3] with batch stride 5",
         2, 3, 65536, kLayer | kBias | kRstd},
        [](ProdCase& c) { c.own[tRstd].stride0 = 5; });
    // LayerNorm rows whose first element is an outlier: a variance taken about that element in
    // one pass (E[(s - s0)^2] - E[s - s0]^2) cancels; the two-pass or Welford variance does not.
    // Without a residual: beside one, 16-bit rstd may come from the rounded sum, and its
    // tolerance (an ulp of T) admits what the cancellation costs.
    add({"layernorm_outlier_in_column_0",
         "LayerNorm + bias of 200 rows of 4096, rows whose column 0 is an outlier of 30000 (the mean near 7)", 200, 0,
         4096, kLayer | kBias | kRstd},
        [](ProdCase& c) { c.outlier_col0 = true; });
    add({"layernorm_outlier_in_column_0_short", "the same at 512 columns, several rows per block", 300, 0, 512,
         kLayer | kRstd},
        [](ProdCase& c) { c.outlier_col0 = true; });
    add({"layernorm_outlier_in_column_0_decode", "the same, 64 rows of 4096 with a bias (a decode step)", 64, 0, 4096,
         kLayer | kBias | kRstd},
        [](ProdCase& c) { c.outlier_col0 = true; });
    add({"layernorm_outlier_in_column_0_long_rows", "the same, 8 rows of 32768 with a bias and an fp32 weight", 8, 0,
         32768, kLayer | kBias | kRstd | kWeightF32},
        [](ProdCase& c) { c.outlier_col0 = true; });
    // The caller's problem gone: a descriptor that reads it at launch reads freed memory.
    add({"descriptor_problem_freed_after_create",
         "the caller's NormProblem cleared and freed after create: the launch computes the problem create saw", 100, 0,
         1024, kLayer | kBias | kRstd | kPreNorm},
        [](ProdCase& c) { c.after_create = AfterCreate::free; });
    return out;
}

/// Each parameter's dtype on the plans chosen by it: 16-bit RMSNorm rows of 7168 columns, more
/// than the few-rows plans take, go to the two-pass kernel through the L2 only with both
/// parameters in T (its fp32 code is compiled out). A plan chosen on the weight's dtype alone
/// reads an fp32 bias as T there, and one chosen on the bias's alone an fp32 weight.
std::vector<ProdCase> parameter_dtype_cases() {
    std::vector<ProdCase> out = {
        {"weight_f32_rows_read_twice_shape", "257 rows of 7168, weight in fp32, no bias: the shape read twice in T",
         257, 0, 7168, kWeightF32},
        {"bias_f32_weight_t_rows_read_twice_shape",
         "257 rows of 7168, bias in fp32, weight in T: the shape read twice in T", 257, 0, 7168, kBias | kBiasF32},
    };
    for (ProdCase& c : out) c.f16_only = true;  // fp32 activations take fp32 parameters as T
    return out;
}

/// Cases that reach the rows kernel's own paths (one row per group of lanes, several rows a
/// block, the staged parameters) where the list above does not; and LayerNorm through the Welford merge
/// of the streamed rows (the device helpers above the rows kernel).
std::vector<ProdCase> rows_kernel_cases() {
    // LayerNorm rows of 17409 columns: odd, so every dtype reads them element by element, and
    // past 1024 threads of 16 elements, so they take the two-pass kernel with every option
    // compiled in (launch_stream), whose Welford merges only LayerNorm reaches. 17409 is
    // 1025 past a multiple of 2048 (1024 threads, 2 loads a step): one thread's last step
    // ends exactly at the row's end, so a load one element further runs off x.
    const int64_t cols = 16384 + 1025;
    std::vector<ProdCase> out;
    // Zeros are elements of the mean like any other: a merge that skips a part whose mean is
    // 0 leaves the one nonzero element alone as the row's mean, with no variance.
    ProdCase zeros{"layernorm_streamed_one_nonzero_per_row",
                   "LayerNorm of 2 rows of 17409 columns, every element 0 but one of magnitude 4 a row", 2, 0, cols,
                   kLayer | kRstd};
    zeros.x_scale = 0.0f;
    zeros.x_outlier = 4.0f;
    out.push_back(zeros);
    // Magnitudes below 2e-7: a mean kept about 1 instead of 0 rounds each value to a multiple
    // of 2^-24, which moves the mean by more than the fp32 tolerance of such rows.
    ProdCase tiny{"layernorm_streamed_tiny_values",
                  "LayerNorm of 2 rows of 17409 columns, magnitudes below 2e-7 (eps sets rstd)", 2, 0, cols, kLayer};
    tiny.x_scale = 1e-7f;
    out.push_back(tiny);
    return out;
}

/// Cases that reach the streamed kernels (the two-pass kernel through the L2, a row split over a
/// cluster) where the list above does not.
///
/// Rows past 16384 columns whose width allows no 16-byte vector (odd columns) are streamed by the
/// two-pass kernel, one element a vector, 1024 threads a row: 17409 columns leave the thread that
/// loads the row's end holding one vector in a step of two (17409 = 8 · 2048 + 1024 + 1), and with
/// a residual (one vector a step) the last vector opens a step of its own. A row split over a
/// cluster: 36864 columns make every slice 2304 vectors (2 blocks of 16-bit rows, 4 of fp32 ones),
/// 2 · 1024 + 256, so one thread opens a step on the slice's last vector and another loads past
/// it; 16-bit rows with an fp32 weight or bias take the slice kernel's fp32 path.
std::vector<ProdCase> streamed_kernel_cases() {
    std::vector<ProdCase> out = {
        {"streamed_layernorm_odd_cols",
         "2 rows of 17409 (odd: 1-element vectors, streamed twice), LayerNorm + bias + rstd of rows with a large mean",
         2, 0, 17409, kLayer | kBias | kRstd, 0, 0, InputKind::normal, true},
        {"streamed_prenorm_3d_padded_rstd",
         "3-D [2, 2, 16391] streamed, RMSNorm + residual in/out, rstd [2, 2] with batch stride 3", 2, 2, 16391,
         kRstd | kPreNorm},
        {"cluster_rows_weight_f32", "3 rows of 36864 over a cluster, LayerNorm + bias + rstd, weight f32 beside T",
         3, 0, 36864, kLayer | kBias | kRstd | kWeightF32},
        {"cluster_rows_residual_in_bias_f32",
         "3 rows of 36864 over a cluster, RMSNorm + residual in (no residual_out), bias f32 beside a weight in T", 3,
         0, 36864, kResidual | kBias | kBiasF32},
    };
    out[1].own[tRstd].stride0 = 3;  // rstd [2, 2] in rows of 3: its index is not the row's number
    return out;
}

/// Cases at the launch plan's boundaries: a row length or a row count exactly at a threshold
/// where the plan moves to another kernel, so that each kernel is graded on the longest and
/// shortest rows it is chosen for. The kernels that leave something out (the PLAIN rows kernel
/// holds 2 vectors a thread and no bias; the two-pass kernel through the L2 beside a residual
/// has no bias) are each met one step past the last shape they may take, where a plan that
/// hands them that shape computes a wrong row. (An fp32 parameter on the shapes read twice in
/// T is parameter_dtype_cases'.)
std::vector<ProdCase> plan_boundary_cases() {
    std::vector<ProdCase> out;
    auto add = [&](ProdCase c, auto&& set) {
        set(c);
        out.push_back(std::move(c));
    };
    // The long cases below run once, in fp16: the plan they test is the same for both 16-bit types.
    auto once_in_f16 = [](ProdCase& c) {
        c.f16_only = true;
        c.repeats = 1;
    };
    // 16392 16-bit columns are 2049 16-byte vectors, one past the 2048 that 1024 threads of
    // 2 vectors hold: rows without a bias stay in registers at 8 vectors a thread.
    out.push_back({"rms_rows_one_vector_past_two_per_thread",
                   "2 rows of 16392, RMSNorm + rstd: 2049 16-byte vectors (16-bit), one more than 1024 threads of "
                   "2 vectors hold",
                   2, 0, 16392, kRstd});
    // Exactly 128 MiB of input beside a residual, where rows without a bias are read twice
    // through the L2 (that kernel compiled without the bias).
    add({"residual_in_bias_128mib",
         "4096 x 8192 RMSNorm + bias + residual in: exactly 128 MiB of input, where rows without a bias beside "
         "a residual are read twice through the L2",
         4096, 0, 8192, kBias | kResidual},
        once_in_f16);
    // On fast memory (an H200) more than 256 16-bit RMSNorm rows take the reference's
    // fast-memory plan: each case is one 16-byte vector past what a launcher of that plan holds
    // (threads x vectors a thread), so a row one vector longer than its kernel's reach shows.
    // Elsewhere they are rows of these lengths under the other plan.
    struct Reach {
        const char* option;
        unsigned opts;
        int vectors;  // the launcher's reach; the case has one vector more
        const char* holder;
    };
    const Reach reaches[] = {
        {"bias", kBias | kRstd, 32, "4 threads of 8"},        {"bias", kBias, 128, "16 threads of 8"},
        {"bias", kBias, 512, "128 threads of 4"},             {"bias", kBias, 640, "160 threads of 4"},
        {"bias", kBias, 768, "192 threads of 4"},             {"bias", kBias, 896, "224 threads of 4"},
        {"bias", kBias, 1024, "256 threads of 4"},            {"bias", kBias, 2048, "256 threads of 8"},
        {"plain", 0, 1024, "512 threads of 2"},               {"prenorm", kPreNorm, 128, "64 threads of 2"},
        {"prenorm", kPreNorm, 768, "192 threads of 4"},       {"prenorm", kPreNorm, 896, "224 threads of 4"},
        {"prenorm", kPreNorm, 2048, "1024 threads of 2"},
    };
    for (const Reach& r : reaches) {
        const int64_t cols = 8 * (r.vectors + 1);
        add({std::string("fast_memory_") + r.option + "_" + std::to_string(cols),
             "300 rows of " + std::to_string(cols) + " [" + r.option + "]: " + std::to_string(r.vectors + 1) +
                 " 16-byte vectors (16-bit), one more than " + r.holder + " hold in the fast-memory plan",
             300, 0, cols, r.opts},
            once_in_f16);
    }
    // And a row the plan must leave alone: a bias beside a residual, where its pre-norm kernel
    // of 1025 to 2048 vectors is compiled without the bias.
    add({"fast_memory_prenorm_bias_16384",
         "300 rows of 16384 [prenorm, bias]: a bias beside a residual keeps the H100's plan on fast memory, whose "
         "pre-norm kernel for these rows has no bias code",
         300, 0, 16384, kPreNorm | kBias},
        once_in_f16);
    return out;
}

std::vector<ProdCase> prod_cases() {
    const int64_t q128 = (32 + 2 * 8) * 128;  // token stride of q in a qkv tensor: 32 heads, 8 kv heads, dim 128
    const InputKind normal = InputKind::normal;
    const unsigned full = kLayer | kBias | kRstd | kPreNorm;
    return {
        // Every option alone.
        {"plain_rms", "RMSNorm, nothing else", 500, 0, 4096},
        {"layernorm", "LayerNorm without bias", 500, 0, 4096, kLayer},
        {"bias", "RMSNorm with a bias: y = x^ * w + b", 500, 0, 4096, kBias},
        {"rstd", "rstd written out per row", 500, 0, 4096, kRstd},
        {"residual_in_only", "a residual added, the sum not written back", 300, 0, 2048, kResidual},
        {"weight_f32", "the weight stored in fp32 while x is T", 500, 0, 4096, kWeightF32},
        {"bias_f32_weight_t", "bias in fp32, weight in T: each parameter's type is its own", 300, 0, 2048,
         kBias | kBiasF32},
        // The combinations models use.
        {"prenorm_residual", "pre-norm block: residual in and out, separate tensors", 500, 0, 4096, kPreNorm},
        {"prenorm_in_place", "pre-norm in place: y == x, residual_out == residual", 500, 0, 4096,
         kPreNorm | kYInPlace | kResInPlace},
        {"y_aliases_x_only", "y == x, residual_out separate", 300, 0, 2048, kPreNorm | kYInPlace},
        {"residual_aliases_only", "residual_out == residual, y separate", 300, 0, 2048, kPreNorm | kResInPlace},
        {"layernorm_bias_rstd", "LayerNorm with bias and rstd, as GPT-2 and BERT train it", 500, 0, 4096,
         kLayer | kBias | kRstd},
        {"layernorm_mixed_precision", "LayerNorm, weight and bias in fp32, rstd", 300, 0, 4096,
         kLayer | kBias | kRstd | kWeightF32 | kBiasF32},
        {"everything_in_place", "LayerNorm + bias + rstd + residual in/out, in place, fp32 parameters", 300, 0, 4096,
         full | kWeightF32 | kBiasF32 | kYInPlace | kResInPlace},
        {"qk_norm_3d_strided", "3-D q slice of a qkv tensor [300, 32, 128], in place, weight f32", 300, 32, 128,
         kYInPlace | kWeightF32, q128, 128},
        {"qk_norm_3d_dense_out", "3-D q slice in, contiguous y out, rstd [300, 32]", 300, 32, 128,
         kYDense | kRstd, q128, 128},
        {"layernorm_3d_residual", "3-D [64, 12, 768] LayerNorm with residual in/out and bias", 64, 12, 768,
         kLayer | kBias | kPreNorm},
        {"head_stride_padded_3d", "3-D, head stride 144 for 128 columns: padding stays untouched", 200, 8, 128,
         kRstd | kYInPlace, 8 * 144 + 64, 144},
        // Rows of many sizes.
        {"rows_zero", "rows = 0: create succeeds, the launch launches nothing", 0, 0, 1024, full},
        {"rows_zero_3d", "a 3-D tensor of batch 0: nothing to do", 0, 8, 128, kRstd},
        {"one_row", "a single row", 1, 0, 8192, kLayer | kBias | kRstd},
        // Decode batches (128 rows or fewer): the reference loads the parameters with the row.
        {"decode_everything_in_place", "64 rows, LayerNorm + bias + rstd + residual in/out, in place, fp32 parameters",
         64, 0, 4096, full | kWeightF32 | kBiasF32 | kYInPlace | kResInPlace},
        {"decode_bias_f32_weight_t", "128 rows, bias in fp32 and weight in T", 128, 0, 2048, kBias | kBiasF32},
        {"decode_3d_prenorm", "3-D [8, 16, 1024], 128 rows, pre-norm with rstd", 8, 16, 1024, kRstd | kPreNorm},
        // 2-D rows with parameters in T: the reference's decode kernel, two vectors a thread.
        {"decode_prenorm_bias_in_place", "128 rows of 4096, bias + rstd + residual in/out, in place, parameters in T",
         128, 0, 4096, kBias | kRstd | kPreNorm | kYInPlace | kResInPlace},
        {"decode_padded_rows_257_vectors",
         "16 rows of 2056 (257 16-byte vectors), row stride 2120 (its padding untouched), bias + rstd + residual in/out",
         16, 0, 2056, kBias | kRstd | kPreNorm, 2120},
        {"decode_residual_in_897_vectors", "3 rows of 7176 (897 16-byte vectors), a residual in, none out", 3, 0, 7176,
         kResidual},
        // LayerNorm in the decode kernel: the mean's own sum, beside a residual without a bias, and
        // about a mean far from zero in 384-thread blocks whose second vectors are mostly idle.
        {"decode_layernorm_prenorm_in_place",
         "128 rows of 4096, LayerNorm + rstd + residual in/out, in place, no bias, parameters in T", 128, 0, 4096,
         kLayer | kRstd | kPreNorm | kYInPlace | kResInPlace},
        {"decode_layernorm_large_mean_641_vectors",
         "16 rows of 5128 (641 16-byte vectors), LayerNorm + bias + rstd, rows with mean 1000 (bf16: 256)", 16, 0, 5128,
         kLayer | kBias | kRstd, 0, 0, normal, true},
        // The rows the decode kernel does not take, of the lengths it does: 3-D rows and fp32 parameters.
        {"decode_3d_padded_heads_4096", "3-D [4, 8, 4096], head stride 4160, 32 rows with a bias and rstd", 4, 8, 4096,
         kBias | kRstd, 8 * 4160, 4160},
        {"decode_weight_f32_4096", "32 rows of 4096, weight in fp32, bias in T, rstd", 32, 0, 4096,
         kWeightF32 | kBias | kRstd},
        {"many_rows_gt_65535", "70001 rows", 70001, 0, 136, kRstd | kPreNorm},
        {"rstd_short_rows", "1001 rows of 256 with rstd: several rows per block", 1001, 0, 256, kRstd},
        {"short_rows_layernorm", "1003 rows of 512, LayerNorm + bias + rstd, in place", 1003, 0, 512,
         kLayer | kBias | kRstd | kYInPlace},
        {"cols_1", "rows of one element (LayerNorm: y is the bias)", 257, 0, 1, kLayer | kBias | kRstd},
        {"cols_lt_warp", "19 columns", 1000, 0, 19, kLayer | kRstd | kPreNorm},
        {"prime_cols", "4099 columns, in place", 513, 0, 4099, kLayer | kBias | kPreNorm | kYInPlace | kResInPlace},
        {"odd_cols", "1001 columns", 300, 0, 1001, kBias | kRstd},
        {"cols_not_multiple_of_width", "4100 columns: the vector width drops to 4", 400, 0, 4100, kLayer | kPreNorm},
        {"one_row_partial_vector", "one row of 4095: no stride to limit the width, cols must", 1, 0, 4095, full},
        {"padded_stride_partial_vector", "4095 columns in rows of 4160: strides allow 16 bytes, cols does not", 64, 0,
         4095, kLayer | kBias, 4160},
        {"misaligned_stride", "row stride 4097: every other row is misaligned", 200, 0, 4096, kRstd | kPreNorm, 4097},
        {"row_stride_gt_cols", "rows of 1000 in a stride of 1536, padding untouched", 300, 0, 1000,
         kLayer | kRstd | kPreNorm, 1536},
        {"cols_gt_1024xwidth", "9000 columns, in place", 200, 0, 9000, full | kYInPlace | kResInPlace},
        {"rows_read_twice_in_place", "300 rows of 8192, RMSNorm + rstd, in place: the row read twice through the L2",
         300, 0, 8192, kRstd | kYInPlace},
        {"bias_rows_read_twice_in_place", "300 rows of 16384, RMSNorm + bias + rstd, in place: read twice through the L2",
         300, 0, 16384, kBias | kRstd | kYInPlace},
        {"rows_read_twice_3d", "3-D [40, 8, 16384], heads 16448 apart, rstd: read twice through the L2", 40, 8, 16384,
         kRstd, 8 * 16448 + 128, 16448},
        {"long_rows_32768", "32768 columns, LayerNorm + residual: beyond one block's registers in fp32", 64, 0,
         32768, full | kWeightF32},
        {"cols_max_65536", "65536 columns, the longest row, every option", 64, 0, 65536, full},
        {"cols_max_65536_in_place", "65536 columns in place, RMSNorm + residual", 48, 0, 65536,
         kPreNorm | kYInPlace | kResInPlace | kRstd},
        {"misaligned_base", "every pointer one element past an aligned address, in place", 300, 0, 4096,
         full | kYInPlace | kResInPlace, 0, 0, normal, false, 1e-5f, 1},
        {"misaligned_weight_only", "the weight alone one element off; everything else aligned", 300, 0, 4096,
         kBias | kWeightF32, 0, 0, normal, false, 1e-5f, 0, 1},
        // Values that break kernels.
        {"all_zero_rows", "every other row is zero: RMSNorm gives 0, LayerNorm gives the bias", 1000, 0, 1024,
         kLayer | kBias | kRstd, 0, 0, InputKind::zero_rows},
        {"all_zero_rows_rms", "every other row of x and residual is zero", 1000, 0, 1024, kRstd | kPreNorm, 0, 0,
         InputKind::zero_rows},
        {"nan_row_isolated", "a NaN in row 37 stays in row 37 (y, rstd, residual_out)", 100, 0, 2048,
         kLayer | kRstd | kPreNorm, 0, 0, InputKind::nan_row},
        {"eps_inside_sqrt", "values below 0.01 with eps = 1e-2: eps goes inside the square root", 200, 0, 2048,
         kLayer | kRstd, 0, 0, InputKind::small, false, 1e-2f},
        {"layernorm_large_mean", "LayerNorm of rows with mean 1000 (bf16: 256): E[x^2] - E[x]^2 and a rounded mean fail",
         300, 0, 4096, kLayer | kBias | kRstd, 0, 0, normal, true},
        {"layernorm_large_mean_short", "the same at 512 columns, several rows per block", 600, 0, 512,
         kLayer | kRstd, 0, 0, normal, true},
        {"fp16_huge_values", "x near 65504: squares overflow an fp16 accumulator", 256, 0, 4096, kLayer | kRstd, 0,
         0, InputKind::huge, false, 1e-5f, 0, 0, true},
        {"prenorm_in_place_256mib", "pre-norm in place on 16385 x 8192 (256 MiB of input): read twice through the L2",
         16385, 0, 8192, kPreNorm | kYInPlace | kResInPlace, 0, 0, normal, false, 1e-5f, 0, 0, true, 1},
        {"past_2pow31_elements", "rows x cols past 2^31 elements, pre-norm in place", 32769, 0, 65536,
         kPreNorm | kYInPlace | kResInPlace, 0, 0, normal, false, 1e-5f, 0, 0, true, 1},
    };
}

}  // namespace
}  // namespace workbook
