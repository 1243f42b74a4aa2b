#include "engine/core/paths.h"

#include <cstdlib>

namespace engine {
namespace {

std::filesystem::path homeDir()
{
    if (const char *home = std::getenv("HOME"); home && *home)
        return home;
    return std::filesystem::temp_directory_path();
}

std::filesystem::path xdgDir(const char *variable, const char *fallbackBelowHome)
{
    if (const char *value = std::getenv(variable); value && *value && std::filesystem::path(value).is_absolute())
        return std::filesystem::path(value) / "tunebench";
    return homeDir() / fallbackBelowHome / "tunebench";
}

} // namespace

std::filesystem::path dataDir() { return xdgDir("XDG_DATA_HOME", ".local/share"); }
std::filesystem::path configDir() { return xdgDir("XDG_CONFIG_HOME", ".config"); }
std::filesystem::path cacheDir() { return xdgDir("XDG_CACHE_HOME", ".cache"); }
std::filesystem::path defaultStorePath() { return dataDir() / "runs.sqlite3"; }

std::filesystem::path resourcesDir()
{
    if (const char *value = std::getenv("TUNEBENCH_RESOURCES"); value && *value)
        return value;
    std::error_code ec;
    const std::filesystem::path installed = TUNEBENCH_INSTALL_RESOURCES;
    if (std::filesystem::exists(installed / "demo", ec))
        return installed;
    return TUNEBENCH_SOURCE_RESOURCES;
}

std::filesystem::path demoCorpusPath() { return resourcesDir() / "demo" / "moby-dick.txt"; }
std::filesystem::path demoBaseModelPath() { return resourcesDir() / "base"; }
std::filesystem::path demoFineTuneCorpusPath() { return resourcesDir() / "demo" / "jargon.txt"; }

std::filesystem::path modulePath(const char *environmentVariable, const std::filesystem::path &buildFile,
                                 const std::filesystem::path &installedFile)
{
    if (const char *value = std::getenv(environmentVariable); value && *value)
        return value;
    std::error_code ec;
    return std::filesystem::exists(buildFile, ec) ? buildFile : installedFile;
}

} // namespace engine
