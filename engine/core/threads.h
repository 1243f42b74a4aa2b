#pragma once

#include <thread>

namespace engine {

/// Number of hardware threads (at least 1). Inline: torch-free code (settings) needs it too.
inline int hardwareThreads()
{
    const unsigned n = std::thread::hardware_concurrency();
    return n == 0 ? 1 : static_cast<int>(n);
}

/// Sets libtorch's intra-op thread count for this process. 0 means hardwareThreads().
/// libtorch defaults to 1 thread on small machines, so every job calls this.
void applyThreadCount(int threads);

} // namespace engine
