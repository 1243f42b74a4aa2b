#include "engine/core/processmemory.h"

#include <fstream>
#include <string>

namespace engine {
namespace {

int64_t statusBytes(const char *key)
{
    std::ifstream status("/proc/self/status");
    std::string name;
    int64_t kib = 0;
    std::string unit;
    const std::string wanted = std::string(key) + ":";
    while (status >> name) {
        if (name == wanted && status >> kib >> unit)
            return kib * 1024;
        status.ignore(1 << 16, '\n');
    }
    return 0;
}

} // namespace

int64_t residentBytes() { return statusBytes("VmRSS"); }

int64_t residentPeakBytes() { return statusBytes("VmHWM"); }

bool resetResidentPeak()
{
    std::ofstream clear("/proc/self/clear_refs");
    clear << "5";
    clear.flush();
    return static_cast<bool>(clear);
}

int64_t availableRamBytes()
{
    std::ifstream meminfo("/proc/meminfo");
    std::string key;
    int64_t kib = 0;
    std::string unit;
    while (meminfo >> key >> kib >> unit) {
        if (key == "MemAvailable:")
            return kib * 1024;
    }
    return 0;
}

} // namespace engine
