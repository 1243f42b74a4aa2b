// Devices, presets and --max-memory.

#include "engine/plan/device.h"
#include "support/expecterror.h"

#include <gtest/gtest.h>

using namespace engine::plan;
using engine::ErrorKind;
using testing_support::expectError;

TEST(Devices, ParsesMaxMemoryInAccelerateOrder)
{
    const auto devices = parseMaxMemory("cpu=13GiB, 1=15GiB,0=15GiB,disk=100GB");
    ASSERT_EQ(devices.size(), 4u);
    EXPECT_EQ(devices[0].key(), "0");
    EXPECT_EQ(devices[1].key(), "1");
    EXPECT_EQ(devices[2].key(), "cpu");
    EXPECT_EQ(devices[3].key(), "disk");
    EXPECT_EQ(devices[1].torchDevice(), "cuda:1");
    EXPECT_EQ(devices[0].budget, 15LL << 30);
    EXPECT_EQ(devices[0].overheadBytes, kDefaultGpuOverheadBytes);
    EXPECT_EQ(devices[2].overheadBytes, kDefaultCpuOverheadBytes);
    EXPECT_EQ(devices[3].budget, 100'000'000'000LL);
}

TEST(Devices, Presets)
{
    const auto t4 = findGpuPreset("t4");
    ASSERT_TRUE(t4);
    EXPECT_FALSE(t4->bf16);
    EXPECT_EQ(t4->totalBytes, 16'000'000'000LL);
    EXPECT_FALSE(findGpuPreset("V100")->bf16);
    EXPECT_TRUE(findGpuPreset("rtx4090")->bf16);
    EXPECT_EQ(findGpuPreset("H200")->totalBytes, 141'000'000'000LL);
    EXPECT_EQ(findGpuPreset("A100-40GB")->totalBytes, 40'000'000'000LL);
    for (const char *name : {"L4", "A10", "RTX 3090", "A100-80GB", "H100"})
        EXPECT_TRUE(findGpuPreset(name)) << name;
    EXPECT_FALSE(findGpuPreset("TPU"));
    DeviceSpec d;
    d.kind = DeviceKind::Gpu;
    d.index = 0;
    applyGpuPreset(d, *t4);
    EXPECT_EQ(d.budget, 16'000'000'000LL);
    EXPECT_FALSE(d.bf16);
}

TEST(Devices, RejectsBadMaxMemory)
{
    expectError([] { parseMaxMemory("0=15GiB,tpu=3GB"); }, ErrorKind::InvalidInput, "unknown device \"tpu\"");
    expectError([] { parseMaxMemory("0=15GiB,0=3GB"); }, ErrorKind::InvalidInput, "given twice");
    expectError([] { parseMaxMemory("0:15GiB"); }, ErrorKind::InvalidInput, "DEVICE=SIZE");
    expectError([] { parseMaxMemory("1=15GiB"); }, ErrorKind::InvalidInput, "0..0 without gaps");
    expectError([] { parseMaxMemory("0=-5GB"); }, ErrorKind::InvalidInput, "negative");
    expectError([] { parseMaxMemory("cpu=0"); }, ErrorKind::InvalidInput, "zero");
    expectError([] { parseMaxMemory(""); }, ErrorKind::InvalidInput, "empty");
    expectError([] { parseMaxMemory("0=15GiB,,cpu=1GB"); }, ErrorKind::InvalidInput, "DEVICE=SIZE");
}
