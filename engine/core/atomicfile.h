#pragma once
// Writing files so that a crash never leaves a half-written one: write a temporary file beside the
// target, flush it to disk, then rename it over the target.

#include <filesystem>
#include <string_view>

namespace engine {

/// Writes bytes to path atomically. Creates missing parent folders. Throws Error(Io) naming the path.
void writeFileAtomically(const std::filesystem::path &path, std::string_view bytes);

/// A folder written in full before anyone sees it: files go into a hidden "<target>.partial-<pid>"
/// beside `target`; commit() flushes the folder and renames it to `target` (which must not exist), then
/// flushes the parent. Destroyed without commit() (an error, a cancel), the partial folder is removed.
class StagedFolder {
public:
    explicit StagedFolder(std::filesystem::path target);
    StagedFolder(const StagedFolder &) = delete;
    StagedFolder &operator=(const StagedFolder &) = delete;
    ~StagedFolder();

    /// Where to write the files.
    const std::filesystem::path &path() const { return m_staging; }
    /// Publishes the folder as `target`. Throws Error(Io) naming the target. With `replace`, an existing
    /// target is moved aside first and removed only once the new folder is in place.
    void commit(bool replace = false);

private:
    std::filesystem::path m_target;
    std::filesystem::path m_staging;
    bool m_committed = false;
};

/// fsync of a folder, so that renames inside it survive a crash. Throws Error(Io).
void syncFolder(const std::filesystem::path &folder);

/// Reads a whole file. Throws Error(Io) naming the path when it cannot be read.
std::string readFile(const std::filesystem::path &path);

} // namespace engine
