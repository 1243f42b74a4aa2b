// Interoperability with an independent Python implementation of the format (safetensors_reference.py):
// a checked-in golden file read and re-written byte for byte, and live round trips when
// /usr/bin/python3 can import torch.

#include "engine/io/safetensorsfile.h"
#include "iotestsupport.h"
#include "support/tempdir.h"

#include <torch/torch.h>

#include <gtest/gtest.h>

#include <cstdlib>

using namespace engine::io;

namespace {

const std::filesystem::path kGolden = std::filesystem::path(TUNEBENCH_TEST_DATA) / "safetensors" / "golden.safetensors";

/// The same tensors as golden_tensors() in safetensors_reference.py.
std::vector<std::pair<std::string, torch::Tensor>> goldenTensors()
{
    const auto base = torch::arange(-6, 6, torch::kDouble).reshape({3, 4});
    return {
        {"embed.weight", (base / 4).to(torch::kFloat)},
        {"norm.weight", (base / 8).to(torch::kBFloat16)},
        {"head.bias", (base[0] / 2).to(torch::kHalf)},
        {"step", torch::tensor(42, torch::kLong).reshape({})},
        {"mask", base.gt(0)},
        {"ids", (base * 1000).to(torch::kInt)},
        {"bytes", (base + 6).to(torch::kByte)},
        {"small", base.to(torch::kChar)},
        {"short", (base * 300).to(torch::kShort)},
        {"phase", torch::complex((base / 2).to(torch::kFloat), (-base).to(torch::kFloat))},
        {"double", base / 10},
        {"empty", torch::empty({0, 3}, torch::kFloat)},
        {"\xc3\xbcn\xc3\xaf.weight", torch::tensor({1.0f, -1.0f})},
    };
}

const std::map<std::string, std::string> kGoldenMetadata = {{"format", "pt"}, {"note", "golden \"quoted\" \xc3\xbc/\\"}};

bool pythonTorchAvailable()
{
    static const bool available = std::system("/usr/bin/python3 -c 'import torch' >/dev/null 2>&1") == 0;
    return available;
}

int runReference(const std::string &arguments)
{
    const std::string command = "/usr/bin/python3 " SAFETENSORS_REFERENCE_SCRIPT " " + arguments;
    return std::system(command.c_str());
}

void expectGoldenTensors(const SafetensorsFile &file)
{
    EXPECT_EQ(file.header().metadata, kGoldenMetadata);
    const auto expected = goldenTensors();
    ASSERT_EQ(file.header().tensors.size(), expected.size());
    for (const auto &[name, tensor] : expected) {
        SCOPED_TRACE(name);
        const torch::Tensor actual = file.tensor(name);
        EXPECT_EQ(actual.scalar_type(), tensor.scalar_type());
        EXPECT_EQ(actual.sizes(), tensor.sizes());
        EXPECT_TRUE(torch::equal(actual, tensor));
    }
}

} // namespace

TEST(SafetensorsInterop, ReadsTheGoldenFileWrittenByPython)
{
    expectGoldenTensors(SafetensorsFile::open(kGolden));
}

TEST(SafetensorsInterop, WritesTheGoldenFileByteForByte)
{
    testing_support::TempDir dir("io-golden");
    writeSafetensors(dir / "golden.safetensors", goldenTensors(), kGoldenMetadata);
    const std::string written = io_test::readBytes(dir / "golden.safetensors");
    const std::string golden = io_test::readBytes(kGolden);
    ASSERT_FALSE(golden.empty());
    EXPECT_EQ(written, golden);
}

TEST(SafetensorsInterop, PythonWritesCppReads)
{
    if (!pythonTorchAvailable())
        GTEST_SKIP() << "/usr/bin/python3 cannot import torch";
    testing_support::TempDir dir("io-py2cpp");
    const auto path = dir / "py.safetensors";
    ASSERT_EQ(runReference("write " + path.string()), 0);
    expectGoldenTensors(SafetensorsFile::open(path));
}

TEST(SafetensorsInterop, CppWritesPythonReads)
{
    if (!pythonTorchAvailable())
        GTEST_SKIP() << "/usr/bin/python3 cannot import torch";
    testing_support::TempDir dir("io-cpp2py");
    const auto path = dir / "cpp.safetensors";
    writeSafetensors(path, goldenTensors(), kGoldenMetadata);
    EXPECT_EQ(runReference("check " + path.string()), 0);
}

TEST(SafetensorsInterop, RandomPythonFileSurvivesACppRoundTrip)
{
    if (!pythonTorchAvailable())
        GTEST_SKIP() << "/usr/bin/python3 cannot import torch";
    testing_support::TempDir dir("io-random");
    for (int seed : {1, 2}) {
        const auto original = dir / ("random" + std::to_string(seed) + ".safetensors");
        const auto rewritten = dir / ("rewritten" + std::to_string(seed) + ".safetensors");
        ASSERT_EQ(runReference("write-random " + original.string() + " " + std::to_string(seed)), 0);
        const SafetensorsFile file = SafetensorsFile::open(original);
        std::vector<std::pair<std::string, torch::Tensor>> tensors;
        for (const TensorInfo &info : file.header().tensors)
            tensors.emplace_back(info.name, file.tensor(info.name));
        writeSafetensors(rewritten, tensors, file.header().metadata);
        EXPECT_EQ(runReference("compare " + original.string() + " " + rewritten.string()), 0);
        EXPECT_EQ(io_test::readBytes(original), io_test::readBytes(rewritten)) << "same order, same bytes";
    }
}
