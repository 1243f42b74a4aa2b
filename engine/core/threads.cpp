#include "engine/core/threads.h"

#include <ATen/Parallel.h>

#include <thread>

namespace engine {

int hardwareThreads()
{
    const unsigned n = std::thread::hardware_concurrency();
    return n == 0 ? 1 : static_cast<int>(n);
}

void applyThreadCount(int threads)
{
    const int wanted = threads > 0 ? threads : hardwareThreads();
    if (at::get_num_threads() != wanted)
        at::set_num_threads(wanted);
}

} // namespace engine
