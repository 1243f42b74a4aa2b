#include "engine/io/pytorchbinarchive.h"

#include "engine/core/error.h"

#include <array>
#include <cstring>
#include <limits>
#include <vector>

namespace engine::io {

namespace {

constexpr uint32_t kLocalHeaderSignature = 0x04034b50;
constexpr uint32_t kCentralHeaderSignature = 0x02014b50;
constexpr uint32_t kEndSignature = 0x06054b50;
constexpr uint32_t kZip64EndSignature = 0x06064b50;
constexpr uint32_t kZip64LocatorSignature = 0x07064b50;
constexpr size_t kEndRecordSize = 22;
constexpr size_t kZip64LocatorSize = 20;
constexpr size_t kZip64EndRecordSize = 56;
constexpr size_t kCentralHeaderSize = 46;
constexpr size_t kLocalHeaderSize = 30;

uint16_t u16(const unsigned char *p) { return uint16_t(p[0] | (p[1] << 8)); }
uint32_t u32(const unsigned char *p) { return uint32_t(p[0]) | (uint32_t(p[1]) << 8) | (uint32_t(p[2]) << 16) | (uint32_t(p[3]) << 24); }
uint64_t u64(const unsigned char *p) { return uint64_t(u32(p)) | (uint64_t(u32(p + 4)) << 32); }

uint32_t crc32(const void *data, size_t size)
{
    static const std::array<uint32_t, 256> table = [] {
        std::array<uint32_t, 256> t{};
        for (uint32_t i = 0; i < 256; ++i) {
            uint32_t c = i;
            for (int k = 0; k < 8; ++k)
                c = (c & 1) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
            t[i] = c;
        }
        return t;
    }();
    uint32_t c = 0xFFFFFFFFu;
    const auto *p = static_cast<const unsigned char *>(data);
    for (size_t i = 0; i < size; ++i)
        c = table[(c ^ p[i]) & 0xFF] ^ (c >> 8);
    return c ^ 0xFFFFFFFFu;
}

} // namespace

PytorchBinArchive::PytorchBinArchive(const std::filesystem::path &path) : m_path(path)
{
    std::error_code ec;
    if (!std::filesystem::exists(path, ec))
        throw ioError(path.string() + ": file not found");
    if (std::filesystem::is_directory(path, ec))
        throw invalidInput(path.string() + ": is a folder, not a torch.save file");
    m_file.open(path, std::ios::binary);
    if (!m_file)
        throw ioError(path.string() + ": cannot open for reading");
    m_fileSize = std::filesystem::file_size(path, ec);
    if (ec)
        throw ioError(path.string() + ": cannot read its size: " + ec.message());
    if (m_fileSize == 0)
        throw invalidInput(path.string() + ": empty file, not a torch.save archive");

    unsigned char magic[4] = {0, 0, 0, 0};
    readAt(0, magic, std::min<uint64_t>(4, m_fileSize), "the file header");
    if (m_fileSize < 4 || u32(magic) != kLocalHeaderSignature) {
        if (magic[0] == 0x80)
            throw invalidInput(path.string() + ": is a bare pickle or an old (PyTorch < 1.6) torch.save file, not a zip "
                               "archive; only the zip format is supported (re-save it with a newer PyTorch)");
        throw invalidInput(path.string() + ": not a torch.save file (no zip archive header)");
    }
    if (m_fileSize < kEndRecordSize + kLocalHeaderSize)
        throw invalidInput(describe() + ": truncated zip archive (" + std::to_string(m_fileSize) + " bytes)");

    // End of central directory: the last 22 bytes, or earlier when the archive has a comment.
    const uint64_t tailSize = std::min<uint64_t>(m_fileSize, kEndRecordSize + 0xFFFF);
    std::vector<unsigned char> tail(tailSize);
    readAt(m_fileSize - tailSize, tail.data(), tailSize, "the end of the archive");
    int64_t endAt = -1;
    for (int64_t i = int64_t(tailSize) - int64_t(kEndRecordSize); i >= 0; --i) {
        const unsigned char *p = tail.data() + i;
        if (u32(p) == kEndSignature && uint64_t(i) + kEndRecordSize + u16(p + 20) <= tailSize) {
            endAt = i;
            break;
        }
    }
    if (endAt < 0)
        throw invalidInput(describe() + ": truncated or corrupt zip archive: no end-of-central-directory record");
    const uint64_t endOffset = m_fileSize - tailSize + uint64_t(endAt);
    const unsigned char *end = tail.data() + endAt;
    if (u16(end + 4) != 0 && u16(end + 4) != 0xFFFF)
        throw invalidInput(describe() + ": multi-disk zip archives are not supported");
    uint64_t entryCount = u16(end + 10);
    uint64_t directorySize = u32(end + 12);
    uint64_t directoryOffset = u32(end + 16);
    uint64_t directoryLimit = endOffset;

    // Zip64 (PyTorch always writes it): a locator right before the classic record points at the real one.
    if (endOffset >= kZip64LocatorSize) {
        unsigned char locator[kZip64LocatorSize];
        readAt(endOffset - kZip64LocatorSize, locator, kZip64LocatorSize, "the zip64 locator");
        if (u32(locator) == kZip64LocatorSignature) {
            const uint64_t recordOffset = u64(locator + 8);
            if (recordOffset > endOffset - kZip64LocatorSize
                || endOffset - kZip64LocatorSize - recordOffset < kZip64EndRecordSize)
                throw invalidInput(describe() + ": corrupt zip archive: zip64 end record outside the file");
            unsigned char record[kZip64EndRecordSize];
            readAt(recordOffset, record, kZip64EndRecordSize, "the zip64 end record");
            if (u32(record) != kZip64EndSignature)
                throw invalidInput(describe() + ": corrupt zip archive: bad zip64 end record signature");
            entryCount = u64(record + 32);
            directorySize = u64(record + 40);
            directoryOffset = u64(record + 48);
            directoryLimit = recordOffset;
        } else if (entryCount == 0xFFFF || directorySize == 0xFFFFFFFF || directoryOffset == 0xFFFFFFFF) {
            throw invalidInput(describe() + ": corrupt zip archive: zip64 sizes without a zip64 end record");
        }
    }
    if (directoryOffset > directoryLimit || directorySize > directoryLimit - directoryOffset)
        throw invalidInput(describe() + ": truncated or corrupt zip archive: central directory at " +
                           std::to_string(directoryOffset) + " (+" + std::to_string(directorySize) +
                           " bytes) lies outside the file");
    if (entryCount > directorySize / kCentralHeaderSize)
        throw invalidInput(describe() + ": corrupt zip archive: " + std::to_string(entryCount) +
                           " entries cannot fit in a central directory of " + std::to_string(directorySize) + " bytes");

    std::vector<unsigned char> directory(directorySize);
    readAt(directoryOffset, directory.data(), directorySize, "the central directory");
    std::string firstName;
    size_t at = 0;
    for (uint64_t index = 0; index < entryCount; ++index) {
        if (directorySize - at < kCentralHeaderSize || u32(directory.data() + at) != kCentralHeaderSignature)
            throw invalidInput(describe() + ": corrupt zip archive: bad central directory entry " + std::to_string(index));
        const unsigned char *h = directory.data() + at;
        const uint16_t flags = u16(h + 8);
        const uint16_t method = u16(h + 10);
        const uint32_t crc = u32(h + 16);
        uint64_t compressedSize = u32(h + 20);
        uint64_t size = u32(h + 24);
        const size_t nameLength = u16(h + 28), extraLength = u16(h + 30), commentLength = u16(h + 32);
        uint64_t localOffset = u32(h + 42);
        if (directorySize - at - kCentralHeaderSize < nameLength + extraLength + commentLength)
            throw invalidInput(describe() + ": corrupt zip archive: central directory entry " + std::to_string(index) +
                               " runs past the directory");
        const std::string name(reinterpret_cast<const char *>(h + kCentralHeaderSize), nameLength);
        // Zip64 extra field: the 64-bit values of whichever 32-bit fields are 0xFFFFFFFF, in this order.
        const unsigned char *extra = h + kCentralHeaderSize + nameLength;
        for (size_t e = 0; e + 4 <= extraLength;) {
            const uint16_t id = u16(extra + e), length = u16(extra + e + 2);
            if (e + 4 + length > extraLength)
                throw invalidInput(describe() + ": corrupt zip archive: bad extra field of '" + name + "'");
            if (id == 0x0001) {
                size_t field = e + 4;
                auto take = [&](uint64_t &value) {
                    if (value != 0xFFFFFFFF)
                        return;
                    if (field + 8 > e + 4 + length)
                        throw invalidInput(describe() + ": corrupt zip archive: short zip64 field of '" + name + "'");
                    value = u64(extra + field);
                    field += 8;
                };
                take(size);
                take(compressedSize);
                take(localOffset);
            }
            e += 4 + length;
        }
        at += kCentralHeaderSize + nameLength + extraLength + commentLength;

        if (flags & 0x1)
            throw invalidInput(describe() + ": entry '" + name + "' is encrypted");
        if (method != 0)
            throw invalidInput(describe() + ": entry '" + name + "' is compressed (method " + std::to_string(method) +
                               "); torch.save writes stored entries only");
        if (compressedSize != size)
            throw invalidInput(describe() + ": corrupt zip archive: stored entry '" + name + "' has two sizes");
        if (localOffset > directoryOffset || directoryOffset - localOffset < kLocalHeaderSize)
            throw invalidInput(describe() + ": truncated or corrupt zip archive: entry '" + name + "' lies outside the file");
        unsigned char local[kLocalHeaderSize];
        readAt(localOffset, local, kLocalHeaderSize, "a local header");
        if (u32(local) != kLocalHeaderSignature)
            throw invalidInput(describe() + ": corrupt zip archive: bad local header of '" + name + "'");
        const uint64_t dataOffset = localOffset + kLocalHeaderSize + u16(local + 26) + u16(local + 28);
        if (dataOffset > directoryOffset || size > directoryOffset - dataOffset)
            throw invalidInput(describe() + ": truncated or corrupt zip archive: entry '" + name + "' (" +
                               std::to_string(size) + " bytes) runs past the end of the data");
        if (!m_entries.emplace(name, Entry{dataOffset, size, crc}).second)
            throw invalidInput(describe() + ": corrupt zip archive: entry '" + name + "' appears twice");
        if (index == 0)
            firstName = name;
    }

    // PyTorch's reader takes the archive folder from the first entry's name.
    const size_t slash = firstName.find('/');
    if (slash == std::string::npos || slash == 0)
        throw invalidInput(describe() + ": not a torch.save archive (its entries are not inside one folder)");
    m_prefix = firstName.substr(0, slash + 1);
    if (!hasEntry(m_prefix + "data.pkl"))
        throw invalidInput(describe() + ": not a torch.save archive (no '" + m_prefix + "data.pkl' entry)");
}

bool PytorchBinArchive::hasEntry(const std::string &name) const { return m_entries.count(name) != 0; }

uint64_t PytorchBinArchive::entrySize(const std::string &name) const { return entry(name).size; }

const PytorchBinArchive::Entry &PytorchBinArchive::entry(const std::string &name) const
{
    const auto it = m_entries.find(name);
    if (it == m_entries.end())
        throw invalidInput(describe() + ": the archive has no entry '" + name + "'");
    return it->second;
}

std::string PytorchBinArchive::readEntry(const std::string &name, uint64_t maxBytes)
{
    const Entry &found = entry(name);
    if (found.size > maxBytes)
        throw invalidInput(describe() + ": entry '" + name + "' is too large (" + std::to_string(found.size) + " bytes)");
    std::string bytes(found.size, '\0');
    readAt(found.dataOffset, bytes.data(), found.size, name.c_str());
    if (crc32(bytes.data(), bytes.size()) != found.crc32)
        throw invalidInput(describe() + ": corrupt zip archive: CRC-32 mismatch in entry '" + name + "'");
    return bytes;
}

void PytorchBinArchive::readEntryInto(const std::string &name, void *destination, uint64_t bytes)
{
    const Entry &found = entry(name);
    if (bytes != found.size)
        throw invalidInput(describe() + ": entry '" + name + "' holds " + std::to_string(found.size) + " bytes, " +
                           std::to_string(bytes) + " expected");
    readAt(found.dataOffset, destination, bytes, name.c_str());
}

void PytorchBinArchive::readAt(uint64_t offset, void *destination, uint64_t bytes, const char *what)
{
    if (offset > m_fileSize || bytes > m_fileSize - offset)
        throw invalidInput(describe() + ": truncated file: " + what + " lies past its end");
    if (bytes == 0)
        return;
    m_file.clear();
    m_file.seekg(std::streamoff(offset));
    char *out = static_cast<char *>(destination);
    while (bytes > 0) {
        const auto chunk = std::streamsize(std::min<uint64_t>(bytes, uint64_t(1) << 30));
        m_file.read(out, chunk);
        if (m_file.gcount() != chunk)
            throw ioError(describe() + ": read failed in " + what);
        out += chunk;
        bytes -= uint64_t(chunk);
    }
}

std::string PytorchBinArchive::describe() const { return m_path.string(); }

} // namespace engine::io
