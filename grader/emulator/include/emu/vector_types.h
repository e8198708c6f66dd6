/// @file vector_types.h
/// @brief CUDA's built-in vector types with the GPU's sizes and alignments.
#pragma once

#include <cstdint>

#define EMU_VEC2(T, name, al) struct __attribute__((aligned(al))) name { T x, y; };
#define EMU_VEC3(T, name) struct name { T x, y, z; };
#define EMU_VEC4(T, name, al) struct __attribute__((aligned(al))) name { T x, y, z, w; };
EMU_VEC2(float, float2, 8)
EMU_VEC3(float, float3)
EMU_VEC4(float, float4, 16)
EMU_VEC2(int, int2, 8)
EMU_VEC3(int, int3)
EMU_VEC4(int, int4, 16)
EMU_VEC2(unsigned int, uint2, 8)
EMU_VEC4(unsigned int, uint4, 16)
EMU_VEC2(double, double2, 16)
EMU_VEC2(unsigned short, ushort2, 4)
EMU_VEC4(unsigned short, ushort4, 8)
EMU_VEC2(long long, longlong2, 16)
EMU_VEC2(unsigned long long, ulonglong2, 16)
#undef EMU_VEC2
#undef EMU_VEC3
#undef EMU_VEC4

/// threadIdx and blockIdx: a plain aggregate, so the per-thread copies need no constructor.
struct uint3 {
    unsigned int x, y, z;
};

/// Grid and block extents, as in CUDA: unset extents are 1.
struct dim3 {
    unsigned int x, y, z;
    constexpr dim3(unsigned int vx = 1, unsigned int vy = 1, unsigned int vz = 1) : x(vx), y(vy), z(vz) {}
    constexpr dim3(uint3 v) : x(v.x), y(v.y), z(v.z) {}
    constexpr operator uint3() const { return uint3{x, y, z}; }
};

inline float2 make_float2(float x, float y) { return {x, y}; }
inline float4 make_float4(float x, float y, float z, float w) { return {x, y, z, w}; }
inline int2 make_int2(int x, int y) { return {x, y}; }
inline uint2 make_uint2(unsigned x, unsigned y) { return {x, y}; }
inline uint4 make_uint4(unsigned x, unsigned y, unsigned z, unsigned w) { return {x, y, z, w}; }
