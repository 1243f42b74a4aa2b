// The restricted unpickler and the zip reader on crafted input: every bad file is one clear
// engine::Error naming the file, and nothing outside the state-dict allowlist is ever resolved.

#include "engine/io/pytorchbin.h"

#include "engine/core/error.h"
#include "engine/io/legacytestutil.h"
#include "support/expecterror.h"
#include "support/tempdir.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cstring>

using engine::ErrorKind;
using legacy_test::archive;
using legacy_test::floats;
using legacy_test::int1;
using legacy_test::kOrderedDict;
using legacy_test::rebuildTensor;
using legacy_test::stateDictPickle;
using legacy_test::str;
using testing_support::expectError;
using testing_support::TempDir;
using namespace std::string_literals;

namespace {

class Unpickler : public ::testing::Test {
protected:
    Unpickler() : m_dir("legacy-crafted") {}

    /// Writes `bytes` as pytorch_model.bin and loads it.
    engine::io::NamedTensors load(const std::string &bytes)
    {
        legacy_test::writeBytes(path(), bytes);
        return engine::io::loadPytorchBin(path());
    }
    /// Expects loading `bytes` to fail with an InvalidInput error mentioning the file and `needle`.
    void expectRefused(const std::string &bytes, const std::string &needle)
    {
        expectError([&] { load(bytes); }, ErrorKind::InvalidInput, needle);
        expectError([&] { load(bytes); }, ErrorKind::InvalidInput, path().string());
    }
    std::filesystem::path path() const { return m_dir / "pytorch_model.bin"; }

    TempDir m_dir;
};

} // namespace

TEST_F(Unpickler, CraftedStateDictLoads)
{
    const std::string pickle = stateDictPickle({{"w", rebuildTensor("0", "FloatStorage", 6, 0, {2, 3}, {3, 1})},
                                                {"tail", rebuildTensor("0", "FloatStorage", 6, 4, {2}, {1})}});
    const auto tensors = load(archive(pickle, {{"0", floats(6)}}));
    ASSERT_EQ(tensors.size(), 2u);
    EXPECT_EQ(tensors[0].first, "w");
    EXPECT_TRUE(torch::equal(tensors[0].second, torch::arange(6, torch::kFloat).reshape({2, 3})));
    EXPECT_TRUE(torch::equal(tensors[1].second, torch::tensor({4.0f, 5.0f})));
    EXPECT_TRUE(tensors[0].second.storage().is_alias_of(tensors[1].second.storage()));
}

TEST_F(Unpickler, DangerousGlobalsAreRefusedByName)
{
    const std::pair<std::string, std::string> globals[] = {
        {"os", "system"}, {"posix", "system"}, {"builtins", "eval"}, {"builtins", "exec"},
        {"subprocess", "Popen"}, {"subprocess", "check_output"}, {"torch", "load"}, {"collections", "Counter"}};
    for (const auto &[module, name] : globals) {
        SCOPED_TRACE(module + "." + name);
        const std::string pickle = "\x80\x02" "c" + module + "\n" + name + "\n" + str("touch /tmp/x") + "\x85R.";
        expectRefused(archive(pickle, {}), "refuses to load global '" + module + "." + name +
                                               "': only state-dict contents are allowed");
        // Inside an otherwise valid state dict, and through STACK_GLOBAL (protocol 4).
        const std::string nested = stateDictPickle(
            {{"w", rebuildTensor("0", "FloatStorage", 2, 0, {2}, {1})},
             {"evil", "c" + module + "\n" + name + "\n" + str("id") + "\x85R"}});
        expectRefused(archive(nested, {{"0", floats(2)}}), "'" + module + "." + name + "'");
        const std::string stacked = "\x80\x04" + str(module) + str(name) + "\x93" + str("id") + "\x85R.";
        expectRefused(archive(stacked, {}), "refuses to load global '" + module + "." + name + "'");
    }
}

TEST_F(Unpickler, InstObjAndNewObjAreRefused)
{
    expectRefused(archive("\x80\x02(" + str("id") + "ios\nsystem\n.", {}), "refuses to load global 'os.system'");
    expectRefused(archive("\x80\x02(ccollections\nOrderedDict\n" + str("x") + "o.", {}), "refuses opcode OBJ");
    expectRefused(archive("\x80\x02(icollections\nOrderedDict\n.", {}), "refuses opcode INST");
    expectRefused(archive("\x80\x02" "ccollections\nOrderedDict\n)\x81.", {}), "refuses opcode NEWOBJ");
}

