#include "engine/core/settings.h"

#include "engine/core/atomicfile.h"
#include "engine/core/error.h"
#include "engine/core/paths.h"
#include "engine/core/threads.h"

#include <nlohmann/json.hpp>

namespace engine {

std::filesystem::path Settings::effectiveStorePath() const
{
    return storePath.empty() ? defaultStorePath() : std::filesystem::path(storePath);
}

int Settings::effectiveThreads() const { return threads > 0 ? threads : hardwareThreads(); }

std::filesystem::path settingsPath() { return configDir() / "settings.json"; }

Settings loadSettings(const std::filesystem::path &path)
{
    Settings settings;
    std::error_code ec;
    if (!std::filesystem::exists(path, ec))
        return settings;
    const std::string text = readFile(path);
    nlohmann::json json;
    try {
        json = nlohmann::json::parse(text);
    } catch (const nlohmann::json::exception &e) {
        throw invalidInput(path.string() + ": not valid JSON (" + e.what() + ")");
    }
    if (!json.is_object())
        throw invalidInput(path.string() + ": expected a JSON object");
    if (auto it = json.find("store_path"); it != json.end()) {
        if (!it->is_string())
            throw invalidInput(path.string() + ": \"store_path\" must be a string");
        settings.storePath = it->get<std::string>();
    }
    if (auto it = json.find("blas_core_type"); it != json.end()) {
        if (!it->is_string())
            throw invalidInput(path.string() + ": \"blas_core_type\" must be a string (an OpenBLAS core name such as SkylakeX)");
        settings.blasCoreType = it->get<std::string>();
    }
    if (auto it = json.find("threads"); it != json.end()) {
        if (!it->is_number_integer() || it->get<int>() < 0)
            throw invalidInput(path.string() + ": \"threads\" must be a non-negative integer (0 = all cores)");
        settings.threads = it->get<int>();
    }
    return settings;
}

void saveSettings(const Settings &settings, const std::filesystem::path &path)
{
    nlohmann::json json = {{"store_path", settings.storePath}, {"threads", settings.threads}};
    if (!settings.blasCoreType.empty())
        json["blas_core_type"] = settings.blasCoreType;
    writeFileAtomically(path, json.dump(2) + "\n");
}

} // namespace engine
