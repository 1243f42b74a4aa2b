#pragma once
// A whole file mapped into memory, private and copy-on-write: pages are read from the page cache
// on first touch, writes through the mapping stay in this process and never reach the file.
// Shared by everything built over it (tensors hold a shared_ptr), unmapped when the last holder goes.

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>

namespace engine::io {

/// A read-mostly, private mapping of one file, plus its descriptor for positioned reads.
class MappedFile {
public:
    /// Maps `path` whole. Throws Error(Io) naming the path when it cannot be opened or mapped.
    static std::shared_ptr<MappedFile> open(const std::filesystem::path &path);
    ~MappedFile();
    MappedFile(const MappedFile &) = delete;
    MappedFile &operator=(const MappedFile &) = delete;

    /// Start of the mapping (nullptr for an empty file). Writable copy-on-write.
    std::byte *data() const { return m_data; }
    std::uint64_t size() const { return m_size; }
    const std::filesystem::path &path() const { return m_path; }

    /// Copies `bytes` at file offset `offset` into `out` with pread (no page of the mapping is
    /// touched, so the copy costs no extra resident memory). Throws Error(Io).
    void readAt(std::uint64_t offset, void *out, std::uint64_t bytes) const;

private:
    MappedFile(std::filesystem::path path, int fd, std::byte *data, std::uint64_t size);

    std::filesystem::path m_path;
    int m_fd = -1;
    std::byte *m_data = nullptr;
    std::uint64_t m_size = 0;
};

} // namespace engine::io
