// engine/core/mallocpolicy.h: with the policy, memory a step frees is reused by the next one instead
// of being faulted in from the kernel again.

#include "engine/core/mallocpolicy.h"

#include <gtest/gtest.h>

#include <sys/resource.h>

#include <cstdlib>
#include <cstring>

namespace {

long minorFaults()
{
    rusage usage{};
    getrusage(RUSAGE_SELF, &usage);
    return usage.ru_minflt;
}

/// Allocates, touches and frees blocks of `bytes`, `bytes` + 1 MiB, ... (`rounds` of them, as a
/// step's activations differ in size); returns the page faults that took.
long faultsOfAllocationCycles(size_t bytes, int rounds)
{
    const long before = minorFaults();
    for (int i = 0; i < rounds; ++i) {
        const size_t size = bytes + static_cast<size_t>(i) * (1u << 20);
        auto *block = static_cast<char *>(std::malloc(size));
        std::memset(block, i, size);
        asm volatile("" : : "r"(block) : "memory"); // keep the writes
        std::free(block);
    }
    return minorFaults() - before;
}

} // namespace

TEST(MallocPolicy, FreedBlocksAreReusedWithoutFaultingPagesInAgain)
{
#ifndef __GLIBC__
    GTEST_SKIP() << "the policy is for glibc's malloc";
#endif
    if (std::getenv("MALLOC_MMAP_THRESHOLD_") || std::getenv("MALLOC_TRIM_THRESHOLD_") || std::getenv("MALLOC_TOP_PAD_")
        || std::getenv("MALLOC_ARENA_MAX") || std::getenv("GLIBC_TUNABLES"))
        GTEST_SKIP() << "malloc is tuned by the environment; the policy leaves it alone";
    ASSERT_TRUE(engine::keepFreedMemoryForReuse());
    EXPECT_TRUE(engine::keepFreedMemoryForReuse()) << "idempotent";
    constexpr size_t kBlock = 20u << 20; // 20-29 MiB: activations of a small model's step
    const long faults = faultsOfAllocationCycles(kBlock, 10);
    // Given back at every free (glibc's default: each block larger than the last freed is mmapped)
    // the ten blocks fault ~63,000 pages in; reused, about the largest block's 7,400 pages.
    EXPECT_LT(faults, 15'000) << "freed memory went back to the kernel";
}
