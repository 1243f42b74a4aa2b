#include "engine/core/atomicfile.h"

#include "engine/core/error.h"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <random>
#include <sstream>
#include <string>

#include <fcntl.h>
#include <unistd.h>

namespace engine {
namespace {

std::string errnoText() { return std::strerror(errno); }

} // namespace

void writeFileAtomically(const std::filesystem::path &path, std::string_view bytes)
{
    std::error_code ec;
    if (path.has_parent_path())
        std::filesystem::create_directories(path.parent_path(), ec);
    if (ec)
        throw ioError("cannot create folder " + path.parent_path().string() + ": " + ec.message());

    std::random_device random;
    const std::filesystem::path temp = path.string() + ".tmp-" + std::to_string(::getpid()) + "-"
        + std::to_string(random());
    const int fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd < 0)
        throw ioError("cannot write " + path.string() + ": " + errnoText());

    const char *data = bytes.data();
    size_t left = bytes.size();
    while (left > 0) {
        const ssize_t written = ::write(fd, data, left);
        if (written < 0 && errno == EINTR)
            continue;
        if (written <= 0) {
            const std::string reason = errnoText();
            ::close(fd);
            ::unlink(temp.c_str());
            throw ioError("cannot write " + path.string() + ": " + reason);
        }
        data += written;
        left -= static_cast<size_t>(written);
    }
    if (::fsync(fd) != 0 || ::close(fd) != 0) {
        const std::string reason = errnoText();
        ::unlink(temp.c_str());
        throw ioError("cannot write " + path.string() + ": " + reason);
    }
    if (::rename(temp.c_str(), path.c_str()) != 0) {
        const std::string reason = errnoText();
        ::unlink(temp.c_str());
        throw ioError("cannot write " + path.string() + ": " + reason);
    }
}

void syncFolder(const std::filesystem::path &folder)
{
    const int fd = ::open(folder.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        throw ioError("cannot open folder " + folder.string() + ": " + errnoText());
    const int result = ::fsync(fd);
    const std::string reason = result != 0 ? errnoText() : std::string();
    ::close(fd);
    if (result != 0)
        throw ioError("cannot flush folder " + folder.string() + ": " + reason);
}

StagedFolder::StagedFolder(std::filesystem::path target)
    : m_target(std::move(target))
{
    const std::filesystem::path parent = m_target.parent_path().empty() ? "." : m_target.parent_path();
    // Appended piece by piece: `"." + std::string&&` makes GCC 12 at -O3 warn (-Wrestrict, a false positive).
    std::string name = ".";
    name += m_target.filename().string();
    name += ".partial-";
    name += std::to_string(::getpid());
    m_staging = parent / name;
    std::error_code ec;
    std::filesystem::remove_all(m_staging, ec); // a leftover of an earlier attempt of this pid
    std::filesystem::create_directories(m_staging, ec);
    if (ec)
        throw ioError("cannot create folder " + m_staging.string() + ": " + ec.message());
}

StagedFolder::~StagedFolder()
{
    if (!m_committed) {
        std::error_code ec;
        std::filesystem::remove_all(m_staging, ec);
    }
}

void StagedFolder::commit(bool replace)
{
    syncFolder(m_staging);
    std::filesystem::path aside;
    if (std::filesystem::exists(m_target)) {
        if (!replace)
            throw ioError("cannot write " + m_target.string() + ": it exists");
        aside = m_staging.string() + ".old";
        std::error_code ec;
        std::filesystem::remove_all(aside, ec);
        if (::rename(m_target.c_str(), aside.c_str()) != 0)
            throw ioError("cannot replace " + m_target.string() + ": " + errnoText());
    }
    if (::rename(m_staging.c_str(), m_target.c_str()) != 0) {
        const std::string reason = errnoText();
        if (!aside.empty())
            ::rename(aside.c_str(), m_target.c_str()); // put the old one back
        throw ioError("cannot write " + m_target.string() + ": " + reason);
    }
    m_committed = true;
    syncFolder(m_target.parent_path().empty() ? "." : m_target.parent_path());
    if (!aside.empty()) {
        std::error_code ec;
        std::filesystem::remove_all(aside, ec);
    }
}

std::string readFile(const std::filesystem::path &path)
{
    std::error_code ec;
    if (!std::filesystem::exists(path, ec))
        throw ioError(path.string() + ": no such file");
    if (std::filesystem::is_directory(path, ec))
        throw ioError(path.string() + ": is a folder, expected a file");
    std::ifstream in(path, std::ios::binary);
    if (!in)
        throw ioError(path.string() + ": cannot be read (" + errnoText() + ")");
    std::ostringstream out;
    out << in.rdbuf();
    if (in.bad())
        throw ioError(path.string() + ": read failed");
    return out.str();
}

} // namespace engine
