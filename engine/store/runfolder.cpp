#include "engine/store/runfolder.h"

#include "engine/core/atomicfile.h"
#include "engine/core/error.h"
#include "engine/core/jsonnesting.h"
#include "engine/core/paths.h"
#include "engine/store/runstore.h"

#include <algorithm>
#include <charconv>

namespace engine::store {
namespace fs = std::filesystem;
namespace {

std::optional<int64_t> parseRunId(const std::string &text)
{
    int64_t id = 0;
    const auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), id);
    if (ec != std::errc() || ptr != text.data() + text.size() || id <= 0)
        return std::nullopt;
    return id;
}

std::optional<int64_t> checkpointStep(const fs::path &folder)
{
    const std::string name = folder.filename().string();
    const std::string prefix = "checkpoint-";
    if (name.rfind(prefix, 0) != 0)
        return std::nullopt;
    int64_t step = 0;
    const char *begin = name.data() + prefix.size();
    const char *end = name.data() + name.size();
    const auto [ptr, ec] = std::from_chars(begin, end, step);
    if (ec != std::errc() || ptr != end || begin == end)
        return std::nullopt;
    return step;
}

template<typename T>
T valueOr(const nlohmann::json &object, const char *key, T fallback)
{
    const auto it = object.find(key);
    if (it == object.end())
        return fallback;
    if constexpr (std::is_same_v<T, std::string>) {
        return it->is_string() ? it->get<std::string>() : fallback;
    } else {
        return it->is_number_integer() ? it->get<T>() : fallback;
    }
}

bool isCheckpointFolder(const fs::path &folder)
{
    std::error_code ec;
    return fs::is_regular_file(folder / kCheckpointStateFile, ec) && !fs::exists(folder / kRunMarker, ec);
}

} // namespace

fs::path runsFolderBeside(const fs::path &storePath)
{
    return fs::absolute(storePath).parent_path() / "runs";
}

fs::path newRunFolder(const std::string &outputDir, int64_t runId, const fs::path &storePath)
{
    return outputDir.empty() ? runsFolderBeside(storePath) / std::to_string(runId) : fs::path(outputDir);
}

void writeRunMarker(const fs::path &folder, const RunMarker &marker)
{
    writeFileAtomically(folder / kRunMarker,
                        nlohmann::json({{"run_id", marker.runId}, {"store", marker.storePath}}).dump(2) + "\n");
}

std::optional<RunMarker> readRunMarker(const fs::path &folder)
{
    std::string text;
    try {
        text = readFile(folder / kRunMarker);
    } catch (const Error &) {
        return std::nullopt;
    }
    if (jsonNesting(text) > kMaxJsonNesting)
        return std::nullopt;
    const nlohmann::json marker = nlohmann::json::parse(text, nullptr, false);
    if (!marker.is_object() || !marker.contains("run_id") || !marker["run_id"].is_number_integer())
        return std::nullopt;
    return RunMarker{marker["run_id"].get<int64_t>(), valueOr<std::string>(marker, "store", {})};
}

RunConfig parseRunConfig(const std::string &configJson)
{
    RunConfig config;
    // Too deep is as malformed: the settings inside are copied, which recurses once per level.
    const nlohmann::json object = jsonNesting(configJson) > kMaxJsonNesting
                                      ? nlohmann::json(nlohmann::json::value_t::discarded)
                                      : nlohmann::json::parse(configJson, nullptr, false);
    if (!object.is_object())
        return config;
    if (const auto training = object.find("training"); training != object.end() && training->is_object())
        config.training = *training;
    config.outputDir = valueOr<std::string>(object, "output_dir", {});
    config.outputRoot = valueOr<std::string>(object, "output_root", {});
    config.tokenizer = valueOr<std::string>(object, "tokenizer", {});
    config.corpus = valueOr<std::string>(object, "corpus", {});
    config.corpusTokens = valueOr<int64_t>(object, "corpus_tokens", 0);
    config.worldSize = std::max<int64_t>(1, valueOr<int64_t>(config.training, "world_size", 1));
    config.launcher = valueOr<std::string>(config.training, "launcher", {});
    config.method = valueOr<std::string>(config.training, "method", {});
    return config;
}

