#pragma once
// What loadDispatched put where: bytes per device and the tensors that stayed memory-mapped.
// Torch-free, for the CLI and the UI.

#include <cstdint>
#include <string>
#include <vector>

namespace engine::model {

/// The parameters one device holds after a dispatched load.
struct DeviceShare {
    std::string device;            ///< "cpu", "disk" or "cuda:N"
    std::uint64_t bytes = 0;       ///< parameter bytes placed there, in the loaded dtype
    std::uint64_t mappedBytes = 0; ///< of which memory-mapped from the checkpoint (disk only)
    int tensors = 0;
};

/// Where a dispatched load put the weights.
struct DispatchReport {
    std::vector<DeviceShare> devices;           ///< in the order the placement first names them
    std::vector<std::string> mappedTensors;     ///< disk-placed parameters that stayed zero-copy over the file
    std::vector<std::string> copiedDiskTensors; ///< disk-placed but copied into RAM: stored in another dtype
                                                ///< than the load dtype, or misaligned in the file
    std::uint64_t largestTensorBytes = 0;       ///< the largest tensor read (bytes in the file)

    /// The share of `device`, or nullptr.
    const DeviceShare *find(const std::string &device) const
    {
        for (const DeviceShare &share : devices) {
            if (share.device == device)
                return &share;
        }
        return nullptr;
    }
    /// Bytes of weights held in RAM: the cpu share plus disk tensors that had to be copied.
    std::uint64_t ramBytes() const
    {
        std::uint64_t total = 0;
        for (const DeviceShare &share : devices) {
            if (share.device == "cpu" || share.device == "disk")
                total += share.bytes - share.mappedBytes;
        }
        return total;
    }
};

} // namespace engine::model
