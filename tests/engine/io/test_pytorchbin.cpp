// Legacy pytorch_model.bin: golden files made by make_legacy_files.py, the same script rerun live when
// python3-torch is installed, shards and their index.

#include "engine/io/pytorchbin.h"

#include "engine/core/error.h"
#include "engine/io/pytorchbinarchive.h"
#include "engine/io/legacytestutil.h"
#include "support/expecterror.h"
#include "support/tempdir.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <torch/torch.h>

#include <cstdlib>
#include <fstream>
#include <map>

using engine::ErrorKind;
using engine::io::NamedTensors;
using legacy_test::kLegacyData;
using legacy_test::readJson;
using testing_support::expectError;
using testing_support::TempDir;

namespace {

std::string dtypeName(const torch::Tensor &t)
{
    const std::string full = c10::toString(t.scalar_type());
    static const std::map<std::string, std::string> names{
        {"Float", "float32"}, {"Half", "float16"}, {"BFloat16", "bfloat16"}, {"Double", "float64"},
        {"Long", "int64"},    {"Int", "int32"},    {"Short", "int16"},       {"Char", "int8"},
        {"Byte", "uint8"},    {"Bool", "bool"}};
    const auto it = names.find(full);
    return it == names.end() ? full : it->second;
}

/// Checks `tensors` against the description written by make_legacy_files.py.
void expectMatchesDescription(const NamedTensors &tensors, const nlohmann::ordered_json &expected)
{
    ASSERT_EQ(tensors.size(), expected.size());
    std::map<std::string, torch::Tensor> byName;
    size_t i = 0;
    for (const auto &[name, description] : expected.items()) {
        SCOPED_TRACE(name);
        ASSERT_EQ(tensors[i].first, name) << "order differs at " << i;
        const torch::Tensor &t = tensors[i].second;
        byName[name] = t;
        ++i;
        EXPECT_EQ(dtypeName(t), description["dtype"].get<std::string>());
        EXPECT_EQ(t.sizes().vec(), description["shape"].get<std::vector<int64_t>>());
        EXPECT_EQ(t.strides().vec(), description["stride"].get<std::vector<int64_t>>());
        EXPECT_EQ(t.storage_offset(), description["offset"].get<int64_t>());
        EXPECT_TRUE(t.device().is_cpu());
        const torch::Tensor flat = t.to(torch::kDouble).contiguous().reshape({-1});
        const auto values = description["values"].get<std::vector<double>>();
        ASSERT_EQ(flat.numel(), int64_t(values.size()));
        for (int64_t k = 0; k < flat.numel(); ++k)
            EXPECT_EQ(flat[k].item<double>(), values[size_t(k)]) << "element " << k;
        const std::string sharesWith = description["shares_with"].get<std::string>();
        ASSERT_TRUE(byName.count(sharesWith));
        EXPECT_TRUE(t.storage().is_alias_of(byName[sharesWith].storage())) << "should share storage with " << sharesWith;
        if (sharesWith == name) {
            for (const auto &[other, tensor] : byName) {
                if (other != name) {
                    EXPECT_FALSE(t.storage().is_alias_of(tensor.storage())) << "unexpectedly shares with " << other;
                }
            }
        }
    }
}

const torch::Tensor &find(const NamedTensors &tensors, const std::string &name)
{
    for (const auto &[n, t] : tensors)
        if (n == name)
            return t;
    throw std::runtime_error("no tensor " + name);
}

bool pythonTorchAvailable()
{
    return std::system("/usr/bin/python3 -c 'import torch' >/dev/null 2>&1") == 0;
}

} // namespace

TEST(PytorchBin, GoldenStateDictMatchesPython)
{
    const NamedTensors tensors = engine::io::loadPytorchBin(kLegacyData / "state_dict.bin");
    expectMatchesDescription(tensors, readJson(kLegacyData / "state_dict.json"));
}

TEST(PytorchBin, TiedWeightsAndViewsShareMemory)
{
    const NamedTensors tensors = engine::io::loadPytorchBin(kLegacyData / "state_dict.bin");
    torch::Tensor embed = find(tensors, "embed.weight");
    const torch::Tensor head = find(tensors, "lm_head.weight");
    const torch::Tensor transposed = find(tensors, "transposed");
    const torch::Tensor rows = find(tensors, "rows");
    EXPECT_TRUE(embed.is_same(head)) << "a tied pair loads as one tensor, as in Python";
    EXPECT_FALSE(transposed.is_contiguous());
    EXPECT_EQ(rows.storage_offset(), 10);
    embed.index_put_({3, 1}, 42.0);
    EXPECT_EQ(head[3][1].item<float>(), 42.0f);
    EXPECT_EQ(transposed[1][3].item<float>(), 42.0f);
    EXPECT_EQ(rows[1][1].item<float>(), 42.0f);
}

