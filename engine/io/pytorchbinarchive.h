#pragma once
// The zip container that torch.save (PyTorch >= 1.6) writes: stored (uncompressed) entries under one
// top-level folder, `<archive>/data.pkl`, `<archive>/data/<key>`, `<archive>/version` and, since 2.x,
// `<archive>/byteorder`. Only what torch writes is accepted: no compression, no encryption, one disk;
// zip64 (written for files over 4 GiB) is read. Every offset and size is checked against the file.
//
// How to use:
//   PytorchBinArchive archive(path);                  // parses the central directory; throws engine::Error
//   std::string pickle = archive.readEntry(archive.prefix() + "data.pkl");
//   archive.readEntryInto(name, buffer, archive.entrySize(name));

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>

namespace engine::io {

/// A read-only view of a torch.save zip file; not thread-safe (one file position).
class PytorchBinArchive {
public:
    /// Opens `path` and reads its central directory. Throws engine::Error (Io when the file cannot be
    /// read, InvalidInput when it is not a torch.save zip or is truncated or corrupt).
    explicit PytorchBinArchive(const std::filesystem::path &path);

    /// The top-level folder of the entries, with a trailing slash ("pytorch_model/").
    const std::string &prefix() const { return m_prefix; }
    /// Whether an entry of that full name exists.
    bool hasEntry(const std::string &name) const;
    /// Size in bytes of an entry; throws when it does not exist.
    uint64_t entrySize(const std::string &name) const;
    /// The whole entry as bytes; refuses entries over `maxBytes`. Checks the entry's CRC-32.
    std::string readEntry(const std::string &name, uint64_t maxBytes = uint64_t(1) << 30);
    /// Copies `bytes` (the entry's exact size) into `destination`. No CRC check (storages can be GBs).
    void readEntryInto(const std::string &name, void *destination, uint64_t bytes);
    /// The file, for error messages.
    const std::filesystem::path &path() const { return m_path; }

private:
    struct Entry {
        uint64_t dataOffset = 0;
        uint64_t size = 0;
        uint32_t crc32 = 0;
    };

    const Entry &entry(const std::string &name) const;
    void readAt(uint64_t offset, void *destination, uint64_t bytes, const char *what);
    std::string describe() const;

    std::filesystem::path m_path;
    std::ifstream m_file;
    uint64_t m_fileSize = 0;
    std::string m_prefix;
    std::map<std::string, Entry> m_entries;
};

} // namespace engine::io
