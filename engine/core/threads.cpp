#include "engine/core/threads.h"

#include <ATen/Parallel.h>

namespace engine {

void applyThreadCount(int threads)
{
    const int wanted = threads > 0 ? threads : hardwareThreads();
    if (at::get_num_threads() != wanted)
        at::set_num_threads(wanted);
}

} // namespace engine
