/// @file plan.cpp
/// @brief Lesson 4's cases: the plain-rows plan (lessons/common/rows_plan.cu) with strided rows of every element type.
#include "lessons/common/rows_plan.h"

namespace workbook {
namespace {

/// The benchmark shapes (rows x cols, element type).
std::vector<RowsBenchSpec> bench_shapes([[maybe_unused]] bool full) {
    [[maybe_unused]] const DType f32 = DType::f32, f16 = DType::f16, bf16 = DType::bf16;
    if (!full)
        return {{32768, 256, f16},  {32768, 512, bf16}, {32768, 1024, f16}, {32768, 4096, bf16},
                {16384, 8192, f16}, {4096, 16384, bf16}, {128, 4096, bf16}, {8192, 5120, f16},
                {16384, 4096, f32}};
    std::vector<RowsBenchSpec> v;
    for (DType t : {f16, bf16}) {
        for (int64_t c : {256, 512, 1024, 2048, 4096, 6144}) v.push_back({32768, c, t});
        v.push_back({16384, 8192, t});
        v.push_back({8192, 16384, t});
        for (int64_t c : {8192, 16384, 32768, 65536}) v.push_back({4096, c, t});
        v.push_back({8192, 8192, t});
        v.push_back({16384, 16384, t});
        for (int64_t r : {1, 16, 128}) v.push_back({r, 4096, t});
        for (int64_t c : {4095, 5120, 7168}) v.push_back({16384, c, t});
    }
    v.push_back({16384, 4096, f32});
    return v;
}

/// Cases of this lesson's kernels that the shared table does not reach: many rows of 4097 to 16384
/// 16-bit columns whose last step is partly full, fp32 rows past 32768 columns in steps of 4096
/// vectors the last of which is partly full, long rows whose starts are not 16-byte aligned (few and
/// many of them), many padded rows of exactly two vectors a thread in a block of 448, and
/// decode batches whose rows leave part of the decode kernel's block idle.
std::vector<RowsCase> own_cases() {
    RowsCase many{"many_rows_cols_9000", "300 rows of 9000 columns: more rows than the few-rows shapes take, each "
                  "1125 16-byte vectors of fp16/bf16 (more than a block of 1024 threads holds once, fewer than twice)",
                  300, 9000};
    RowsCase last{"long_rows_outlier_last", "36000 columns, each row's last element 256: an fp32 row of 9000 "
                  "16-byte vectors, past 32768 columns, whose end dominates its sum", 5, 36000,
                  InputKind::outlier_last};
    RowsCase odd{"odd_cols_max", "65535 columns, the longest odd row: width 1, rows starting at every "
                 "alignment (peeled for fp16/bf16, streamed for fp32)", 5, 65535};
    RowsCase mis{"misaligned_base_long_rows", "32768 columns, x, weight and y each one element past an aligned "
                 "address: long rows peeled to their 16-byte boundaries", 3, 32768};
    mis.x_mis = mis.w_mis = mis.y_mis = 1;
    mis.strided_only = true;
    RowsCase walk{"odd_cols_long_many_rows", "200 rows of 32767 columns: long odd rows peeled to their 16-byte "
                  "boundaries (fp16/bf16), more rows than the device has SMs, so a kernel that keeps a block on "
                  "several rows sees each of them start at its own offset", 200, 32767};
    RowsCase pair{"many_rows_cols_7168_strided", "300 rows of 7168 columns in padded rows: 896 16-byte vectors of "
                  "fp16/bf16 a row, two a thread in 448 threads (a block that is no power of two); the padding stays "
                  "untouched", 300, 7168};
    pair.x_pad = 8;
    pair.y_pad = 24;
    RowsCase part{"few_rows_part_block", "3 rows of 2056 columns: a decode batch whose row leaves part of its "
                  "block idle (257 16-byte vectors of fp16/bf16 in 512 threads), the last row ending at the end of "
                  "x, weight and y", 3, 2056};
    RowsCase two{"few_rows_two_vectors_strided", "5 rows of 5128 columns in padded rows: a decode batch of two "
                 "16-byte vectors a thread whose last ones are partly idle; the padding stays untouched", 5, 5128};
    two.x_pad = 8;
    two.y_pad = 24;
    return {many, last, odd, mis, walk, pair, part, two};
}

LessonPlan plan(const Submission& student, const Submission* reference, const PlanOptions& opt) {
    RowsLesson lesson;
    lesson.typed = true;
    lesson.long_rows = false;
    lesson.bench = &bench_shapes;
    lesson.own_cases = &own_cases;
    return rows_plan(lesson, student, *reference, opt);
}

}  // namespace
}  // namespace workbook

WORKBOOK_REGISTER_PLAN(4, &workbook::plan)
