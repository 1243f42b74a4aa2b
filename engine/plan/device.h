#pragma once
// Devices a plan places modules on: GPUs 0..n-1, the CPU's RAM, and disk (memory-mapped weights),
// each with a budget ("max_memory" in Accelerate's terms). Torch-free.
//
// How to use:
//   std::vector<DeviceSpec> devices = parseMaxMemory("0=15GiB,1=15GiB,cpu=13GiB");
//   devices[0].key();          // "0"      (Accelerate's device_map value: integer GPU index)
//   devices[0].torchDevice();  // "cuda:0" (what the loader passes to torch)
//   applyGpuPreset(devices[0], *findGpuPreset("T4"));   // name, total memory, no bf16

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace engine::plan {

/// What kind of memory a device is.
enum class DeviceKind { Gpu, Cpu, Disk };

/// The runtime overhead assumed per GPU (CUDA context, cuBLAS workspaces, allocator fragmentation):
/// 1 GiB, the middle of the 0.5-1.5 GB people measure. Counted inside the GPU's budget in training plans.
inline constexpr int64_t kDefaultGpuOverheadBytes = int64_t(1) << 30;

/// The process's own memory on the CPU in a training run (libtorch's code, its allocator caches, the
/// Python-free runtime): measured as the resident memory of `tunebench-full` training the bundled model
/// minus what the plan counts for that model (docs/memory-estimate.md). Counted on the CPU in training plans.
inline constexpr int64_t kDefaultCpuOverheadBytes = int64_t(256) << 20;

/// One device and its budget.
struct DeviceSpec {
    DeviceKind kind = DeviceKind::Cpu;
    int index = -1;            ///< GPU index (0-based); -1 for cpu and disk
    std::string name;          ///< "NVIDIA T4", "CPU RAM", "disk"; informational
    int64_t totalBytes = 0;    ///< physical memory when known (from a preset); 0 = unknown
    int64_t budget = 0;        ///< bytes the plan may use; for disk 0 = unbounded
    bool bf16 = true;          ///< the GPU computes in bfloat16 (false for T4, V100)
    int64_t overheadBytes = 0; ///< runtime overhead counted inside the budget in training plans
                               ///< (GPUs: kDefaultGpuOverheadBytes, cpu: kDefaultCpuOverheadBytes)

    /// Accelerate's key: "0", "1", ..., "cpu", "disk".
    std::string key() const;
    /// torch's device string: "cuda:0", "cpu", "disk".
    std::string torchDevice() const;
    bool isGpu() const { return kind == DeviceKind::Gpu; }
    /// Disk without a budget takes everything.
    bool unbounded() const { return kind == DeviceKind::Disk && budget == 0; }
    bool operator==(const DeviceSpec &) const = default;
};

/// A GPU model people plan for.
struct GpuPreset {
    std::string name;     ///< "T4", "A100-80GB", ...
    int64_t totalBytes;   ///< marketing size in GB (10^9 bytes), as vendors state it
    bool bf16;
};

/// T4 16 GB, V100 16/32, L4 24, A10 24, RTX 3090 24, RTX 4090 24, A100 40/80, H100 80, H200 141.
const std::vector<GpuPreset> &gpuPresets();
/// The preset with this name (case-insensitive; "a100" = "A100-80GB"), or nothing.
std::optional<GpuPreset> findGpuPreset(std::string_view name);
/// Sets name, total memory and bf16 support from a preset; the budget becomes the total when unset.
void applyGpuPreset(DeviceSpec &device, const GpuPreset &preset);

/// Parses "0=15GiB,1=15GiB,cpu=13GiB[,disk=100GB]" (Accelerate's max_memory; sizes as parseByteSize).
/// Devices come back in Accelerate's order: GPUs by index, then cpu, then disk. GPU indices must be
/// 0..n-1. Throws Error(InvalidInput) naming the entry for a malformed entry, an unknown device, a
/// repeated one, or a bad size. GPUs get kDefaultGpuOverheadBytes.
std::vector<DeviceSpec> parseMaxMemory(std::string_view text);

/// 80 % of the RAM available now (/proc/meminfo's MemAvailable): Accelerate's default cpu budget.
/// 8 GiB when that cannot be read.
int64_t availableRamBudget();

/// This machine's devices as a plan sees them (`--device-map auto`): each visible GPU with 90 % of its
/// memory as budget (the rest is left to other processes and the driver) and its bf16 support, then
/// the CPU with availableRamBudget(). `gpus` is engine::systemInfo().gpus: (index, name, total bytes, bf16).
struct MachineGpu {
    int index = 0;
    std::string name;
    int64_t totalBytes = 0;
    bool bf16 = false;
};
std::vector<DeviceSpec> machineDevices(const std::vector<MachineGpu> &gpus, int64_t cpuBudget);

/// "0=15GiB,cpu=13GiB"-style text of budgets in bytes (for messages and the Python snippet).
std::string maxMemoryText(const std::vector<DeviceSpec> &devices);

/// The index of the device with `key` ("0", "cpu", "disk"), or -1.
int findDevice(const std::vector<DeviceSpec> &devices, std::string_view key);

} // namespace engine::plan
