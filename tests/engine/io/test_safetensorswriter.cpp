// writeSafetensors: layout, order, padding, refusals, atomicity.

#include "engine/core/error.h"
#include "engine/io/safetensorsfile.h"
#include "iotestsupport.h"
#include "support/expecterror.h"
#include "support/tempdir.h"

#include <torch/torch.h>

#include <gtest/gtest.h>

using namespace engine::io;
using namespace std::string_literals;
using testing_support::expectError;

TEST(SafetensorsWriter, PadsTheHeaderToEightBytesAndOrdersByAlignmentThenName)
{
    testing_support::TempDir dir("io-order");
    const auto path = dir / "o.safetensors";
    writeSafetensors(path, {{"b", torch::zeros({3}, torch::kByte)}, {"a", torch::zeros({1}, torch::kFloat)},
                            {"c", torch::zeros({2}, torch::kDouble)}, {"d", torch::zeros({1}, torch::kFloat)}});
    const std::string bytes = io_test::readBytes(path);
    const SafetensorsHeader header = readSafetensorsHeader(path);
    EXPECT_EQ(header.headerSize % 8, 0u);
    EXPECT_EQ(bytes.substr(8, header.headerSize).find_last_not_of(' ') + 1,
              bytes.substr(8, header.headerSize).rfind('}') + 1);
    std::vector<std::string> order;
    for (const TensorInfo &info : header.tensors)
        order.push_back(info.name);
    EXPECT_EQ(order, (std::vector<std::string>{"c", "a", "d", "b"}));
    EXPECT_EQ(bytes.substr(8, 35), "{\"c\":{\"dtype\":\"F64\",\"shape\":[2],\"da");
}

TEST(SafetensorsWriter, WritesNonContiguousConjugatedAndNegatedViewsAsTheirValues)
{
    testing_support::TempDir dir("io-views");
    const auto path = dir / "v.safetensors";
    const auto base = torch::arange(12, torch::kFloat).reshape({3, 4});
    const auto complex = torch::complex(base, base + 1);
    writeSafetensors(path, {{"t", base.t()}, {"conj", complex.conj()}, {"slice", base.index({torch::indexing::Slice(), 1})}});
    const SafetensorsFile file = SafetensorsFile::open(path);
    EXPECT_TRUE(torch::equal(file.tensor("t"), base.t().contiguous()));
    EXPECT_TRUE(torch::equal(file.tensor("conj"), complex.conj().resolve_conj()));
    EXPECT_TRUE(torch::equal(file.tensor("slice"), base.index({torch::indexing::Slice(), 1}).contiguous()));
}

TEST(SafetensorsWriter, RefusesDuplicatesReservedNamesAndUnsupportedDtypes)
{
    testing_support::TempDir dir("io-refuse");
    const auto path = dir / "r.safetensors";
    expectError([&] { writeSafetensors(path, {{"a", torch::zeros({1})}, {"a", torch::ones({1})}}); },
                engine::ErrorKind::InvalidInput, "tensor 'a' is given twice");
    expectError([&] { writeSafetensors(path, {{"__metadata__", torch::zeros({1})}}); }, engine::ErrorKind::InvalidInput,
                "reserved");
    expectError([&] { writeSafetensors(path, {{"z", torch::zeros({1}, torch::kComplexDouble)}}); },
                engine::ErrorKind::InvalidInput, "which safetensors cannot store");
    EXPECT_FALSE(std::filesystem::exists(path));
}

TEST(SafetensorsWriter, ReplacesAtomicallyAndLeavesNoTemporaryFiles)
{
    testing_support::TempDir dir("io-atomic");
    const auto path = dir / "m.safetensors";
    writeSafetensors(path, {{"w", torch::ones({8})}});
    const SafetensorsFile old = SafetensorsFile::open(path);
    const torch::Tensor oldWeight = old.tensor("w");
    writeSafetensors(path, {{"w", torch::zeros({8})}}, {{"v", "2"}});
    EXPECT_TRUE(torch::equal(oldWeight, torch::ones({8}))); // the old mapping still sees the old file
    EXPECT_TRUE(torch::equal(SafetensorsFile::open(path).tensor("w"), torch::zeros({8})));
    size_t files = 0;
    for ([[maybe_unused]] const auto &entry : std::filesystem::directory_iterator(dir.path()))
        ++files;
    EXPECT_EQ(files, 1u);
}

TEST(SafetensorsWriter, EmptyFileMatchesTheReferenceBytes)
{
    // The reference implementation's own test: no tensors, no metadata -> "{}" padded to 8.
    testing_support::TempDir dir("io-emptyref");
    writeSafetensors(dir / "e.safetensors", {});
    EXPECT_EQ(io_test::readBytes(dir / "e.safetensors"), std::string("\x08\0\0\0\0\0\0\0{}      ", 16));
    writeSafetensors(dir / "m.safetensors", {}, {{"framework", "pt"}});
    EXPECT_EQ(io_test::readBytes(dir / "m.safetensors"),
              "\x28\0\0\0\0\0\0\0{\"__metadata__\":{\"framework\":\"pt\"}}     "s);
    // And its single-tensor test (attn.0, F32 [1, 2, 3], values 0..5).
    writeSafetensors(dir / "a.safetensors", {{"attn.0", torch::arange(6, torch::kFloat).reshape({1, 2, 3})}});
    const std::string bytes = io_test::readBytes(dir / "a.safetensors");
    EXPECT_EQ(bytes.substr(0, 8 + 64),
              "\x40\0\0\0\0\0\0\0{\"attn.0\":{\"dtype\":\"F32\",\"shape\":[1,2,3],\"data_offsets\":[0,24]}}"s);
}
