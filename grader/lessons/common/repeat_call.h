/// @file repeat_call.h
/// @brief Repeated calls at the same addresses: the entry point called twice on the same tensors,
///        with new input values written between the calls.
#pragma once

#include <cuda_runtime.h>

#include "engine/gpu_case.h"

namespace workbook {

/// `call` changed so that its launch calls the entry point twice on the same tensors: first on
/// other input values (another seed), then, after every input is rewritten in place with the
/// call's own values, again. The checks read the second call's outputs, so a kernel that keeps
/// something from one call to the next (a result, a flag, the weight, a value cached by address)
/// fails. The first tensor (x) is rewritten last, by the kernel launched just before the call, as
/// lesson 7's contract has it. Inputs filled by a lesson's own `fill` are left as they are.
GpuCall repeated_at_same_addresses(GpuCall call);

/// Writes `spec`'s values into the owned elements of the tensor of `dtype` at `data` laid out as
/// `layout`, on `stream` (a kernel, so it may be captured into a graph).
void write_input_values(DType dtype, void* data, const Layout& layout, const ValueSpec& spec, cudaStream_t stream);

}  // namespace workbook
