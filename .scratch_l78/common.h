#pragma once
#include <cuda_runtime.h>
#include <cuda_fp16.h>
#include <cuda_bf16.h>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <cmath>
#include <vector>
#include <random>
#include <string>
#define CK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { printf("CUDA error %s at %s:%d\n", cudaGetErrorString(e_), __FILE__, __LINE__); exit(2);} } while (0)

template <typename T> float tf(T v);
template <> float tf<float>(float v) { return v; }
template <> float tf<__half>(__half v) { return __half2float(v); }
template <> float tf<__nv_bfloat16>(__nv_bfloat16 v) { return __bfloat162float(v); }
template <typename T> T ff(float v);
template <> float ff<float>(float v) { return v; }
template <> __half ff<__half>(float v) { return __float2half(v); }
template <> __nv_bfloat16 ff<__nv_bfloat16>(float v) { return __float2bfloat16(v); }
template <typename T> const char* tname();
template <> const char* tname<float>() { return "f32"; }
template <> const char* tname<__half>() { return "f16"; }
template <> const char* tname<__nv_bfloat16>() { return "bf16"; }
template <typename T> double rtol() { return sizeof(T) == 4 ? 2e-5 : (std::is_same<T, __half>::value ? 2.5e-3 : 1.6e-2); }

static int g_fail = 0;

// Check rows of y (host) against fp64 oracle from x,w (host). Returns number of bad elements.
template <typename T>
long check_rows(const char* name, const std::vector<T>& x, int64_t xs, const std::vector<T>& w, const std::vector<T>& y,
                int64_t ys, int64_t x_off, int64_t y_off, const std::vector<int64_t>& rowlist, int64_t cols, float eps) {
    long bad = 0; double worst = 0; int64_t wr = -1, wc = -1; double wy = 0, wref = 0;
    for (int64_t r : rowlist) {
        double ss = 0;
        for (int64_t c = 0; c < cols; ++c) { double v = tf(x[x_off + r * xs + c]); ss += v * v; }
        double inv = 1.0 / std::sqrt(ss / cols + eps);
        for (int64_t c = 0; c < cols; ++c) {
            double ref = tf(x[x_off + r * xs + c]) * inv * tf(w[c]);
            double got = tf(y[y_off + r * ys + c]);
            double err = std::fabs(got - ref);
            double tol = 1e-6 + rtol<T>() * std::fabs(ref) + (sizeof(T)==4 ? 1e-6 * (1+std::fabs(ref)) : 0);
            bool ok = std::isnan(ref) ? std::isnan(got) : (err <= tol);
            if (!ok) { if (!bad || (std::isnan(got) ? 1e300 : err) > worst) { worst = std::isnan(got) ? 1e300 : err; wr = r; wc = c; wy = got; wref = ref; } ++bad; }
        }
    }
    if (bad) { printf("  FAIL %-28s %s: %ld bad, e.g. row %lld col %lld got %g want %g\n", name, tname<T>(), bad, (long long)wr, (long long)wc, wy, wref); ++g_fail; }
    else printf("  ok   %-28s %s\n", name, tname<T>());
    return bad;
}
