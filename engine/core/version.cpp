#include "engine/core/version.h"

// Only the header with libtorch's version macros; engine_core links no libtorch.
#include <torch/version.h>

namespace engine {

const char *version() { return TUNEBENCH_VERSION; }

bool torchHasCuda()
{
#if TUNEBENCH_TORCH_CUDA
    return true;
#else
    return false;
#endif
}

std::string versionLine()
{
    return std::string("tunebench ") + TUNEBENCH_VERSION + ", libtorch " + TORCH_VERSION
           + (torchHasCuda() ? " (CUDA)" : " (CPU-only)");
}

} // namespace engine
