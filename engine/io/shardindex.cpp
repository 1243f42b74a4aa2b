#include "engine/io/shardindex.h"

#include "engine/core/atomicfile.h"
#include "engine/core/error.h"
#include "engine/core/jsonnesting.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>
#include <set>

namespace engine::io {
namespace {

using nlohmann::json;

bool isInside(const std::filesystem::path &root, const std::filesystem::path &candidate)
{
    const auto [rootEnd, candidateIt] = std::mismatch(root.begin(), root.end(), candidate.begin(), candidate.end());
    return rootEnd == root.end();
}

/// Where a shard's symbolic link may lead: the model folder itself and, for a Hugging Face hub
/// cache snapshot (<repo>/snapshots/<revision>/ whose files link to <repo>/blobs/), the repo's blobs.
bool allowedTarget(const std::filesystem::path &canonicalFolder, const std::filesystem::path &resolved)
{
    if (isInside(canonicalFolder, resolved))
        return true;
    const std::filesystem::path snapshots = canonicalFolder.parent_path();
    return snapshots.filename() == "snapshots" && isInside(snapshots.parent_path() / "blobs", resolved);
}

/// Checks one weight_map value and returns the shard's path (folder / entry).
std::filesystem::path checkShard(const std::string &tensor, const std::string &entry, const std::filesystem::path &folder,
                                 const std::filesystem::path &canonicalFolder, const std::string &label)
{
    const std::string where = label + ": weight_map entry '" + tensor + "' -> '" + entry + "'";
    const std::filesystem::path relative(entry);
    if (entry.empty())
        throw invalidInput(where + " is empty (it must name a shard file in the model folder)");
    if (relative.is_absolute())
        throw invalidInput(where + " is an absolute path (shards must be inside the model folder)");
    const std::filesystem::path normal = relative.lexically_normal();
    if (!normal.empty() && *normal.begin() == "..")
        throw invalidInput(where + " leaves the model folder (shards must be inside it)");
    const std::filesystem::path shard = folder / relative;
    std::error_code ec;
    const std::filesystem::path resolved = std::filesystem::canonical(shard, ec);
    if (ec)
        throw invalidInput(where + " names a shard that does not exist");
    if (!allowedTarget(canonicalFolder, resolved))
        throw invalidInput(where + " resolves (through a symbolic link) to " + resolved.string()
                           + ", outside the model folder (shards must be inside it, or in the blobs of a "
                             "Hugging Face cache snapshot)");
    if (!std::filesystem::is_regular_file(resolved, ec))
        throw invalidInput(where + " is not a regular file");
    return shard;
}

} // namespace

std::string shardFileName(int index, int count)
{
    char name[64];
    std::snprintf(name, sizeof name, "model-%05d-of-%05d.safetensors", index, count);
    return name;
}

CheckpointFiles parseShardIndex(const std::string &text, const std::filesystem::path &folder,
                                const std::filesystem::path &indexPath)
{
    const std::string label = indexPath.string();
    json root;
    checkJsonNesting(text, label);
    try {
        root = json::parse(text);
    } catch (const json::exception &error) {
        throw invalidInput(label + ": not valid JSON (" + error.what() + ")");
    }
    if (!root.is_object())
        throw invalidInput(label + ": not a JSON object");
    CheckpointFiles files;
    files.index = indexPath;
    if (const auto metadata = root.find("metadata"); metadata != root.end() && !metadata->is_null()) {
        if (!metadata->is_object())
            throw invalidInput(label + ": \"metadata\" is not an object");
        if (const auto total = metadata->find("total_size"); total != metadata->end()) {
            // Some writers store it as a float; anything else numeric and non-negative is accepted.
            if (total->is_number_unsigned())
                files.totalSize = total->get<std::uint64_t>();
            else if (total->is_number_float() && total->get<double>() >= 0)
                files.totalSize = static_cast<std::uint64_t>(total->get<double>());
            else
                throw invalidInput(label + ": metadata.total_size is " + total->dump() + ", not a non-negative number");
        }
    }
    const auto weightMap = root.find("weight_map");
    if (weightMap == root.end() || !weightMap->is_object())
        throw invalidInput(label + ": has no \"weight_map\" object (tensor name -> shard file)");
    if (weightMap->empty())
        throw invalidInput(label + ": \"weight_map\" is empty");

    std::error_code ec;
    const std::filesystem::path canonicalFolder = std::filesystem::canonical(folder, ec);
    if (ec)
        throw invalidInput(folder.string() + ": model folder cannot be resolved (" + ec.message() + ")");
    std::map<std::string, std::filesystem::path> checked; // entry text -> shard path
    for (const auto &[tensor, entry] : weightMap->items()) {
        if (!entry.is_string())
            throw invalidInput(label + ": weight_map entry '" + tensor + "' is " + entry.dump() + ", not a file name");
        const std::string name = entry.get<std::string>();
        auto known = checked.find(name);
        if (known == checked.end())
            known = checked.emplace(name, checkShard(tensor, name, folder, canonicalFolder, label)).first;
        files.tensorToShard.emplace(tensor, known->second);
    }
    for (const auto &[entry, shard] : checked)
        files.shards.push_back(shard);
    return files;
}

CheckpointFiles locateCheckpoint(const std::filesystem::path &modelFolder)
{
    std::error_code ec;
    if (!std::filesystem::is_directory(modelFolder, ec))
        throw invalidInput(modelFolder.string() + ": not a folder");
    const std::filesystem::path single = modelFolder / kSafetensorsWeightsName;
    if (std::filesystem::is_regular_file(single, ec)) {
        CheckpointFiles files;
        files.shards.push_back(single);
        return files;
    }
    const std::filesystem::path index = modelFolder / kSafetensorsIndexName;
    if (!std::filesystem::exists(index, ec))
        throw invalidInput(modelFolder.string() + ": has neither " + kSafetensorsWeightsName + " nor "
                           + kSafetensorsIndexName);
    return parseShardIndex(readFile(index), modelFolder, index);
}

} // namespace engine::io
