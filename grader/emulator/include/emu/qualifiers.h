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
// nvcc's device pass defines __CUDA_ARCH__; g++ compiles a file once. The source rewrite turns
// __CUDA_ARCH__ inside __global__ and __device__ functions into this (the workbook's sm_90);
// elsewhere it stays undefined, as in nvcc's host pass.
#define EMU_DEVICE_CUDA_ARCH 900
#define WORKBOOK_CPU_EMULATOR 1
