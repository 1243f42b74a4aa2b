#pragma once

namespace engine {

/// Number of hardware threads (at least 1).
int hardwareThreads();

/// Sets libtorch's intra-op thread count for this process. 0 means hardwareThreads().
/// libtorch defaults to 1 thread on small machines, so every job calls this.
void applyThreadCount(int threads);

} // namespace engine
