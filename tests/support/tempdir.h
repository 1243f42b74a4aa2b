#pragma once
// Test helpers: a unique temporary folder, removed on destruction; a small corpus and model config.

#include <filesystem>
#include <string>

namespace testing_support {

/// A fresh, empty folder under the system temp dir; removed (recursively) on destruction.
class TempDir {
public:
    explicit TempDir(const std::string &tag);
    ~TempDir();
    TempDir(const TempDir &) = delete;
    TempDir &operator=(const TempDir &) = delete;
    const std::filesystem::path &path() const { return m_path; }
    std::filesystem::path operator/(const std::string &name) const { return m_path / name; }

private:
    std::filesystem::path m_path;
};

/// Writes the first `bytes` of the bundled demo corpus to `path` (cut at a line end).
void writeCorpusSlice(const std::filesystem::path &path, size_t bytes);

/// Writes a tiny LLaMA config.json (vocab 512, hidden 64, 2 layers, GQA 4/2 heads) into `folder`.
void writeTinyConfig(const std::filesystem::path &folder);

/// Points XDG_DATA_HOME / XDG_CONFIG_HOME / XDG_CACHE_HOME below `root`, so tests never touch $HOME.
void isolateXdgDirs(const std::filesystem::path &root);

} // namespace testing_support