fs::path runFolderOf(int64_t runId, const RunConfig &config)
{
    if (!config.outputDir.empty())
        return config.outputDir;
    if (!config.outputRoot.empty())
        return fs::path(config.outputRoot) / std::to_string(runId);
    return dataDir() / "runs" / std::to_string(runId); // where runs went before output_root was recorded
}

std::vector<std::pair<int64_t, fs::path>> listCheckpoints(const fs::path &runFolder)
{
    std::vector<std::pair<int64_t, fs::path>> found;
    std::error_code ec;
    for (const auto &entry : fs::directory_iterator(runFolder, ec)) {
        if (!entry.is_directory())
            continue;
        if (const auto step = checkpointStep(entry.path()); step && fs::exists(entry.path() / kCheckpointStateFile))
            found.emplace_back(*step, entry.path());
    }
    std::sort(found.begin(), found.end());
    return found;
}

fs::path resolveRunFolder(const std::string &runOrFolder, const std::string &storePath)
{
    if (const auto id = parseRunId(runOrFolder); id && !fs::is_directory(runOrFolder)) {
        RunStore store = RunStore::open(storePath);
        const fs::path folder = store.runFolder(*id);
        if (folder.empty())
            throw invalidInput("run " + runOrFolder + " is not in " + storePath);
        return folder;
    }
    if (!fs::is_directory(runOrFolder))
        throw invalidInput(runOrFolder + " is neither a run id nor a run's folder");
    fs::path folder(runOrFolder);
    if (isCheckpointFolder(folder)) // a checkpoint folder stands for its run's folder
        folder = folder.parent_path();
    return folder;
}

int64_t resolveRunId(const std::string &runOrFolder, const std::string &storePath)
{
    if (const auto id = parseRunId(runOrFolder); id && !fs::is_directory(runOrFolder))
        return *id;
    const fs::path folder = resolveRunFolder(runOrFolder, storePath);
    if (!fs::exists(folder / kRunMarker))
        throw invalidInput(runOrFolder + " is not a run's folder (it has no " + kRunMarker + ")");
    const std::optional<RunMarker> marker = readRunMarker(folder);
    if (!marker)
        throw invalidInput((folder / kRunMarker).string() + " is not a tunebench run marker");
    return marker->runId;
}

ResumeState readResumeState(const std::string &runOrFolder, const std::string &storePath)
{
    ResumeState state;
    state.folder = resolveRunFolder(runOrFolder, storePath);
    const std::string shown = parseRunId(runOrFolder) && !fs::is_directory(runOrFolder) ? "run " + runOrFolder : runOrFolder;
    if (fs::is_directory(runOrFolder) && isCheckpointFolder(runOrFolder)) {
        state.checkpoint = runOrFolder; // that very checkpoint
    } else {
        if (!fs::is_directory(state.folder))
            throw invalidInput("cannot resume " + shown + ": its folder " + state.folder.string() + " does not exist");
        const auto all = listCheckpoints(state.folder);
        if (all.empty())
            throw invalidInput("cannot resume " + shown + ": " + state.folder.string() + " holds no checkpoint "
                               "(checkpoint-<step>/ with " + kCheckpointStateFile + "); a run writes one every "
                               "--save-every steps and when it is stopped");
        state.checkpoint = all.back().second;
    }
    const fs::path file = state.checkpoint / kCheckpointStateFile;
    const std::string savedText = readFile(file);
    checkJsonNesting(savedText, file.string());
    const nlohmann::json saved = nlohmann::json::parse(savedText, nullptr, false);
    if (!saved.is_object() || !saved.contains("step") || !saved["step"].is_number_integer()
        || !saved.contains("training") || !saved["training"].is_object())
        throw invalidInput("cannot resume " + shown + ": " + file.string() + " is not a tunebench checkpoint state "
                           "(it needs \"step\" and \"training\")");
    state.step = saved["step"].get<int64_t>();
    state.runId = valueOr<int64_t>(saved, "run_id", 0);
    state.storePath = valueOr<std::string>(saved, "store", storePath);
    state.training = saved["training"];
    return state;
}

} // namespace engine::store
