#include "engine/train/runfolder.h"

#include "engine/core/atomicfile.h"
#include "engine/core/error.h"
#include "engine/store/runstore.h"

#include <nlohmann/json.hpp>

#include <charconv>
#include <optional>

namespace engine::train {

namespace {

std::optional<int64_t> parseRunId(const std::string &text)
{
    int64_t id = 0;
    const auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), id);
    if (ec != std::errc() || ptr != text.data() + text.size() || id <= 0)
        return std::nullopt;
    return id;
}

} // namespace

std::filesystem::path resolveRunFolder(const std::string &runOrFolder, const std::string &storePath)
{
    if (const auto id = parseRunId(runOrFolder); id && !std::filesystem::is_directory(runOrFolder)) {
        store::RunStore store = store::RunStore::open(storePath);
        const std::filesystem::path folder = store.runFolder(*id);
        if (folder.empty())
            throw invalidInput("run " + runOrFolder + " is not in " + storePath);
        return folder;
    }
    if (!std::filesystem::is_directory(runOrFolder))
        throw invalidInput(runOrFolder + " is neither a run id nor a run's folder");
    std::filesystem::path folder(runOrFolder);
    // A checkpoint folder stands for its run's folder.
    if (std::filesystem::exists(folder / "trainer_state.json") && !std::filesystem::exists(folder / kRunMarker))
        folder = folder.parent_path();
    return folder;
}

int64_t resolveRunId(const std::string &runOrFolder, const std::string &storePath)
{
    if (const auto id = parseRunId(runOrFolder); id && !std::filesystem::is_directory(runOrFolder))
        return *id;
    const std::filesystem::path marker = resolveRunFolder(runOrFolder, storePath) / kRunMarker;
    try {
        return nlohmann::json::parse(readFile(marker)).at("run_id").get<int64_t>();
    } catch (const nlohmann::json::exception &) {
        throw invalidInput(marker.string() + " is not a tunebench run marker");
    } catch (const Error &) {
        throw invalidInput(runOrFolder + " is not a run's folder (it has no " + kRunMarker + ")");
    }
}

} // namespace engine::train
