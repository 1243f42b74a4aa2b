// Everything that needs CUDA's own headers, in one guarded file: TUNEBENCH_TORCH_CUDA is set by
// CMake when the libtorch found is a CUDA build (its TORCH_CUDA_LIBRARIES are non-empty). A
// CPU-only libtorch compiles the stubs at the bottom.

#include "engine/core/systeminfo.h"

#if TUNEBENCH_TORCH_CUDA
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAFunctions.h>
#include <cuda_runtime_api.h>
#endif

namespace engine {

#if TUNEBENCH_TORCH_CUDA

void fillCudaInfo(SystemInfo &info)
{
    info.torchHasCuda = true;
    info.cudaRuntimeVersion = std::to_string(CUDART_VERSION / 1000) + "." + std::to_string((CUDART_VERSION % 1000) / 10);
    int driver = 0;
    if (cudaDriverGetVersion(&driver) == cudaSuccess)
        info.cudaDriverVersion = driver;
    int count = 0;
    const cudaError_t status = cudaGetDeviceCount(&count);
    if (status != cudaSuccess) {
        info.cudaProblem = cudaGetErrorString(status);
        cudaGetLastError(); // clear the sticky error for later calls
        return;
    }
    if (count == 0)
        info.cudaProblem = "the CUDA runtime sees no GPU";
    for (int i = 0; i < count; ++i) {
        const cudaDeviceProp *props = at::cuda::getDeviceProperties(i);
        GpuInfo gpu;
        gpu.index = i;
        gpu.name = props->name;
        gpu.totalMemoryBytes = static_cast<int64_t>(props->totalGlobalMem);
        gpu.computeMajor = props->major;
        gpu.computeMinor = props->minor;
        gpu.bf16 = props->major >= 8;
        info.gpus.push_back(gpu);
    }
}

CudaMemoryStats cudaMemoryStats(int device)
{
    namespace alloc = c10::cuda::CUDACachingAllocator;
    const auto stats = alloc::getDeviceStats(static_cast<c10::DeviceIndex>(device));
    constexpr size_t aggregate = 0; // StatType::AGGREGATE in every version (its namespace moved in 2.x)
    CudaMemoryStats out;
    out.allocatedBytes = stats.allocated_bytes[aggregate].current;
    out.peakAllocatedBytes = stats.allocated_bytes[aggregate].peak;
    out.reservedBytes = stats.reserved_bytes[aggregate].current;
    return out;
}

void resetCudaPeakMemory(int device)
{
    c10::cuda::CUDACachingAllocator::resetPeakStats(static_cast<c10::DeviceIndex>(device));
}

#else

void fillCudaInfo(SystemInfo &) {}
CudaMemoryStats cudaMemoryStats(int) { return {}; }
void resetCudaPeakMemory(int) {}

#endif

} // namespace engine
