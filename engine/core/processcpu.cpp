#include "engine/core/processcpu.h"

#include <ctime>

namespace engine {
namespace {

double clockSeconds(clockid_t clock)
{
    timespec now{};
    if (clock_gettime(clock, &now) != 0)
        return 0;
    return static_cast<double>(now.tv_sec) + static_cast<double>(now.tv_nsec) * 1e-9;
}

} // namespace

double processCpuSeconds() { return clockSeconds(CLOCK_PROCESS_CPUTIME_ID); }

CpuUsageMeter::CpuUsageMeter() : m_cpu(processCpuSeconds()), m_wall(clockSeconds(CLOCK_MONOTONIC)) {}

double CpuUsageMeter::sample()
{
    const double cpu = processCpuSeconds();
    const double wall = clockSeconds(CLOCK_MONOTONIC);
    const double wallSpent = wall - m_wall;
    const double cpuSpent = cpu - m_cpu;
    m_cpu = cpu;
    m_wall = wall;
    if (!(wallSpent > 0))
        return 0;
    return cpuSpent > 0 ? 100.0 * cpuSpent / wallSpent : 0.0;
}

} // namespace engine