TEST(PytorchBin, ParameterAndScalarLoadAsPlainTensors)
{
    const NamedTensors tensors = engine::io::loadPytorchBin(kLegacyData / "state_dict.bin");
    EXPECT_EQ(find(tensors, "param").sizes().vec(), (std::vector<int64_t>{2, 2}));
    EXPECT_FALSE(find(tensors, "param").requires_grad());
    EXPECT_EQ(find(tensors, "scalar").dim(), 0);
    EXPECT_EQ(find(tensors, "scalar").item<double>(), 2.5);
}

TEST(PytorchBin, BigEndianFileIsByteSwapped)
{
    const NamedTensors tensors = engine::io::loadPytorchBin(kLegacyData / "bigendian.bin");
    expectMatchesDescription(tensors, readJson(kLegacyData / "bigendian.json"));
}

TEST(PytorchBin, ShardedFolderAndIndexLoad)
{
    const auto expected = readJson(kLegacyData / "sharded.json");
    expectMatchesDescription(engine::io::loadPytorchBin(kLegacyData / "sharded"), expected);
    expectMatchesDescription(
        engine::io::loadPytorchBin(kLegacyData / "sharded" / engine::io::kPytorchBinIndexName), expected);
}

TEST(PytorchBin, IndexEntriesMustStayInsideTheFolder)
{
    TempDir dir("legacy-index");
    const std::filesystem::path shard = kLegacyData / "sharded" / "pytorch_model-00001-of-00002.bin";
    std::filesystem::copy_file(shard, dir / "pytorch_model-00001-of-00002.bin");
    const auto index = dir / engine::io::kPytorchBinIndexName;
    legacy_test::writeBytes(index, R"({"weight_map": {"a.weight": "../../etc/passwd"}})");
    expectError([&] { engine::io::loadPytorchBin(dir.path()); }, ErrorKind::InvalidInput, "leaves the model folder");
    legacy_test::writeBytes(index, R"({"weight_map": {"a.weight": "/etc/passwd"}})");
    expectError([&] { engine::io::loadPytorchBin(index); }, ErrorKind::InvalidInput, "absolute path");
    legacy_test::writeBytes(index, R"({"weight_map": {"a.weight": "missing.bin"}})");
    expectError([&] { engine::io::loadPytorchBin(index); }, ErrorKind::InvalidInput, "does not exist");
    legacy_test::writeBytes(index, R"({"weight_map": {"a.weight": "pytorch_model-00001-of-00002.bin",
                                                      "c.weight": "pytorch_model-00001-of-00002.bin"}})");
    expectError([&] { engine::io::loadPytorchBin(index); }, ErrorKind::InvalidInput, "does not hold it");
    legacy_test::writeBytes(index, R"({"weight_map": )");
    expectError([&] { engine::io::loadPytorchBin(index); }, ErrorKind::InvalidInput, "JSON");
}

TEST(PytorchBin, FolderWithoutWeightsIsRefused)
{
    TempDir dir("legacy-empty-folder");
    expectError([&] { engine::io::loadPytorchBin(dir.path()); }, ErrorKind::InvalidInput, "has neither");
    expectError([&] { engine::io::loadPytorchBin(dir / "pytorch_model.bin"); }, ErrorKind::Io, "not found");
}

TEST(PytorchBin, GoldenMaliciousPicklesAreRefusedWithoutRunningAnything)
{
    // make_legacy_files.py pickled os.system, builtins.eval and subprocess.Popen calls with protocol 2,
    // which writes them as posix.system, __builtin__.eval and commands.Popen (Python 2 names).
    const std::pair<const char *, const char *> cases[] = {
        {"malicious_system.bin", "system'"}, {"malicious_eval.bin", "eval'"}, {"malicious_popen.bin", "Popen'"}};
    for (const auto &[file, global] : cases) {
        SCOPED_TRACE(file);
        expectError([&] { engine::io::loadPytorchBin(kLegacyData / file); }, ErrorKind::InvalidInput,
                    "refuses to load global '");
        expectError([&] { engine::io::loadPytorchBin(kLegacyData / file); }, ErrorKind::InvalidInput, global);
        expectError([&] { engine::io::loadPytorchBin(kLegacyData / file); }, ErrorKind::InvalidInput, file);
    }
}

