/// @file cuda_runtime.h
/// @brief The emulator's CUDA runtime: kernels compiled for the CPU, one fiber per GPU thread.
///
/// Submissions include this in place of the toolkit's header when they are graded on the
/// CPU (see docs/emulator.md). Device memory is host memory the emulator checks.
#pragma once

#include "emu/runtime_api.h"
#include "emu/shared.h"
#include "cuda_fp16.h"
#include "cuda_bf16.h"
