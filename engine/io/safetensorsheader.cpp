#include "engine/io/safetensorsheader.h"

#include "engine/core/error.h"
#include "engine/io/safetensorslayout.h"

#include <cerrno>
#include <cstring>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace engine::io {
namespace {

/// A file descriptor closed on scope exit.
class FileDescriptor {
public:
    explicit FileDescriptor(int fd) : m_fd(fd) {}
    ~FileDescriptor()
    {
        if (m_fd >= 0)
            ::close(m_fd);
    }
    FileDescriptor(const FileDescriptor &) = delete;
    FileDescriptor &operator=(const FileDescriptor &) = delete;
    int get() const { return m_fd; }

private:
    int m_fd;
};

void readExactly(int fd, void *buffer, std::uint64_t bytes, std::uint64_t offset, const std::string &fileLabel)
{
    auto *out = static_cast<unsigned char *>(buffer);
    while (bytes > 0) {
        const ssize_t got = ::pread(fd, out, bytes, static_cast<off_t>(offset));
        if (got < 0 && errno == EINTR)
            continue;
        if (got < 0)
            throw ioError(fileLabel + ": read failed (" + std::strerror(errno) + ")");
        if (got == 0)
            throw ioError(fileLabel + ": file shrank while being read");
        out += got;
        bytes -= static_cast<std::uint64_t>(got);
        offset += static_cast<std::uint64_t>(got);
    }
}

} // namespace

std::uint64_t TensorInfo::numel() const { return checkedNumel(shape).value_or(0); }

const TensorInfo *SafetensorsHeader::find(std::string_view name) const
{
    for (const TensorInfo &info : tensors) {
        if (info.name == name)
            return &info;
    }
    return nullptr;
}

std::uint64_t checkSafetensorsHeaderLength(const unsigned char prefix[8], std::uint64_t fileSize,
                                           const std::string &fileLabel)
{
    std::uint64_t length = 0;
    for (int i = 7; i >= 0; --i)
        length = (length << 8) | prefix[i];
    if (length > kMaxSafetensorsHeaderBytes)
        throw invalidInput(fileLabel + ": header length " + std::to_string(length) + " exceeds the limit of "
                           + std::to_string(kMaxSafetensorsHeaderBytes) + " bytes");
    if (length > fileSize - 8)
        throw invalidInput(fileLabel + ": header length " + std::to_string(length) + " runs past the end of the file ("
                           + std::to_string(fileSize) + " bytes, so at most " + std::to_string(fileSize - 8) + ")");
    return length;
}

SafetensorsHeader readSafetensorsHeader(const std::filesystem::path &path)
{
    const std::string label = path.string();
    FileDescriptor fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
    if (fd.get() < 0)
        throw ioError(label + ": cannot open (" + std::strerror(errno) + ")");
    struct stat info {};
    if (::fstat(fd.get(), &info) != 0)
        throw ioError(label + ": cannot stat (" + std::strerror(errno) + ")");
    if (!S_ISREG(info.st_mode))
        throw invalidInput(label + ": not a regular file");
    const auto fileSize = static_cast<std::uint64_t>(info.st_size);
    if (fileSize < 8)
        throw invalidInput(label + ": file has " + std::to_string(fileSize)
                           + " bytes, fewer than the 8-byte header length that starts a safetensors file");
    unsigned char prefix[8];
    readExactly(fd.get(), prefix, 8, 0, label);
    const std::uint64_t length = checkSafetensorsHeaderLength(prefix, fileSize, label);
    std::string json(length, '\0');
    readExactly(fd.get(), json.data(), length, 8, label);
    return parseSafetensorsHeader(json, fileSize, label);
}

} // namespace engine::io
