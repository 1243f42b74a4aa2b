// The header reader: every rule of the format, one crafted file each, plus the dtype table.

#include "engine/core/error.h"
#include "engine/io/safetensorsfile.h"
#include "engine/io/safetensorsheader.h"
#include "iotestsupport.h"
#include "support/tempdir.h"

#include <gtest/gtest.h>

#include <chrono>
#include <fstream>

#include <fcntl.h>
#include <sys/resource.h>
#include <unistd.h>

using namespace engine::io;
using io_test::safetensorsBytes;
using io_test::zeros;

namespace {

struct BadFile {
    const char *rule;
    std::string bytes;
    const char *needle;
};

std::string tensorJson(const std::string &name, const std::string &dtype, const std::string &shape, std::uint64_t begin,
                       std::uint64_t end)
{
    return "\"" + name + "\":{\"dtype\":\"" + dtype + "\",\"shape\":" + shape + ",\"data_offsets\":["
        + std::to_string(begin) + "," + std::to_string(end) + "]}";
}

std::vector<BadFile> badFiles()
{
    const std::string good = "{" + tensorJson("a", "F32", "[2]", 0, 8) + "}";
    return {
        {"empty file", "", "fewer than the 8-byte header length"},
        {"shorter than the length prefix", std::string("\x05\x00\x00", 3), "fewer than the 8-byte header length"},
        {"header length larger than the file", safetensorsBytes(good, zeros(8), 4096), "runs past the end of the file"},
        {"header length near 2^63", safetensorsBytes(good, zeros(8), (1ULL << 63) - 8), "exceeds the limit of 100000000"},
        {"header length 2^64 - 1", safetensorsBytes(good, zeros(8), ~0ULL), "exceeds the limit"},
        {"invalid JSON", safetensorsBytes("{\"a\":{\"dtype\":", zeros(8)), "header is not valid JSON"},
        {"header is not a JSON object", safetensorsBytes("[1,2,3] ", ""), "header is not a JSON object"},
        {"header is a string", safetensorsBytes("\"abc\"  ", ""), "header is not a JSON object"},
        {"invalid UTF-8 in a name", safetensorsBytes("{\"\xff\xfe\":{}}", ""), "header is not valid JSON"},
        {"overlapping offsets",
         safetensorsBytes("{" + tensorJson("a", "F32", "[2]", 0, 8) + "," + tensorJson("b", "F32", "[2]", 4, 12) + "}", zeros(12)),
         "overlap tensor 'a'"},
        {"gap between tensors",
         safetensorsBytes("{" + tensorJson("a", "F32", "[2]", 0, 8) + "," + tensorJson("b", "F32", "[2]", 12, 20) + "}", zeros(20)),
         "gap of 4 bytes before tensor 'b'"},
        {"first tensor not at 0", safetensorsBytes("{" + tensorJson("a", "F32", "[2]", 8, 16) + "}", zeros(16)),
         "the first tensor must start at 0"},
        {"end before begin", safetensorsBytes("{" + tensorJson("c", "U8", "[1]", 8, 4) + "}", zeros(8)), "end is before its begin"},
        {"unknown dtype", safetensorsBytes("{" + tensorJson("a", "F17", "[2]", 0, 8) + "}", zeros(8)), "unknown dtype \"F17\""},
        {"lowercase dtype", safetensorsBytes("{" + tensorJson("a", "f32", "[2]", 0, 8) + "}", zeros(8)), "unknown dtype \"f32\""},
        {"byte count not matching the shape", safetensorsBytes("{" + tensorJson("a", "F32", "[2,3]", 0, 8) + "}", zeros(8)),
         "needs 24 bytes but data_offsets [0, 8] hold 8"},
        {"truncated file", safetensorsBytes("{" + tensorJson("a", "F32", "[2,3]", 0, 24) + "}", zeros(20)), "file is truncated"},
        {"bytes after the last tensor", safetensorsBytes(good, zeros(12)), "4 bytes at the end of the file belong to no tensor"},
        {"negative shape", safetensorsBytes("{" + tensorJson("a", "F32", "[-2]", 0, 8) + "}", zeros(8)),
         "shape dimension is -2, not a non-negative integer"},
        {"fractional shape", safetensorsBytes("{" + tensorJson("a", "F32", "[2.5]", 0, 8) + "}", zeros(8)), "not a non-negative integer"},
        {"shape above 2^64", safetensorsBytes("{" + tensorJson("a", "F32", "[18446744073709551616]", 0, 8) + "}", zeros(8)),
         "not a non-negative integer below 2^64"},
        {"absurd shape (element count overflows)",
         safetensorsBytes("{" + tensorJson("a", "F32", "[4611686018427387904,4611686018427387904]", 0, 8) + "}", zeros(8)),
         "the element count overflows 64 bits"},
        {"absurd shape (bit count overflows)",
         safetensorsBytes("{" + tensorJson("a", "F32", "[1152921504606846976]", 0, 8) + "}", zeros(8)), "the bit count overflows 64 bits"},
        {"absurd offsets", safetensorsBytes("{" + tensorJson("a", "U8", "[1099511627776]", 0, 1099511627776ULL) + "}", zeros(8)),
         "file is truncated"},
        {"offsets near 2^64", safetensorsBytes("{" + tensorJson("a", "U8", "[1]", 18446744073709551614ULL, 18446744073709551615ULL) + "}", zeros(1)),
         "gap of 18446744073709551614 bytes"},
        {"duplicate names",
         safetensorsBytes("{" + tensorJson("a", "F32", "[1]", 0, 4) + "," + tensorJson("a", "F32", "[1]", 4, 8) + "}", zeros(8)),
         "has the key 'a' twice"},
        {"sub-byte dtype with a partial byte", safetensorsBytes("{" + tensorJson("a", "F4", "[3]", 0, 2) + "}", zeros(2)),
         "not a whole number of bytes"},
        {"tensor entry not an object", safetensorsBytes("{\"a\":[1,2]}", ""), "tensor 'a' is a JSON array"},
        {"missing data_offsets", safetensorsBytes("{\"a\":{\"dtype\":\"F32\",\"shape\":[]}}", ""), "tensor 'a' has no \"data_offsets\""},
        {"data_offsets with three numbers",
         safetensorsBytes("{\"a\":{\"dtype\":\"F32\",\"shape\":[],\"data_offsets\":[0,4,8]}}", zeros(4)), "not an array [begin, end]"},
        {"metadata value not a string", safetensorsBytes("{\"__metadata__\":{\"n\":1}}", ""), "__metadata__ value of 'n' is a number"},
        {"metadata not an object", safetensorsBytes("{\"__metadata__\":[]}", ""), "__metadata__ is not an object"},
    };
}

} // namespace

