#pragma once
// The torch side of device names (engine/core/device.h): a torch::Device that exists in this process.

#include <c10/core/Device.h>

#include <string_view>

namespace engine {

/// The device for a name ("cpu", "cuda", "cuda:N"), checked against this libtorch and machine: a
/// CPU-only libtorch, no visible GPU, or an index past the last GPU is Error(InvalidInput) naming
/// `what` and what there is instead.
c10::Device torchDevice(std::string_view name, std::string_view what = "device");

} // namespace engine
