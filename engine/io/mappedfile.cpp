#include "engine/io/mappedfile.h"

#include "engine/core/error.h"

#include <cerrno>
#include <cstring>

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

namespace engine::io {

MappedFile::MappedFile(std::filesystem::path path, int fd, std::byte *data, std::uint64_t size)
    : m_path(std::move(path)), m_fd(fd), m_data(data), m_size(size)
{
}

MappedFile::~MappedFile()
{
    if (m_data)
        ::munmap(m_data, m_size);
    if (m_fd >= 0)
        ::close(m_fd);
}

std::shared_ptr<MappedFile> MappedFile::open(const std::filesystem::path &path)
{
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        throw ioError(path.string() + ": cannot open (" + std::strerror(errno) + ")");
    struct stat info {};
    const bool statOk = ::fstat(fd, &info) == 0;
    if (!statOk || !S_ISREG(info.st_mode)) {
        const std::string reason = statOk ? "not a regular file" : std::strerror(errno);
        ::close(fd);
        throw ioError(path.string() + ": cannot map (" + reason + ")");
    }
    const auto size = static_cast<std::uint64_t>(info.st_size);
    std::byte *data = nullptr;
    if (size > 0) {
        // MAP_PRIVATE + PROT_WRITE: in-place edits of a zero-copy tensor stay private (copy-on-write).
        // MAP_NORESERVE: a mapping larger than RAM + swap is not refused by the overcommit heuristic.
        void *mapped = ::mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_NORESERVE, fd, 0);
        if (mapped == MAP_FAILED) {
            const std::string reason = std::strerror(errno);
            ::close(fd);
            throw ioError(path.string() + ": cannot map (" + reason + ")");
        }
        data = static_cast<std::byte *>(mapped);
    }
    return std::shared_ptr<MappedFile>(new MappedFile(path, fd, data, size));
}

void MappedFile::readAt(std::uint64_t offset, void *out, std::uint64_t bytes) const
{
    if (offset > m_size || bytes > m_size - offset)
        throw ioError(m_path.string() + ": read of " + std::to_string(bytes) + " bytes at " + std::to_string(offset)
                      + " is past the end of the file");
    auto *cursor = static_cast<unsigned char *>(out);
    while (bytes > 0) {
        const ssize_t got = ::pread(m_fd, cursor, bytes, static_cast<off_t>(offset));
        if (got < 0 && errno == EINTR)
            continue;
        if (got <= 0)
            throw ioError(m_path.string() + ": read failed (" + (got < 0 ? std::strerror(errno) : "file shrank") + ")");
        cursor += got;
        bytes -= static_cast<std::uint64_t>(got);
        offset += static_cast<std::uint64_t>(got);
    }
}

} // namespace engine::io
