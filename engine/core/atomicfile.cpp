#include "engine/core/atomicfile.h"

#include "engine/core/error.h"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include <csignal>
#include <cstdio>

#include <fcntl.h>
#include <unistd.h>

namespace engine {
namespace {

std::string errnoText() { return std::strerror(errno); }

/// Whether process `pid` runs on this machine (EPERM: it does, as another user).
bool processAlive(long pid)
{
    return pid > 0 && (::kill(static_cast<pid_t>(pid), 0) == 0 || errno == EPERM);
}

/// Removes what writers killed before they finished left beside a target in `folder`: entries named
/// `prefix` + <pid> + anything, whose pid runs no more. A live writer's files are never touched.
void removeLeftoversOfDeadWriters(const std::filesystem::path &folder, const std::string &prefix)
{
    std::error_code ec;
    std::vector<std::filesystem::path> stale;
    for (const auto &entry : std::filesystem::directory_iterator(folder, ec)) {
        const std::string name = entry.path().filename().string();
        if (name.size() <= prefix.size() || name.compare(0, prefix.size(), prefix) != 0)
            continue;
        char *end = nullptr;
        const long pid = std::strtol(name.c_str() + prefix.size(), &end, 10);
        if (end != name.c_str() + prefix.size() && pid != ::getpid() && !processAlive(pid))
            stale.push_back(entry.path());
    }
    for (const auto &path : stale)
        std::filesystem::remove_all(path, ec);
}

} // namespace

namespace {

/// A new, empty file beside `path` that only this call knows (O_EXCL), opened for writing.
struct TemporaryFile {
    std::filesystem::path path;
    int fd = -1;
};

TemporaryFile createTemporaryBeside(const std::filesystem::path &path, MissingFolders folders)
{
    const std::filesystem::path folder = path.has_parent_path() ? path.parent_path() : std::filesystem::path(".");
    std::error_code ec;
    if (path.filename().empty())
        throw ioError("cannot write " + path.string() + ": no file name given");
    if (std::filesystem::is_directory(path, ec))
        throw ioError("cannot write " + path.string() + ": it is a folder");
    if (folders == MissingFolders::Create) {
        std::filesystem::create_directories(folder, ec);
        if (ec)
            throw ioError("cannot create folder " + folder.string() + ": " + ec.message());
    } else if (!std::filesystem::is_directory(folder, ec)) {
        throw ioError("cannot write " + path.string() + ": the folder " + folder.string() + " does not exist");
    }
    std::random_device random;
    // Hidden, so that a folder listing does not show it while it is written.
    std::string name = ".";
    name += path.filename().string();
    name += ".tmp-";
    removeLeftoversOfDeadWriters(folder, name);
    name += std::to_string(::getpid()) + "-" + std::to_string(random());
    TemporaryFile temporary{folder / name, -1};
    temporary.fd = ::open(temporary.path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (temporary.fd < 0) {
        const std::string reason = errnoText();
        if (errno == EACCES || errno == EROFS || errno == EPERM)
            throw ioError("cannot write " + path.string() + ": the folder " + folder.string() + " is not writable ("
                          + reason + ")");
        throw ioError("cannot write " + path.string() + ": " + reason);
    }
    return temporary;
}

/// Flushes and closes `fd`, then renames the temporary file over `path`; removes it on failure.
void publish(int fd, const std::filesystem::path &temporary, const std::filesystem::path &path)
{
    if (::fsync(fd) != 0 || ::close(fd) != 0) {
        const std::string reason = errnoText();
        ::unlink(temporary.c_str());
        throw ioError("cannot write " + path.string() + ": " + reason);
    }
    if (::rename(temporary.c_str(), path.c_str()) != 0) {
        const std::string reason = errnoText();
        ::unlink(temporary.c_str());
        throw ioError("cannot write " + path.string() + ": " + reason);
    }
}

} // namespace

void writeFileAtomically(const std::filesystem::path &path, std::string_view bytes)
{
    const TemporaryFile temporary = createTemporaryBeside(path, MissingFolders::Create);
    const char *data = bytes.data();
    size_t left = bytes.size();
    while (left > 0) {
        const ssize_t written = ::write(temporary.fd, data, left);
        if (written < 0 && errno == EINTR)
            continue;
        if (written <= 0) {
            const std::string reason = errnoText();
            ::close(temporary.fd);
            ::unlink(temporary.path.c_str());
            throw ioError("cannot write " + path.string() + ": " + reason);
        }
        data += written;
        left -= static_cast<size_t>(written);
    }
    publish(temporary.fd, temporary.path, path);
}

void writeFileAtomically(const std::filesystem::path &path,
                         const std::function<void(const std::filesystem::path &temporary)> &write, MissingFolders folders)
{
    const TemporaryFile temporary = createTemporaryBeside(path, folders);
    ::close(temporary.fd); // the writer opens it by name
    auto fail = [&](const std::string &reason) {
        ::unlink(temporary.path.c_str());
        throw ioError("cannot write " + path.string() + ": " + reason);
    };
    try {
        write(temporary.path);
    } catch (const std::exception &e) {
        fail(e.what());
    } catch (...) {
        fail("the writer failed");
    }
    std::error_code ec;
    if (std::filesystem::file_size(temporary.path, ec) == 0 || ec)
        fail(ec ? ec.message() : "nothing was written");
    const int fd = ::open(temporary.path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        fail(errnoText());
    publish(fd, temporary.path, path);
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
    removeLeftoversOfDeadWriters(parent, name); // a killed writer's folder (and its ".old") would stay forever
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
        // One atomic swap: the target is the old folder or the new one at every instant, even if the
        // process dies here (renaming the old one aside first leaves a moment with no target at all).
        if (::renameat2(AT_FDCWD, m_staging.c_str(), AT_FDCWD, m_target.c_str(), RENAME_EXCHANGE) == 0) {
            m_committed = true;
            syncFolder(m_target.parent_path().empty() ? "." : m_target.parent_path());
            std::error_code ec;
            std::filesystem::remove_all(m_staging, ec); // now the old folder
            return;
        }
        if (errno != EINVAL && errno != ENOSYS && errno != ENOTSUP)
            throw ioError("cannot replace " + m_target.string() + ": " + errnoText());
        // A file system without RENAME_EXCHANGE: move the old folder aside, then the new one in.
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
