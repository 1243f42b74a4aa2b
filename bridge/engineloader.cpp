// Finds and loads libtunebench_engine.so (enginejobs.h).

#include "bridge/enginejobs.h"

#include "engine/core/error.h"
#include "engine/core/paths.h"

#include <dlfcn.h>

#include <mutex>

namespace bridge {

std::filesystem::path engineModulePath()
{
    return engine::modulePath("TUNEBENCH_ENGINE_MODULE", TUNEBENCH_ENGINE_MODULE_BUILD, TUNEBENCH_ENGINE_MODULE_INSTALL);
}

EngineJobs &loadEngineModule(const std::filesystem::path &path)
{
    // RTLD_LOCAL: the module's libtorch and BLAS symbols stay out of the program's global scope.
    void *module = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!module) {
        const char *reason = ::dlerror();
        throw engine::Error(engine::ErrorKind::Internal,
                            "cannot load the engine (" + path.string() + "): " + (reason ? reason : "unknown reason")
                                + "; reinstall tunebench, or set TUNEBENCH_ENGINE_MODULE to the file");
    }
    using Entry = EngineJobs *(*)();
    const auto entry = reinterpret_cast<Entry>(::dlsym(module, "tunebench_engine_jobs"));
    if (!entry) {
        ::dlclose(module);
        throw engine::Error(engine::ErrorKind::Internal,
                            path.string() + " is not tunebench's engine module (it has no tunebench_engine_jobs)");
    }
    return *entry(); // the module stays loaded until the process ends
}

EngineJobs &engineJobs()
{
    static std::mutex mutex;
    static EngineJobs *jobs = nullptr;
    const std::lock_guard lock(mutex);
    if (!jobs)
        jobs = &loadEngineModule(engineModulePath());
    return *jobs;
}

} // namespace bridge
