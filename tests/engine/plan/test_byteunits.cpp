// Byte sizes as Accelerate's convert_file_size_to_int reads them.

#include "engine/core/byteunits.h"
#include "engine/core/format.h"
#include "support/expecterror.h"

#include <gtest/gtest.h>

using engine::ErrorKind;
using engine::formatBytes;
using engine::parseByteSize;
using testing_support::expectError;

TEST(ByteUnits, UnitsArePowersOfTenOrTwo)
{
    EXPECT_EQ(parseByteSize("15GiB", "x"), 15LL << 30);
    EXPECT_EQ(parseByteSize("13GB", "x"), 13'000'000'000LL);
    EXPECT_EQ(parseByteSize("512MiB", "x"), 512LL << 20);
    EXPECT_EQ(parseByteSize("5MB", "x"), 5'000'000LL);
    EXPECT_EQ(parseByteSize("3KB", "x"), 3000);
    EXPECT_EQ(parseByteSize("3KiB", "x"), 3072);
    EXPECT_EQ(parseByteSize("2TB", "x"), 2'000'000'000'000LL);
    EXPECT_EQ(parseByteSize("1TiB", "x"), 1LL << 40);
    EXPECT_EQ(parseByteSize("1073741824", "x"), 1073741824);
    EXPECT_EQ(parseByteSize("15gib", "x"), 15LL << 30); // case-insensitive, as .upper() in Accelerate
}

TEST(ByteUnits, FractionsTruncateToWholeBytes)
{
    // int(6.5 * 2**30) = 6979321856
    EXPECT_EQ(parseByteSize("6.5GiB", "x"), 6979321856LL);
    EXPECT_EQ(parseByteSize("1.5KiB", "x"), 1536);
    EXPECT_EQ(parseByteSize("0.001KB", "x"), 1);
    // A lowercase b after a decimal unit is bits, as in Accelerate: 8Gb = 1 GB.
    EXPECT_EQ(parseByteSize("8Gb", "x"), 1'000'000'000LL);
}

TEST(ByteUnits, RejectsBadSizes)
{
    expectError([] { parseByteSize("-1GiB", "--max-memory entry \"0=-1GiB\""); }, ErrorKind::InvalidInput, "negative");
    expectError([] { parseByteSize("0", "budget"); }, ErrorKind::InvalidInput, "zero");
    expectError([] { parseByteSize("0GiB", "budget"); }, ErrorKind::InvalidInput, "zero");
    expectError([] { parseByteSize("", "budget"); }, ErrorKind::InvalidInput, "empty");
    expectError([] { parseByteSize("lots", "budget"); }, ErrorKind::InvalidInput, "not a size");
    expectError([] { parseByteSize("15XB", "budget"); }, ErrorKind::InvalidInput, "not a size");
    expectError([] { parseByteSize("1.2.3GB", "budget"); }, ErrorKind::InvalidInput, "not a size");
    expectError([] { parseByteSize("GiB", "budget"); }, ErrorKind::InvalidInput, "no number");
    expectError([] { parseByteSize("99999999999TiB", "budget"); }, ErrorKind::InvalidInput, "too large");
}

TEST(ByteUnits, Formats)
{
    EXPECT_EQ(formatBytes(980), "980 B");
    EXPECT_EQ(formatBytes(1536), "1.50 KiB");
    EXPECT_EQ(formatBytes(15LL << 30), "15.00 GiB");
}
