#pragma once
// Device names as users write them (torch's spelling): "cpu", "cuda" (the first GPU) or "cuda:N".
// Torch-free, so the CLI and the UI can check a name without compiling torch headers; the torch
// side (availability, index range) is engine/core/torchdevice.h.

#include <string>
#include <string_view>

namespace engine {

/// The canonical form of a device name: "cpu" or "cuda:N" ("cuda" becomes "cuda:0").
/// Throws Error(InvalidInput) naming `what` (e.g. "--device") when the name is not one of these.
std::string canonicalDeviceName(std::string_view name, std::string_view what = "device");

/// True for "cuda:N" names (after canonicalDeviceName).
bool isCudaDeviceName(std::string_view canonicalName);

} // namespace engine
