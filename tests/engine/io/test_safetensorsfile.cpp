// SafetensorsFile: zero-copy tensors over the mapping, their lifetime, copies and conversions.

#include "engine/core/error.h"
#include "engine/core/torchversion.h"
#include "engine/io/dtypetorch.h"
#include "engine/io/safetensorsfile.h"
#include "iotestsupport.h"
#include "support/expecterror.h"
#include "support/tempdir.h"

#include <torch/torch.h>

#include <gtest/gtest.h>

using namespace engine::io;
using testing_support::expectError;

namespace {

std::vector<std::pair<std::string, torch::Tensor>> everyTorchDtype()
{
    const auto base = torch::arange(-6, 6, torch::kDouble).reshape({3, 4});
    return {
        {"bool", base.gt(0)},
        {"u8", (base + 6).to(torch::kByte)},
        {"i8", base.to(torch::kChar)},
        {"i16", (base * 1000).to(torch::kShort)},
        {"i32", (base * 100000).to(torch::kInt)},
        {"i64", (base * 1e12).to(torch::kLong)},
        {"f16", (base / 4).to(torch::kHalf)},
        {"bf16", (base / 8).to(torch::kBFloat16)},
        {"f32", (base / 3).to(torch::kFloat)},
        {"f64", base / 7},
        {"c64", torch::complex((base / 2).to(torch::kFloat), (-base).to(torch::kFloat))},
        {"scalar", torch::tensor(42, torch::kLong).reshape({})},
        {"zero_size", torch::empty({0, 5}, torch::kFloat)},
    };
}

} // namespace

TEST(SafetensorsFile, RoundTripsEveryDtypeLibtorchCanHold)
{
    testing_support::TempDir dir("io-roundtrip");
    const auto path = dir / "all.safetensors";
    const auto tensors = everyTorchDtype();
    writeSafetensors(path, tensors, {{"format", "pt"}});
    const SafetensorsFile file = SafetensorsFile::open(path);
    EXPECT_EQ(file.header().metadata, (std::map<std::string, std::string>{{"format", "pt"}}));
    ASSERT_EQ(file.header().tensors.size(), tensors.size());
    for (const auto &[name, expected] : tensors) {
        SCOPED_TRACE(name);
        const torch::Tensor actual = file.tensor(name);
        EXPECT_EQ(actual.scalar_type(), expected.scalar_type());
        EXPECT_EQ(actual.sizes(), expected.sizes());
        EXPECT_TRUE(torch::equal(actual, expected));
    }
}

TEST(SafetensorsFile, TensorsAreZeroCopyOverTheMappingAndOutliveTheFileObject)
{
    testing_support::TempDir dir("io-zerocopy");
    const auto path = dir / "w.safetensors";
    const auto weight = torch::randn({64, 64});
    writeSafetensors(path, {{"w", weight}});
    torch::Tensor first;
    torch::Tensor second;
    torch::Tensor owned;
    {
        const SafetensorsFile file = SafetensorsFile::open(path);
        first = file.tensor("w");
        second = file.tensor("w");
        TensorLoadOptions owning;
        owning.copy = true;
        owned = file.tensor("w", owning);
    }
    EXPECT_EQ(first.data_ptr(), second.data_ptr()); // both alias the mapping
    EXPECT_NE(owned.data_ptr(), first.data_ptr());
    std::filesystem::remove(path); // the mapping keeps the data reachable
    EXPECT_TRUE(torch::equal(first, weight));
    EXPECT_TRUE(torch::equal(owned, weight));
}

TEST(SafetensorsFile, InPlaceEditsOfZeroCopyTensorsNeverReachTheFile)
{
    testing_support::TempDir dir("io-cow");
    const auto path = dir / "w.safetensors";
    writeSafetensors(path, {{"w", torch::ones({1024})}});
    const std::string before = io_test::readBytes(path);
    {
        const SafetensorsFile file = SafetensorsFile::open(path);
        torch::Tensor w = file.tensor("w");
        w.mul_(3);
        EXPECT_EQ(w[0].item<float>(), 3.0f);
    }
    EXPECT_EQ(io_test::readBytes(path), before);
    EXPECT_EQ(SafetensorsFile::open(path).tensor("w")[0].item<float>(), 1.0f);
}