TEST(SafetensorsHeader, EveryBrokenRuleGivesOneClearErrorNamingTheFile)
{
    testing_support::TempDir dir("io-bad");
    for (const BadFile &bad : badFiles()) {
        SCOPED_TRACE(bad.rule);
        const auto path = dir / "bad.safetensors";
        io_test::writeBytes(path, bad.bytes);
        for (int reader = 0; reader < 2; ++reader) {
            try {
                if (reader == 0)
                    readSafetensorsHeader(path);
                else
                    SafetensorsFile::open(path);
                ADD_FAILURE() << "accepted by reader " << reader;
            } catch (const engine::Error &error) {
                const std::string message = error.what();
                EXPECT_EQ(error.kind(), engine::ErrorKind::InvalidInput) << message;
                EXPECT_NE(message.find(path.string()), std::string::npos) << message;
                EXPECT_NE(message.find(bad.needle), std::string::npos) << message;
                EXPECT_EQ(message.find('\n'), std::string::npos) << message;
            }
        }
    }
}

TEST(SafetensorsHeader, MissingFileIsAnIoError)
{
    testing_support::TempDir dir("io-missing");
    EXPECT_THROW(
        {
            try {
                readSafetensorsHeader(dir / "nope.safetensors");
            } catch (const engine::Error &error) {
                EXPECT_EQ(error.kind(), engine::ErrorKind::Io);
                EXPECT_NE(std::string(error.what()).find("nope.safetensors"), std::string::npos);
                throw;
            }
        },
        engine::Error);
}

TEST(SafetensorsHeader, HeaderAboveTheLimitIsRefusedEvenWhenTheFileIsLargeEnough)
{
    testing_support::TempDir dir("io-limit");
    const auto path = dir / "big.safetensors";
    io_test::writeBytes(path, safetensorsBytes("{}", "", kMaxSafetensorsHeaderBytes + 1));
    std::filesystem::resize_file(path, kMaxSafetensorsHeaderBytes + 64); // sparse: costs no disk
    try {
        readSafetensorsHeader(path);
        FAIL() << "accepted";
    } catch (const engine::Error &error) {
        EXPECT_NE(std::string(error.what()).find("header length 100000001 exceeds the limit"), std::string::npos) << error.what();
    }
}

