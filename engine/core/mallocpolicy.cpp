#include "engine/core/mallocpolicy.h"

#include <cstdlib>
#include <mutex>

#ifdef __GLIBC__
#include <malloc.h>
#endif

namespace engine {

bool keepFreedMemoryForReuse()
{
#ifdef __GLIBC__
    static bool changed = false;
    static std::once_flag once;
    std::call_once(once, [] {
        for (const char *name : {"MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_", "MALLOC_TOP_PAD_", "MALLOC_ARENA_MAX",
                                 "GLIBC_TUNABLES"}) {
            if (std::getenv(name))
                return;
        }
        changed = mallopt(M_MMAP_THRESHOLD, 32 << 20) == 1;
        changed = mallopt(M_TRIM_THRESHOLD, 1 << 30) == 1 && changed;
        changed = mallopt(M_TOP_PAD, 64 << 20) == 1 && changed;
    });
    return changed;
#else
    return false;
#endif
}

} // namespace engine
