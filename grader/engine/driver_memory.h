/// @file driver_memory.h
/// @brief The CUDA driver's virtual-memory calls, for the grader's own mappings: fenced tensors
///        (engine/fenced_memory.cu) and the buffers remote grading shares with another process.
#pragma once

#include <cuda.h>

#include "engine/driver_entry.h"

namespace workbook {

/// The calls, found through the runtime (find_driver_memory).
struct DriverMemory {
    decltype(&cuMemCreate) create = nullptr;
    decltype(&cuMemRelease) release = nullptr;
    decltype(&cuMemAddressReserve) reserve = nullptr;
    decltype(&cuMemAddressFree) address_free = nullptr;
    decltype(&cuMemMap) map = nullptr;
    decltype(&cuMemUnmap) unmap = nullptr;
    decltype(&cuMemSetAccess) set_access = nullptr;
    decltype(&cuMemExportToShareableHandle) export_handle = nullptr;
    decltype(&cuMemImportFromShareableHandle) import_handle = nullptr;
    decltype(&cuMemGetAllocationGranularity) granularity = nullptr;
};

/// Fills `d`; the name of the first call the driver lacks, or nullptr when it has them all.
inline const char* find_driver_memory(DriverMemory& d) {
    if (!find_driver_entry("cuMemCreate", d.create)) return "cuMemCreate";
    if (!find_driver_entry("cuMemRelease", d.release)) return "cuMemRelease";
    if (!find_driver_entry("cuMemAddressReserve", d.reserve)) return "cuMemAddressReserve";
    if (!find_driver_entry("cuMemAddressFree", d.address_free)) return "cuMemAddressFree";
    if (!find_driver_entry("cuMemMap", d.map)) return "cuMemMap";
    if (!find_driver_entry("cuMemUnmap", d.unmap)) return "cuMemUnmap";
    if (!find_driver_entry("cuMemSetAccess", d.set_access)) return "cuMemSetAccess";
    if (!find_driver_entry("cuMemExportToShareableHandle", d.export_handle)) return "cuMemExportToShareableHandle";
    if (!find_driver_entry("cuMemImportFromShareableHandle", d.import_handle)) return "cuMemImportFromShareableHandle";
    if (!find_driver_entry("cuMemGetAllocationGranularity", d.granularity)) return "cuMemGetAllocationGranularity";
    return nullptr;
}

}  // namespace workbook