TEST(SafetensorsHeader, ReportsEveryDtypeOfTheSpecSortedByOffset)
{
    testing_support::TempDir dir("io-dtypes");
    const std::vector<std::string> names = {"BOOL", "F4", "F6_E2M3", "F6_E3M2", "U8", "I8", "F8_E5M2", "F8_E4M3", "F8_E8M0",
                                            "F8_E4M3FNUZ", "F8_E5M2FNUZ", "I16", "U16", "F16", "BF16", "I32", "U32", "F32",
                                            "C64", "F64", "I64", "U64"};
    // Written in reverse offset order: the reader sorts by offset.
    std::string json = "{\"__metadata__\":{\"format\":\"pt\",\"x\":\"\"}";
    std::uint64_t total = 0;
    std::vector<std::uint64_t> begins;
    for (const std::string &name : names) {
        const std::optional<DType> dtype = parseDType(name);
        ASSERT_TRUE(dtype) << name;
        EXPECT_EQ(dtypeName(*dtype), name);
        const std::uint64_t bytes = 4 * dtypeBits(*dtype) / 8; // four elements
        begins.push_back(total);
        total += bytes;
    }
    for (size_t i = names.size(); i-- > 0;)
        json += "," + tensorJson("t" + std::to_string(i), names[i], "[2,2]", begins[i],
                                 begins[i] + 4 * dtypeBits(*parseDType(names[i])) / 8);
    json += "}";
    const auto path = dir / "all.safetensors";
    io_test::writeBytes(path, safetensorsBytes(json, zeros(total)));
    const SafetensorsHeader header = readSafetensorsHeader(path);
    ASSERT_EQ(header.tensors.size(), names.size());
    for (size_t i = 0; i < names.size(); ++i) {
        EXPECT_EQ(header.tensors[i].name, "t" + std::to_string(i));
        EXPECT_EQ(dtypeName(header.tensors[i].dtype), names[i]);
        EXPECT_EQ(header.tensors[i].shape, (std::vector<std::uint64_t>{2, 2}));
        EXPECT_EQ(header.tensors[i].begin, begins[i]);
    }
    EXPECT_EQ(header.metadata.at("format"), "pt");
    EXPECT_EQ(header.metadata.at("x"), "");
    EXPECT_EQ(header.headerSize, json.size());
    EXPECT_EQ(header.dataOffset, 8 + json.size());
    EXPECT_EQ(header.dataSize(), total);
    EXPECT_EQ(header.find("t3")->dtype, DType::F6E3M2);
    EXPECT_EQ(header.find("missing"), nullptr);
    EXPECT_FALSE(parseDType("F128"));
}

TEST(SafetensorsHeader, AcceptsEmptyScalarAndZeroSizeTensors)
{
    testing_support::TempDir dir("io-edge");
    const auto empty = dir / "empty.safetensors";
    io_test::writeBytes(empty, safetensorsBytes("{}      ", ""));
    EXPECT_TRUE(readSafetensorsHeader(empty).tensors.empty());

    const auto edge = dir / "edge.safetensors";
    io_test::writeBytes(edge, safetensorsBytes("{" + tensorJson("none", "F32", "[0,3]", 0, 0) + ","
                                                   + tensorJson("scalar", "I64", "[]", 0, 8) + "}",
                                               zeros(8)));
    const SafetensorsHeader header = readSafetensorsHeader(edge);
    ASSERT_EQ(header.tensors.size(), 2u);
    EXPECT_EQ(header.find("scalar")->numel(), 1u);
    EXPECT_EQ(header.find("none")->numel(), 0u);
}

namespace {

/// Bytes this process has read through read(2) and friends, from /proc/self/io (rchar).
int64_t bytesReadSoFar()
{
    std::ifstream io("/proc/self/io");
    std::string key;
    int64_t value = 0;
    while (io >> key >> value) {
        if (key == "rchar:")
            return value;
    }
    return -1;
}

/// Page faults of this process so far (a mapped page touched for the first time is one).
int64_t pageFaultsSoFar()
{
    rusage usage{};
    ::getrusage(RUSAGE_SELF, &usage);
    return usage.ru_minflt + usage.ru_majflt;
}

} // namespace

// 8 GB of (sparse) tensor data: the header read and the mapping must read none of it. Counted, not timed:
// read() would add 8 GB to the bytes read, touching the mapping 2 million page faults; the header is a
// few hundred bytes and a page or two.
TEST(SafetensorsHeader, HeaderOnlyReadTouchesNoTensorData)
{
    testing_support::TempDir dir("io-sparse");
    const auto path = dir / "huge.safetensors";
    const std::uint64_t bytes = 8ULL << 30;
    const std::string json = "{" + tensorJson("w", "U8", "[" + std::to_string(bytes) + "]", 0, bytes) + "}";
    io_test::writeBytes(path, safetensorsBytes(json, ""));
    std::filesystem::resize_file(path, 8 + json.size() + bytes);
    const int64_t readBefore = bytesReadSoFar();
    ASSERT_GE(readBefore, 0) << "no rchar in /proc/self/io";
    const int64_t faultsBefore = pageFaultsSoFar();
    const SafetensorsHeader header = readSafetensorsHeader(path);
    const SafetensorsFile file = SafetensorsFile::open(path); // maps, reads only the header pages
    const int64_t read = bytesReadSoFar() - readBefore;
    const int64_t faults = pageFaultsSoFar() - faultsBefore;
    EXPECT_EQ(header.tensors.at(0).byteSize(), bytes);
    EXPECT_EQ(file.header().dataSize(), bytes);
    EXPECT_LT(read, 1 << 20) << "bytes read for a header of " << json.size();
    EXPECT_LT(faults, 1 << 14) << "page faults (touching the data would make " << (bytes >> 12) << ")";
}