TEST_F(Unpickler, AllowedGlobalsCannotBeCalledOutsideTheirRole)
{
    // A storage type is only a tag inside a persistent id, never a callable.
    expectRefused(archive("\x80\x02" "ctorch\nFloatStorage\n)R.", {}), "refuses to call 'torch.FloatStorage'");
    // REDUCE of something that is not a global.
    expectRefused(archive("\x80\x02" + str("os.system") + ")R.", {}), "refuses REDUCE of a str");
    // OrderedDict with arguments would be a generic constructor.
    expectRefused(archive("\x80\x02" "ccollections\nOrderedDict\n" "]\x85R.", {}), "OrderedDict(...) with arguments");
    // BUILD that would set state on something other than a dict.
    expectRefused(archive(stateDictPickle({{"w", rebuildTensor("0", "FloatStorage", 2, 0, {2}, {1}) + "}b"}}),
                          {{"0", floats(2)}}),
                  "refuses BUILD of a tensor");
}

TEST_F(Unpickler, MissingStorageIsNamed)
{
    const std::string pickle = stateDictPickle({{"w", rebuildTensor("7", "FloatStorage", 4, 0, {4}, {1})}});
    expectRefused(archive(pickle, {{"0", floats(4)}}), "storage '7' is missing from the archive");
}

TEST_F(Unpickler, StorageSizeMustMatchItsEntry)
{
    const std::string pickle = stateDictPickle({{"w", rebuildTensor("0", "FloatStorage", 4, 0, {4}, {1})}});
    expectRefused(archive(pickle, {{"0", floats(3)}}), "storage '0' holds 12 bytes");
}

TEST_F(Unpickler, ViewsOutsideTheirStorageAreRefused)
{
    const auto refuse = [&](int offset, const std::vector<int> &size, const std::vector<int> &stride) {
        const std::string pickle = stateDictPickle({{"w", rebuildTensor("0", "FloatStorage", 4, offset, size, stride)}});
        expectRefused(archive(pickle, {{"0", floats(4)}}), "lies outside the storage of 4 elements");
    };
    refuse(0, {5}, {1});
    refuse(2, {3}, {1});
    refuse(0, {2, 2}, {3, 1});
    refuse(5, {0}, {1});
    // Negative offsets, sizes and strides (BININT with the sign bit).
    const std::string negative = stateDictPickle(
        {{"w", "ctorch._utils\n_rebuild_tensor_v2\n((" + str("storage") + "ctorch\nFloatStorage\n" + str("0") +
                   str("cpu") + int1(4) + "tQJ\xff\xff\xff\xff(K\x02t(K\x01t\x89" + kOrderedDict + "tR"}});
    expectRefused(archive(negative, {{"0", floats(4)}}), "negative storage offset");
    const std::string mismatch = stateDictPickle({{"w", rebuildTensor("0", "FloatStorage", 4, 0, {2, 2}, {1})}});
    expectRefused(archive(mismatch, {{"0", floats(4)}}), "2 sizes but 1 strides");
    // Empty and stride-0 views inside the storage are fine.
    const std::string fine = stateDictPickle({{"empty", rebuildTensor("0", "FloatStorage", 4, 4, {0}, {1})},
                                              {"expanded", rebuildTensor("0", "FloatStorage", 4, 3, {3, 2}, {0, 0})}});
    const auto tensors = load(archive(fine, {{"0", floats(4)}}));
    EXPECT_EQ(tensors[0].second.numel(), 0);
    EXPECT_TRUE(torch::equal(tensors[1].second, torch::full({3, 2}, 3.0f)));
}

TEST_F(Unpickler, CorruptPicklesAreOneClearError)
{
    expectRefused(archive("", {}), "truncated");
    expectRefused(archive("\x80\x02", {}), "truncated");
    expectRefused(archive("\x80\x02}X\xff\xff\xff\x7f", {}), "runs past the end");
    expectRefused(archive("\x80\x02h\x05.", {}), "memo entry 5 was never stored");
    expectRefused(archive("\x80\x02.", {}), "stack underflow");
    expectRefused(archive("\x80\x02t.", {}), "no MARK");
    expectRefused(archive("\x80\x02\xfe.", {}), "unknown or unsupported opcode 0xfe");
    expectRefused(archive("\x80\x09.", {}), "unknown pickle protocol 9");
    expectRefused(archive("\x80\x02(}.", {}), "STOP inside a MARK");
    expectRefused(archive("\x80\x02" "cos\nsys", {}), "unterminated line");
    expectRefused(archive("\x80\x02}" + str("a") + "u.", {}), "no MARK");
    expectRefused(archive("\x80\x02" "I1\n.", {}), "refuses protocol-0/1 opcode 'I'");
    expectRefused(archive("\x80\x02]" + str("a") + str("b") + "s.", {}), "SETITEM on a list");
}

TEST_F(Unpickler, NonStateDictContentsAreRefused)
{
    expectRefused(archive("\x80\x02]" ".", {}), "holds a list, not a state dict");
    expectRefused(archive(stateDictPickle({{"epoch", int1(3)}}), {}), "entry 'epoch' is a int, not a tensor");
    expectRefused(archive("\x80\x02}(K\x01K\x02u.", {}), "key of type int");
    // A persistent id that is not a torch storage.
    expectRefused(archive("\x80\x02" + str("module") + "Q.", {}), "persistent id");
}

