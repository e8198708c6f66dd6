/// @file cub/cub.cuh
/// @brief The parts of CUB the emulator provides: cub::WarpReduce and cub::BlockReduce.
#pragma once

#include "block/block_reduce.cuh"
#include "warp/warp_reduce.cuh"
