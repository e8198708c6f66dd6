/// @file qualifiers.h
/// @brief CUDA's declaration qualifiers as plain C++: every function runs on the CPU.
#pragma once

#define __global__
#define __device__
#define __host__
#define __forceinline__
#define __constant__
#define __managed__
#define __align__(n) __attribute__((aligned(n)))
#define __launch_bounds__(...)
#define __grid_constant__
#ifndef __CUDA_ARCH__
// Kernels are compiled as host code; code that branches on __CUDA_ARCH__ takes the host path.
#endif
#define WORKBOOK_CPU_EMULATOR 1
