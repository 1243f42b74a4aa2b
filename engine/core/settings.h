#pragma once
// User settings shared by the CLI and the GUI: a small JSON file in configDir().

#include <filesystem>
#include <string>

namespace engine {

/// Settings with their defaults. Empty/zero means "use the default".
struct Settings {
    std::string storePath; ///< run database; empty = defaultStorePath()
    int threads = 0;       ///< libtorch threads; 0 = all cores
    /// OpenBLAS kernels to use (OPENBLAS_CORETYPE, e.g. "SkylakeX"), set by `tunebench doctor
    /// --use-blas-core` after it checked them on this CPU; empty = OpenBLAS's own choice.
    std::string blasCoreType;

    /// The store path in effect: storePath, or the default.
    std::filesystem::path effectiveStorePath() const;
    /// The thread count in effect: threads, or the core count.
    int effectiveThreads() const;
};

/// configDir()/settings.json
std::filesystem::path settingsPath();

/// Reads settings from path (default settingsPath()). A missing file gives defaults; a corrupt one
/// throws Error(InvalidInput) naming the file and the field.
Settings loadSettings(const std::filesystem::path &path = settingsPath());

/// Writes settings atomically.
void saveSettings(const Settings &settings, const std::filesystem::path &path = settingsPath());

} // namespace engine
