// Device names: the spellings the engine accepts, and the errors for devices this build or machine lacks.
#include "engine/core/device.h"
#include "engine/core/error.h"
#include "engine/core/systeminfo.h"
#include "engine/core/torchdevice.h"

#include <torch/version.h>
#include "support/expecterror.h"

#include <nlohmann/json.hpp>

#include <gtest/gtest.h>

using engine::canonicalDeviceName;
using engine::ErrorKind;
using testing_support::expectError;

TEST(DeviceName, AcceptsTorchSpellings)
{
    EXPECT_EQ(canonicalDeviceName("cpu"), "cpu");
    EXPECT_EQ(canonicalDeviceName("cuda"), "cuda:0");
    EXPECT_EQ(canonicalDeviceName("cuda:0"), "cuda:0");
    EXPECT_EQ(canonicalDeviceName("cuda:13"), "cuda:13");
    EXPECT_TRUE(engine::isCudaDeviceName("cuda:1"));
    EXPECT_FALSE(engine::isCudaDeviceName("cpu"));
}

TEST(DeviceName, RefusesEverythingElseByName)
{
    for (const char *bad : {"", "CPU", "gpu", "cuda:", "cuda:-1", "cuda:01", "cuda:1x", "cuda:99999", "cuda 0", "mps"})
        expectError([&] { canonicalDeviceName(bad, "--device"); }, ErrorKind::InvalidInput,
                    std::string("--device '") + bad + "' is not a device: use cpu, cuda or cuda:N");
}

TEST(DeviceName, TorchDeviceOfCpuIsTheCpu)
{
    EXPECT_EQ(engine::torchDevice("cpu"), c10::Device(c10::kCPU));
}

TEST(DeviceName, CudaWithoutAGpuSaysWhy)
{
    if (engine::torchHasCuda() && !engine::systemInfo().gpus.empty())
        GTEST_SKIP() << "a GPU is visible: the _CUDA tests cover this build";
    const std::string why = engine::torchHasCuda() ? "no CUDA GPU is visible" : "CPU-only libtorch";
    expectError([] { engine::torchDevice("cuda:0", "--device"); }, ErrorKind::InvalidInput, "--device cuda:0: ");
    expectError([] { engine::torchDevice("cuda", "--device"); }, ErrorKind::InvalidInput, why);
}

TEST(SystemInfo, NamesTheLibtorchInUse)
{
    const engine::SystemInfo info = engine::systemInfo();
    EXPECT_EQ(info.torchVersion.substr(0, info.torchVersion.find('.')), std::to_string(TORCH_VERSION_MAJOR));
    EXPECT_GE(info.hardwareThreads, 1);
    EXPECT_GE(info.torchThreads, 1);
    EXPECT_FALSE(info.cpuCapability.empty()) << "libtorch's show_config() has a 'CPU capability usage' line";
    const std::string text = engine::describeSystem(info);
    EXPECT_NE(text.find("libtorch  " + info.torchVersion), std::string::npos) << text;
    const nlohmann::json json = engine::systemInfoJson(info);
    EXPECT_EQ(json["libtorch"], info.torchVersion);
    EXPECT_EQ(json["cuda"]["built_with_cuda"], engine::torchHasCuda());
    EXPECT_EQ(json["gpus"].size(), info.gpus.size());
}