TEST(PytorchBin, FreshFilesFromPythonTorchLoad)
{
    if (!pythonTorchAvailable())
        GTEST_SKIP() << "/usr/bin/python3 cannot import torch (install python3-torch); the golden-file tests still run";
    TempDir dir("legacy-python");
    const auto marker = dir / "pwned";
    const std::string command = "/usr/bin/python3 '" LEGACY_SCRIPT "' '" + dir.path().string() + "' --marker '" +
                                marker.string() + "'";
    ASSERT_EQ(std::system(command.c_str()), 0) << command;
    expectMatchesDescription(engine::io::loadPytorchBin(dir / "state_dict.bin"), readJson(dir / "state_dict.json"));
    expectMatchesDescription(engine::io::loadPytorchBin(dir / "bigendian.bin"), readJson(dir / "bigendian.json"));
    expectMatchesDescription(engine::io::loadPytorchBin(dir / "sharded"), readJson(dir / "sharded.json"));
    for (const char *file : {"malicious_system.bin", "malicious_eval.bin", "malicious_popen.bin"})
        expectError([&] { engine::io::loadPytorchBin(dir / file); }, ErrorKind::InvalidInput, "refuses to load global");
    EXPECT_FALSE(std::filesystem::exists(marker)) << "a payload ran";
}

TEST(PytorchBin, EveryTruncationFailsCleanly)
{
    // Regression guard for bounds checks: each prefix of a real file is an error, never a crash.
    const std::string bytes = legacy_test::readBytes(kLegacyData / "state_dict.bin");
    TempDir dir("legacy-truncated");
    const auto path = dir / "cut.bin";
    for (size_t length = 0; length < bytes.size(); length += (length < 256 || length + 256 > bytes.size()) ? 1 : 7) {
        legacy_test::writeBytes(path, bytes.substr(0, length));
        try {
            engine::io::loadPytorchBin(path);
            ADD_FAILURE() << "a file cut to " << length << " bytes loaded";
        } catch (const engine::Error &error) {
            ASSERT_NE(std::string(error.what()).find(path.string()), std::string::npos) << error.what();
        }
    }
    legacy_test::writeBytes(path, "");
    expectError([&] { engine::io::loadPytorchBin(path); }, ErrorKind::InvalidInput, "empty file");
    legacy_test::writeBytes(path, bytes.substr(0, bytes.size() - 10));
    expectError([&] { engine::io::loadPytorchBin(path); }, ErrorKind::InvalidInput, "truncated");
}

TEST(PytorchBin, EveryCorruptedByteFailsCleanlyOrLoads)
{
    // Flip each byte of the file (data.pkl included: its CRC catches that) and of the pickle itself
    // with a fixed CRC: the result loads or throws engine::Error, never crashes.
    const std::string bytes = legacy_test::readBytes(kLegacyData / "state_dict.bin");
    TempDir dir("legacy-flipped");
    const auto path = dir / "flipped.bin";
    for (size_t at = 0; at < bytes.size(); at += 3) {
        std::string copy = bytes;
        copy[at] = char(copy[at] ^ 0x5A);
        legacy_test::writeBytes(path, copy);
        try {
            engine::io::loadPytorchBin(path);
        } catch (const engine::Error &) {
        }
    }
    engine::io::PytorchBinArchive original(kLegacyData / "state_dict.bin");
    const std::string pickle = original.readEntry(original.prefix() + "data.pkl");
    std::vector<std::pair<std::string, std::string>> storages;
    for (int key = 0; key < 16; ++key) {
        const std::string name = original.prefix() + "data/" + std::to_string(key);
        if (original.hasEntry(name))
            storages.emplace_back(std::to_string(key), original.readEntry(name));
    }
    for (size_t at = 0; at < pickle.size(); ++at) {
        for (unsigned char value : {0x00, 0xFF, 0x2E}) {
            std::string copy = pickle;
            copy[at] = char(value);
            legacy_test::writeBytes(path, legacy_test::archive(copy, storages));
            try {
                engine::io::loadPytorchBin(path);
            } catch (const engine::Error &) {
            }
        }
    }
}
