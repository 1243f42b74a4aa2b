#include "engine/core/torchdevice.h"

#include "engine/core/device.h"
#include "engine/core/error.h"
#include "engine/core/systeminfo.h"

#include <torch/cuda.h>

namespace engine {

c10::Device torchDevice(std::string_view name, std::string_view what)
{
    const std::string canonical = canonicalDeviceName(name, what);
    if (!isCudaDeviceName(canonical))
        return c10::Device(c10::kCPU);
    const int index = std::stoi(canonical.substr(5));
    const std::string label = std::string(what) + " " + canonical;
    if (!torchHasCuda())
        throw invalidInput(label + ": this tunebench is built against a CPU-only libtorch (see the README: "
                                   "building against a CUDA libtorch)");
    const auto count = static_cast<int>(torch::cuda::device_count());
    if (count == 0)
        throw invalidInput(label + ": no CUDA GPU is visible (check the driver and CUDA_VISIBLE_DEVICES)");
    if (index >= count) {
        throw invalidInput(label + ": there " + (count == 1 ? std::string("is 1 GPU (cuda:0)")
                                                            : "are " + std::to_string(count) + " GPUs (cuda:0 to cuda:"
                                                                  + std::to_string(count - 1) + ")"));
    }
    return c10::Device(c10::kCUDA, static_cast<c10::DeviceIndex>(index));
}

} // namespace engine
