#pragma once
// Test helpers for the legacy-checkpoint tests: a minimal stored-zip writer and pickle snippets, to
// craft torch.save-like files byte by byte (valid, malformed and malicious); the golden files of
// make_legacy_files.py.

#include <array>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace legacy_test {

/// One zip entry; `method` 8 (deflate) marks it compressed without compressing (to test refusal).
struct ZipEntry {
    std::string name;
    std::string data;
    uint16_t method = 0;
};

inline uint32_t crc32(const std::string &data)
{
    uint32_t c = 0xFFFFFFFFu;
    for (unsigned char byte : data) {
        c ^= byte;
        for (int k = 0; k < 8; ++k)
            c = (c & 1) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
    }
    return c ^ 0xFFFFFFFFu;
}

inline void put16(std::string &out, uint32_t v)
{
    out += char(v & 0xFF);
    out += char((v >> 8) & 0xFF);
}
inline void put32(std::string &out, uint32_t v)
{
    put16(out, v & 0xFFFF);
    put16(out, v >> 16);
}

inline void put64(std::string &out, uint64_t v)
{
    put32(out, uint32_t(v & 0xFFFFFFFF));
    put32(out, uint32_t(v >> 32));
}

/// A zip of stored entries, in the given order. With `zip64` every size and offset in the central
/// directory is 0xFFFFFFFF with the real value in a zip64 extra field, and the end records are zip64
/// (as written for files over 4 GiB).
inline std::string makeZip(const std::vector<ZipEntry> &entries, bool zip64 = false)
{
    std::string out, directory;
    for (const ZipEntry &entry : entries) {
        const uint32_t offset = uint32_t(out.size());
        const uint32_t crc = crc32(entry.data);
        put32(out, 0x04034b50);
        put16(out, 20);
        put16(out, 0);
        put16(out, entry.method);
        put32(out, 0);
        put32(out, crc);
        put32(out, uint32_t(entry.data.size()));
        put32(out, uint32_t(entry.data.size()));
        put16(out, uint32_t(entry.name.size()));
        put16(out, 0);
        out += entry.name;
        out += entry.data;

        put32(directory, 0x02014b50);
        put16(directory, 20);
        put16(directory, 20);
        put16(directory, 0);
        put16(directory, entry.method);
        put32(directory, 0);
        put32(directory, crc);
        put32(directory, zip64 ? 0xFFFFFFFF : uint32_t(entry.data.size()));
        put32(directory, zip64 ? 0xFFFFFFFF : uint32_t(entry.data.size()));
        put16(directory, uint32_t(entry.name.size()));
        put16(directory, zip64 ? 28 : 0);
        put16(directory, 0);
        put16(directory, 0);
        put16(directory, 0);
        put32(directory, 0);
        put32(directory, zip64 ? 0xFFFFFFFF : offset);
        directory += entry.name;
        if (zip64) {
            put16(directory, 0x0001);
            put16(directory, 24);
            put64(directory, entry.data.size());
            put64(directory, entry.data.size());
            put64(directory, offset);
        }
    }
    const uint32_t directoryOffset = uint32_t(out.size());
    out += directory;
    if (zip64) {
        const uint64_t recordOffset = out.size();
        put32(out, 0x06064b50);
        put64(out, 44);
        put16(out, 45);
        put16(out, 45);
        put32(out, 0);
        put32(out, 0);
        put64(out, entries.size());
        put64(out, entries.size());
        put64(out, directory.size());
        put64(out, directoryOffset);
        put32(out, 0x07064b50);
        put32(out, 0);
        put64(out, recordOffset);
        put32(out, 1);
    }
    put32(out, 0x06054b50);
    put16(out, 0);
    put16(out, 0);
    put16(out, zip64 ? 0xFFFF : uint32_t(entries.size()));
    put16(out, zip64 ? 0xFFFF : uint32_t(entries.size()));
    put32(out, zip64 ? 0xFFFFFFFF : uint32_t(directory.size()));
    put32(out, zip64 ? 0xFFFFFFFF : directoryOffset);
    put16(out, 0);
    return out;
}

/// BINUNICODE
inline std::string str(const std::string &text)
{
    std::string out = "X";
    put32(out, uint32_t(text.size()));
    return out + text;
}
/// BININT1
inline std::string int1(int v) { return std::string("K") + char(v); }
/// A tuple of small ints (MARK ... TUPLE).
inline std::string ints(const std::vector<int> &values)
{
    std::string out = "(";
    for (int v : values)
        out += int1(v);
    return out + "t";
}
inline const std::string kOrderedDict = "ccollections\nOrderedDict\n)R";

/// `_rebuild_tensor_v2(storage(key, type, numel), offset, size, stride, False, OrderedDict())`.
inline std::string rebuildTensor(const std::string &key, const std::string &storageType, int numel, int offset,
                                 const std::vector<int> &size, const std::vector<int> &stride)
{
    return "ctorch._utils\n_rebuild_tensor_v2\n((" + str("storage") + "ctorch\n" + storageType + "\n" + str(key) +
           str("cpu") + int1(numel) + "tQ" + int1(offset) + ints(size) + ints(stride) + "\x89" + kOrderedDict + "tR";
}

/// A state-dict pickle: OrderedDict with the given (name, value pickle) items.
inline std::string stateDictPickle(const std::vector<std::pair<std::string, std::string>> &items)
{
    std::string out = "\x80\x02" + kOrderedDict + "(";
    for (const auto &[name, value] : items)
        out += str(name) + value;
    return out + "u.";
}

/// `count` little-endian float32 values 0, 1, 2, ...
inline std::string floats(int count)
{
    std::string out;
    for (int i = 0; i < count; ++i) {
        float v = float(i);
        out.append(reinterpret_cast<const char *>(&v), sizeof v);
    }
    return out;
}

/// A torch.save-like archive "archive/" with data.pkl, version and the given storages.
inline std::string archive(const std::string &pickle, const std::vector<std::pair<std::string, std::string>> &storages)
{
    std::vector<ZipEntry> entries{{"archive/data.pkl", pickle}};
    for (const auto &[key, bytes] : storages)
        entries.push_back({"archive/data/" + key, bytes});
    entries.push_back({"archive/version", "3\n"});
    return makeZip(entries);
}

/// The golden files make_legacy_files.py wrote (tests/data/legacy).
inline const std::filesystem::path kLegacyData = std::filesystem::path(TUNEBENCH_TEST_DATA) / "legacy";

/// A JSON file from make_legacy_files.py, its keys in file order (a state dict's description lists the
/// tensors in save order).
inline nlohmann::ordered_json readJson(const std::filesystem::path &path)
{
    std::ifstream in(path);
    return nlohmann::ordered_json::parse(in);
}

inline void writeBytes(const std::filesystem::path &path, const std::string &bytes)
{
    std::ofstream(path, std::ios::binary | std::ios::trunc).write(bytes.data(), std::streamsize(bytes.size()));
}

inline std::string readBytes(const std::filesystem::path &path)
{
    std::ifstream in(path, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

} // namespace legacy_test
