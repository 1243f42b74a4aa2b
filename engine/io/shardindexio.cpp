#include "engine/io/shardindexio.h"

#include "engine/core/atomicfile.h"
#include "engine/core/error.h"

#include <torch/torch.h>

#include <nlohmann/json.hpp>

#include <regex>
#include <set>

namespace engine::io {
namespace {

using NamedTensors = std::vector<std::pair<std::string, torch::Tensor>>;

std::uint64_t byteSize(const torch::Tensor &tensor)
{
    return static_cast<std::uint64_t>(tensor.numel()) * tensor.element_size();
}

/// Groups tensors into shards in order; a tensor above the limit gets its own shard.
std::vector<NamedTensors> splitIntoShards(const NamedTensors &tensors, std::uint64_t maxShardBytes)
{
    std::vector<NamedTensors> shards;
    size_t current = SIZE_MAX;
    std::uint64_t currentBytes = 0;
    for (const auto &named : tensors) {
        const std::uint64_t bytes = byteSize(named.second);
        if (bytes > maxShardBytes) {
            shards.push_back({named});
            continue;
        }
        if (current == SIZE_MAX || currentBytes + bytes > maxShardBytes) {
            shards.emplace_back();
            current = shards.size() - 1;
            currentBytes = 0;
        }
        shards[current].push_back(named);
        currentBytes += bytes;
    }
    return shards;
}

/// Removes weight files of an earlier save that `keep` does not contain.
void removeStaleWeights(const std::filesystem::path &folder, const std::set<std::string> &keep)
{
    static const std::regex shardPattern(R"(model-\d{5}-of-\d{5}\.safetensors)");
    std::error_code ec;
    for (const auto &item : std::filesystem::directory_iterator(folder, ec)) {
        const std::string name = item.path().filename().string();
        const bool weights = name == kSafetensorsWeightsName || name == kSafetensorsIndexName
            || std::regex_match(name, shardPattern);
        if (weights && !keep.count(name))
            std::filesystem::remove(item.path(), ec);
    }
}

} // namespace

void forEachCheckpointTensor(const std::filesystem::path &modelFolder, const TensorLoadOptions &options,
                             const std::function<void(const std::string &, torch::Tensor)> &visit)
{
    forEachCheckpointTensorInfo(
        modelFolder, [&](const SafetensorsHeader &, const TensorInfo &) { return options; },
        [&](const TensorInfo &info, torch::Tensor tensor) { visit(info.name, std::move(tensor)); });
}

void forEachCheckpointTensorInfo(const std::filesystem::path &modelFolder,
                                 const std::function<TensorLoadOptions(const SafetensorsHeader &, const TensorInfo &)> &optionsFor,
                                 const std::function<void(const TensorInfo &, torch::Tensor)> &visit)
{
    const CheckpointFiles files = locateCheckpoint(modelFolder);
    if (!files.index) {
        const SafetensorsFile file = SafetensorsFile::open(files.shards.front());
        for (const TensorInfo &info : file.header().tensors)
            visit(info, file.tensor(info.name, optionsFor(file.header(), info)));
        return;
    }
    for (const std::filesystem::path &shard : files.shards) {
        const SafetensorsFile file = SafetensorsFile::open(shard);
        for (const auto &[name, owner] : files.tensorToShard) {
            if (owner != shard)
                continue;
            const TensorInfo *info = file.header().find(name);
            if (!info)
                throw invalidInput(files.index->string() + ": lists tensor '" + name + "' in shard "
                                   + shard.filename().string() + ", but that shard has no such tensor");
            visit(*info, file.tensor(name, optionsFor(file.header(), *info)));
        }
    }
}

std::map<std::string, torch::Tensor> loadCheckpoint(const std::filesystem::path &modelFolder,
                                                    const TensorLoadOptions &options)
{
    std::map<std::string, torch::Tensor> tensors;
    forEachCheckpointTensor(modelFolder, options,
                            [&](const std::string &name, torch::Tensor tensor) { tensors.emplace(name, std::move(tensor)); });
    return tensors;
}

CheckpointFiles writeShardedSafetensors(const std::filesystem::path &folder, const NamedTensors &tensors,
                                        std::uint64_t maxShardBytes, const std::map<std::string, std::string> &metadata)
{
    std::set<std::string> names;
    for (const auto &named : tensors) {
        if (!names.insert(named.first).second)
            throw invalidInput("cannot write " + folder.string() + ": tensor '" + named.first
                               + "' is given twice (names must be unique)");
    }
    const std::vector<NamedTensors> shards = splitIntoShards(tensors, maxShardBytes);
    CheckpointFiles files;
    if (shards.size() <= 1) {
        const std::filesystem::path path = folder / kSafetensorsWeightsName;
        writeSafetensors(path, shards.empty() ? NamedTensors{} : shards.front(), metadata);
        files.shards.push_back(path);
        removeStaleWeights(folder, {kSafetensorsWeightsName});
        return files;
    }
    const int count = static_cast<int>(shards.size());
    std::set<std::string> keep{kSafetensorsIndexName};
    nlohmann::json weightMap = nlohmann::json::object();
    std::uint64_t totalSize = 0;
    for (int i = 0; i < count; ++i) {
        const std::string name = shardFileName(i + 1, count);
        const std::filesystem::path path = folder / name;
        writeSafetensors(path, shards[static_cast<size_t>(i)], metadata);
        for (const auto &[tensorName, tensor] : shards[static_cast<size_t>(i)]) {
            weightMap[tensorName] = name;
            files.tensorToShard.emplace(tensorName, path);
            totalSize += byteSize(tensor);
        }
        files.shards.push_back(path);
        keep.insert(name);
    }
    const nlohmann::json index = {{"metadata", {{"total_size", totalSize}}}, {"weight_map", weightMap}};
    files.index = folder / kSafetensorsIndexName;
    files.totalSize = totalSize;
    writeFileAtomically(*files.index, index.dump(2) + "\n");
    removeStaleWeights(folder, keep);
    return files;
}

} // namespace engine::io
