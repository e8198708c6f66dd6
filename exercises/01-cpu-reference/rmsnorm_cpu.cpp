/**
 * @file rmsnorm_cpu.cpp
 * @brief Lesson 1 exercise: write RMSNorm on the CPU.
 *
 * This is the only file you edit for lesson 1. Grade it with
 *     make lesson1 && ./grade lesson1
 * and ask for a hint with `./grade lesson1 --hint`. No GPU is needed.
 *
 * For every row r:  y[r][c] = x[r][c] / sqrt(mean over c of x[r][c]^2 + eps) * weight[c]
 */
#include <cmath>
#include <cstdint>

namespace workbook::lesson1 {

void rmsnorm(const float* x, const float* weight, float* y, int64_t rows, int64_t cols, float eps) {
    for (int64_t r = 0; r < rows; ++r) {
        const float* xr = x + r * cols;
        float* yr = y + r * cols;
        // TODO(1): sum the squares of the row's cols elements in a float.
        // TODO(2): turn the sum into 1 / sqrt(mean + eps). Where does eps go, and why?
        // TODO(3): write yr[c] = xr[c] * (that factor) * weight[c] for every c.
        (void)xr;
        (void)yr;
        (void)weight;
        (void)eps;
    }
}

}  // namespace workbook::lesson1