TEST(SafetensorsFile, ConvertsAndCopiesOnlyWhenAsked)
{
    testing_support::TempDir dir("io-convert");
    const auto path = dir / "w.safetensors";
    const auto weight = (torch::arange(16, torch::kFloat) / 8).to(torch::kBFloat16);
    writeSafetensors(path, {{"w", weight}});
    const SafetensorsFile file = SafetensorsFile::open(path);
    const torch::Tensor asFloat = file.tensor("w", {.dtype = torch::kFloat});
    EXPECT_EQ(asFloat.scalar_type(), torch::kFloat);
    EXPECT_TRUE(torch::equal(asFloat, weight.to(torch::kFloat)));
    const torch::Tensor same = file.tensor("w", {.dtype = torch::kBFloat16});
    EXPECT_EQ(same.data_ptr(), file.tensor("w").data_ptr()); // same dtype: still zero-copy
}

TEST(SafetensorsFile, MisalignedDataIsCopiedNotAliased)
{
    // A hand-made header of 9 bytes puts the F32 data at file offset 17: not 4-byte aligned.
    testing_support::TempDir dir("io-misaligned");
    const auto path = dir / "odd.safetensors";
    const float values[2] = {1.5f, -2.25f};
    std::string json = "{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}";
    json.append((8 - json.size() % 8) % 8 + 1, ' ');
    io_test::writeBytes(path, io_test::safetensorsBytes(json, std::string(reinterpret_cast<const char *>(values), 8)));
    const SafetensorsFile file = SafetensorsFile::open(path);
    ASSERT_NE((file.header().dataOffset) % 4, 0u);
    const torch::Tensor a = file.tensor("a");
    EXPECT_EQ(reinterpret_cast<std::uintptr_t>(a.data_ptr()) % 4, 0u);
    EXPECT_TRUE(torch::equal(a, torch::tensor({1.5f, -2.25f})));
}

TEST(SafetensorsFile, LoadsTheDtypesThisLibtorchHoldsAndRefusesTheRestByName)
{
    testing_support::TempDir dir("io-f8");
    const auto path = dir / "f8.safetensors";
    // x: F8_E4M3 bytes 0x38 (1.0) and 0xC0 (-2.0); y: U16 1 and 65535; z: F6 (no libtorch holds it).
    const std::string json = "{\"x\":{\"dtype\":\"F8_E4M3\",\"shape\":[2],\"data_offsets\":[0,2]},"
                             "\"y\":{\"dtype\":\"U16\",\"shape\":[2],\"data_offsets\":[2,6]},"
                             "\"z\":{\"dtype\":\"F6_E2M3\",\"shape\":[4],\"data_offsets\":[6,9]}}";
    const std::string data = std::string("\x38\xC0", 2) + std::string("\x01\x00\xFF\xFF", 4) + io_test::zeros(3);
    io_test::writeBytes(path, io_test::safetensorsBytes(json, data));
    const SafetensorsFile file = SafetensorsFile::open(path); // the header itself is valid
    const std::string version = torchVersionText();
#if TUNEBENCH_TORCH_AT_LEAST(2, 2)
    const torch::Tensor x = file.tensor("x");
    EXPECT_EQ(x.scalar_type(), c10::ScalarType::Float8_e4m3fn);
    EXPECT_TRUE(torch::equal(x.to(torch::kFloat), torch::tensor({1.0f, -2.0f})));
#else
    expectError([&] { file.tensor("x"); }, engine::ErrorKind::InvalidInput,
                "tensor 'x' has dtype F8_E4M3, which " + version + " cannot hold");
#endif
#if TUNEBENCH_TORCH_AT_LEAST(2, 3)
    const torch::Tensor y = file.tensor("y");
    EXPECT_EQ(y.scalar_type(), c10::ScalarType::UInt16);
    EXPECT_TRUE(torch::equal(y.to(torch::kLong), torch::tensor({1, 65535}, torch::kLong)));
#else
    expectError([&] { file.tensor("y"); }, engine::ErrorKind::InvalidInput, "has dtype U16, which " + version + " cannot hold");
#endif
    expectError([&] { file.tensor("z"); }, engine::ErrorKind::InvalidInput, "has dtype F6_E2M3, which " + version + " cannot hold");
    expectError([&] { file.tensor("w"); }, engine::ErrorKind::InvalidInput, "no tensor named 'w'");
}