TEST_F(Unpickler, DeepNestingAndCyclesAreRefused)
{
    std::string deep = "\x80\x02]";
    for (int i = 0; i < 100; ++i)
        deep += "\x85";
    expectRefused(archive(deep + ".", {}), "nested deeper than 64");
    // A list appended into itself would make a cycle.
    expectRefused(archive("\x80\x02]q\x00h\x00" "a."s, {}), "a container inside itself");
    expectRefused(archive("\x80\x02}q\x00h\x00"s + str("k") + "s.", {}), "a container inside itself");
    // A long chain built by mutation: each list is frozen once it is inside another.
    std::string chain = "\x80\x02";
    for (int i = 0; i < 3; ++i)
        chain += "]q" + std::string(1, char(i));
    chain += "0";                        // stack: L0 L1
    chain += "a";                        // L0.append(L1)
    chain += "h\x01h\x02" "a";           // L1.append(L2): L1 is inside L0, refused
    expectRefused(archive(chain + ".", {}), "already inside another one");
}

TEST_F(Unpickler, ZipContainerProblemsAreNamed)
{
    const std::string pickle = stateDictPickle({{"w", rebuildTensor("0", "FloatStorage", 2, 0, {2}, {1})}});
    expectRefused(legacy_test::makeZip({{"archive/data.pkl", pickle, 8}, {"archive/data/0", floats(2)}}),
                  "is compressed (method 8)");
    expectRefused(legacy_test::makeZip({{"data.pkl", pickle}}), "not inside one folder");
    expectRefused(legacy_test::makeZip({{"archive/other.pkl", pickle}}), "no 'archive/data.pkl' entry");
    expectRefused(legacy_test::makeZip({{"archive/data.pkl", pickle}, {"archive/data.pkl", pickle}}), "appears twice");
    expectRefused("\x80\x02}q\x00."s, "PyTorch < 1.6");
    expectRefused("hello, not a zip", "not a torch.save file");
    expectRefused("", "empty file");
    // A central directory that points past the end of the file.
    std::string bytes = archive(pickle, {{"0", floats(2)}});
    bytes[bytes.size() - 3] = char(0x7F);
    expectRefused(bytes, "central directory");
    // A local header offset past the central directory.
    std::string shifted = archive(pickle, {{"0", floats(2)}});
    const size_t directory = shifted.find(std::string("PK\x01\x02", 4));
    shifted[directory + 45] = char(0x7F);
    expectRefused(shifted, "lies outside the file");
}

TEST_F(Unpickler, OtherDtypesAndByteOrder)
{
    std::string longs(3 * 8, '\0');
    const int64_t values[] = {-1, 1ll << 40, 7};
    std::memcpy(longs.data(), values, sizeof values);
    const std::string pickle = stateDictPickle({{"ids", rebuildTensor("0", "LongStorage", 3, 0, {3}, {1})},
                                                {"flags", rebuildTensor("1", "BoolStorage", 2, 0, {2}, {1})},
                                                {"bytes", rebuildTensor("2", "ByteStorage", 2, 0, {2}, {1})}});
    const auto tensors = load(archive(pickle, {{"0", longs}, {"1", std::string("\x01\x00", 2)}, {"2", "\xff\x01"}}));
    EXPECT_TRUE(torch::equal(tensors[0].second, torch::tensor(std::vector<int64_t>{-1, int64_t(1) << 40, 7})));
    EXPECT_TRUE(torch::equal(tensors[1].second, torch::tensor({true, false})));
    EXPECT_TRUE(torch::equal(tensors[2].second, torch::tensor({255, 1}, torch::kUInt8)));

    std::vector<legacy_test::ZipEntry> entries{{"archive/data.pkl", pickle}, {"archive/byteorder", "middle"}};
    expectRefused(legacy_test::makeZip(entries), "unknown byte order 'middle'");
}

TEST_F(Unpickler, Zip64RecordsAndExtraFieldsAreRead)
{
    const std::string pickle = stateDictPickle({{"w", rebuildTensor("0", "FloatStorage", 3, 0, {3}, {1})}});
    const std::vector<legacy_test::ZipEntry> entries{{"archive/data.pkl", pickle}, {"archive/data/0", floats(3)}};
    const auto tensors = load(legacy_test::makeZip(entries, /*zip64=*/true));
    ASSERT_EQ(tensors.size(), 1u);
    EXPECT_TRUE(torch::equal(tensors[0].second, torch::tensor({0.0f, 1.0f, 2.0f})));
    // Zip64 sizes in the classic record without the zip64 records are refused.
    std::string bytes = legacy_test::makeZip(entries, true);
    const size_t locator = bytes.rfind(std::string("PK\x06\x07", 4));
    bytes[locator + 2] = 'X';
    expectRefused(bytes, "zip64 sizes without a zip64 end record");
}
