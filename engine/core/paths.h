#pragma once
// Where tunebench keeps things, following the XDG base directory specification.

#include <filesystem>

namespace engine {

/// $XDG_DATA_HOME/tunebench or ~/.local/share/tunebench (not created).
std::filesystem::path dataDir();
/// $XDG_CONFIG_HOME/tunebench or ~/.config/tunebench (not created).
std::filesystem::path configDir();
/// $XDG_CACHE_HOME/tunebench or ~/.cache/tunebench (not created).
std::filesystem::path cacheDir();
/// dataDir()/runs.sqlite3: the run store when neither a flag nor the setting names another.
std::filesystem::path defaultStorePath();
/// Folder of bundled resources: $TUNEBENCH_RESOURCES, else the installed share/tunebench, else the
/// source tree's resources/ (for a build that is run in place).
std::filesystem::path resourcesDir();
/// The bundled demo corpus (public domain text) inside resourcesDir().
std::filesystem::path demoCorpusPath();
/// The bundled base model (the demo config pretrained on the demo corpus, resources/base).
std::filesystem::path demoBaseModelPath();
/// The demo's fine-tuning corpus (a public-domain Jargon File slice) inside resourcesDir().
std::filesystem::path demoFineTuneCorpusPath();
/// A module tunebench loads with dlopen: $`environmentVariable` when set, else `buildFile` (the build
/// tree's, for a build that is run in place) when it exists, else `installedFile`.
std::filesystem::path modulePath(const char *environmentVariable, const std::filesystem::path &buildFile,
                                 const std::filesystem::path &installedFile);

} // namespace engine
