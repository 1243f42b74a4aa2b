#pragma once
// What tunebench runs on: the libtorch it was built against, CUDA and its GPUs, threads, BLAS.
// `tunebench doctor` prints it; the GUI's About dialog shows the same facts. Torch-free.
//
// How to use:
//   const SystemInfo info = systemInfo();
//   std::cout << describeSystem(info);      // readable lines
//   nlohmann::json j = systemInfoJson(info);

#include "engine/core/version.h"

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace engine {

/// One CUDA GPU as the runtime reports it.
struct GpuInfo {
    int index = 0;
    std::string name;             ///< "NVIDIA H200"
    int64_t totalMemoryBytes = 0;
    int computeMajor = 0;         ///< compute capability, e.g. 9.0
    int computeMinor = 0;
    bool bf16 = false;            ///< native bf16 (compute capability 8.0 or newer; T4 and V100 have none)
};

struct SystemInfo {
    std::string tunebenchVersion;
    std::string torchVersion;     ///< the libtorch headers built against: "1.13.0", "2.6.0"
    bool torchHasCuda = false;    ///< built against a CUDA libtorch
    std::string cudaRuntimeVersion; ///< "12.4" when torchHasCuda, else ""
    int cudaDriverVersion = 0;    ///< as cudaDriverGetVersion (12040 = 12.4); 0 = none
    std::vector<GpuInfo> gpus;    ///< visible GPUs (empty without CUDA or a driver)
    std::string cudaProblem;      ///< why no GPU is usable, when torchHasCuda and gpus is empty
    int hardwareThreads = 1;
    int torchThreads = 1;         ///< libtorch's intra-op threads now
    std::string blas;             ///< BLAS libtorch was built with (from its build configuration)
    std::string cpuCapability;    ///< the CPU kernels ATen dispatches to: "AVX512", "AVX2", ...
};

/// The facts of this process and machine (cheap: no benchmark, no GPU allocation).
SystemInfo systemInfo();

/// Readable lines, one fact each.
std::string describeSystem(const SystemInfo &info);

/// {"tunebench": ..., "libtorch": ..., "cuda": {...}, "gpus": [...], "threads": ..., "blas": ...}
nlohmann::json systemInfoJson(const SystemInfo &info);

/// Peak and current bytes of the CUDA caching allocator on one GPU (all zero without CUDA).
struct CudaMemoryStats {
    int64_t allocatedBytes = 0;
    int64_t peakAllocatedBytes = 0; ///< since the last resetCudaPeakMemory (max_memory_allocated)
    int64_t reservedBytes = 0;
};
CudaMemoryStats cudaMemoryStats(int device);
void resetCudaPeakMemory(int device);

} // namespace engine
