#include "engine/core/processcpu.h"
#include "engine/core/processmemory.h"

#include <gtest/gtest.h>

#include <chrono>
#include <ctime>
#include <thread>

namespace {

/// Spins this thread until it has used `seconds` of CPU time itself.
void burnCpu(double seconds)
{
    auto threadCpu = [] {
        timespec now{};
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now);
        return static_cast<double>(now.tv_sec) + static_cast<double>(now.tv_nsec) * 1e-9;
    };
    const double start = threadCpu();
    volatile double sink = 0;
    while (threadCpu() - start < seconds)
        for (int i = 0; i < 1000; ++i)
            sink = sink + i * 0.5;
}

TEST(ProcessCpu, TheProcessClockCountsTheCpuTimeItsThreadsUse)
{
    const double before = engine::processCpuSeconds();
    std::thread worker([] { burnCpu(0.05); });
    burnCpu(0.05);
    worker.join();
    EXPECT_GE(engine::processCpuSeconds() - before, 0.1) << "two threads each used 50 ms of CPU";
}

TEST(ProcessCpu, TheMeterGivesTheShareOfOneCoreSinceTheLastSample)
{
    engine::CpuUsageMeter meter;
    burnCpu(0.05);
    const double busy = meter.sample();
    // One thread spun the whole window (less whatever the machine's other work took from it): above
    // zero, and at most one core plus what the test runner's other threads did.
    EXPECT_GT(busy, 0);
    EXPECT_LT(busy, 100.0 * std::max(1u, std::thread::hardware_concurrency()) + 50);

    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    const double idle = meter.sample();
    EXPECT_GE(idle, 0);
    EXPECT_LT(idle, busy) << "a sleeping process used more CPU than a spinning one";
}

TEST(ProcessMemory, AvailableRamIsReadFromTheKernel)
{
    const int64_t available = engine::availableRamBytes();
    EXPECT_GT(available, 1 << 20);
    EXPECT_GT(engine::residentBytes(), 0);
    EXPECT_GE(engine::residentPeakBytes(), engine::residentBytes());
}

} // namespace
