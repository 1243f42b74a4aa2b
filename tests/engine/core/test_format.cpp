// engine/core/format.h: the one way byte sizes and durations are written for people.

#include "engine/core/format.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

namespace {

constexpr int64_t kKiB = 1024;
constexpr int64_t kMiB = 1024 * kKiB;
constexpr int64_t kGiB = 1024 * kMiB;

TEST(FormatBytes, WholeBytesBelowAKibibyteThenBinaryUnits)
{
    EXPECT_EQ(engine::formatBytes(0), "0 B");
    EXPECT_EQ(engine::formatBytes(980), "980 B");
    EXPECT_EQ(engine::formatBytes(1023), "1023 B");
    EXPECT_EQ(engine::formatBytes(1024), "1.00 KiB");
    EXPECT_EQ(engine::formatBytes(1536), "1.50 KiB");
    EXPECT_EQ(engine::formatBytes(15 * kGiB), "15.00 GiB");
    EXPECT_EQ(engine::formatBytes(3 * kGiB * 1024 * 1024), "3.00 PiB");
}

TEST(FormatBytes, DecimalsAreAsked)
{
    EXPECT_EQ(engine::formatBytes(kGiB + 300 * kMiB, 1), "1.3 GiB");
    EXPECT_EQ(engine::formatBytes(3 * kKiB, 1), "3.0 KiB");
    EXPECT_EQ(engine::formatBytes(kGiB + 300 * kMiB, 0), "1 GiB");
    EXPECT_EQ(engine::formatBytes(kGiB + 300 * kMiB, 3), "1.293 GiB");
}

// 1023.99 MiB would print as "1024.0 MiB" at one decimal: it moves up a unit instead.
TEST(FormatBytes, NeverReads1024OfAUnit)
{
    EXPECT_EQ(engine::formatBytes(1023 * kMiB + 1000 * kKiB, 1), "1.0 GiB");
    EXPECT_EQ(engine::formatBytes(1023 * kMiB + 1000 * kKiB, 2), "1023.98 MiB");
    EXPECT_EQ(engine::formatBytes(1023 * kMiB + 1020 * kKiB, 2), "1.00 GiB");
    EXPECT_EQ(engine::formatBytes(1023 * kMiB, 2), "1023.00 MiB");
    EXPECT_EQ(engine::formatBytes(1023 * kMiB + 1020 * kKiB, 3), "1023.996 MiB");
}

TEST(FormatBytes, NegativeSizesKeepTheirSign)
{
    EXPECT_EQ(engine::formatBytes(-2 * kGiB, 1), "-2.0 GiB");
    EXPECT_EQ(engine::formatBytes(-512), "-512 B");
}

TEST(FormatDuration, MinutesUnderAnHourHoursFromThen)
{
    EXPECT_EQ(engine::formatDuration(0), "0:00");
    EXPECT_EQ(engine::formatDuration(42), "0:42");
    EXPECT_EQ(engine::formatDuration(59.6), "1:00");
    EXPECT_EQ(engine::formatDuration(725), "12:05");
    EXPECT_EQ(engine::formatDuration(3599.4), "59:59");
    EXPECT_EQ(engine::formatDuration(3600), "1:00:00");
    EXPECT_EQ(engine::formatDuration(3723), "1:02:03");
    EXPECT_EQ(engine::formatDuration(100 * 3600 + 61), "100:01:01");
}

TEST(FormatDuration, UnknownReadsAsADash)
{
    EXPECT_EQ(engine::formatDuration(-1), "\u2013");
    EXPECT_EQ(engine::formatDuration(std::numeric_limits<double>::quiet_NaN()), "\u2013");
    EXPECT_EQ(engine::formatDuration(std::numeric_limits<double>::infinity()), "\u2013");
}

} // namespace
