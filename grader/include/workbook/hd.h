/// @file hd.h
/// @brief WB_HD marks functions the grader runs both on the host and in its own GPU kernels.
#pragma once
#ifdef __CUDACC__
#define WB_HD __host__ __device__
#else
#define WB_HD
#endif
