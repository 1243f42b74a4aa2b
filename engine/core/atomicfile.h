#pragma once
// Writing files so that a crash never leaves a half-written one: write a temporary file beside the
// target, flush it to disk, then rename it over the target.

#include <filesystem>
#include <functional>
#include <string_view>

namespace engine {

/// Writes bytes to path atomically. Creates missing parent folders. Throws Error(Io) naming the path.
void writeFileAtomically(const std::filesystem::path &path, std::string_view bytes);

/// Whether a write may create the folders it needs (the run's own files) or must find the folder there
/// (a file the user chose in a dialog: a typo should not make folders).
enum class MissingFolders { Create, Refuse };

/// The same for a file that a library writes by name (an image, a PDF): `write(temporary)` fills a new
/// file beside `path` (mode 0644) and throws to fail (any exception; its text becomes the reason). The
/// file is then flushed and renamed over `path`. On any failure the temporary file is removed, `path`
/// is left as it was, and Error(Io) says "cannot write PATH: REASON" (the folder that does not exist or
/// is not writable, a target that is a folder, what `write` threw, or that it wrote nothing).
void writeFileAtomically(const std::filesystem::path &path,
                         const std::function<void(const std::filesystem::path &temporary)> &write,
                         MissingFolders folders = MissingFolders::Create);

/// A folder written in full before anyone sees it: files go into a hidden ".<target>.partial-<pid>"
/// beside `target`; commit() flushes the folder and renames it to `target` (which must not exist), then
/// flushes the parent. Destroyed without commit() (an error, a cancel), the partial folder is removed.
/// Partial folders of writers that were killed (their pid runs no more) are removed when the next
/// StagedFolder of the same target is made; temporary files of writeFileAtomically likewise.
class StagedFolder {
public:
    explicit StagedFolder(std::filesystem::path target);
    StagedFolder(const StagedFolder &) = delete;
    StagedFolder &operator=(const StagedFolder &) = delete;
    ~StagedFolder();

    /// Where to write the files.
    const std::filesystem::path &path() const { return m_staging; }
    /// Publishes the folder as `target`. Throws Error(Io) naming the target. With `replace`, an existing
    /// target is swapped with the new folder in one step (renameat2 RENAME_EXCHANGE; where the file system
    /// lacks it, moved aside first) and removed once the new folder is in place.
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
