/// @file hd.h
/// @brief WB_HD marks functions the grader runs both on the host and in its own GPU kernels.
#pragma once
#ifdef __CUDACC__
#define WB_HD __host__ __device__
#else
#define WB_HD
#endif

/// WB_PURE: the result depends only on the arguments and what they point to, and the call has
/// no other effect, so a compiler may reuse the result of an identical call. Host compilers
/// only (the CPU emulator's build rebuilds input values from the seed many times per element).
#if defined(__GNUC__) && !defined(__CUDACC__)
#define WB_PURE __attribute__((pure))
#else
#define WB_PURE
#endif
