#pragma once
// Finding the weight files of a Hugging Face model folder: one model.safetensors, or shards listed
// by model.safetensors.index.json = {"metadata": {"total_size": N}, "weight_map": {tensor: shard}}.
// Torch-free; loading and saving tensors is in shardindexio.h.
//
// Every weight_map entry must name an existing regular file inside the model folder: absolute
// paths, ".." that leaves the folder and symbolic links that resolve outside it are refused.

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace engine::io {

/// "model.safetensors"
inline constexpr const char *kSafetensorsWeightsName = "model.safetensors";
/// "model.safetensors.index.json"
inline constexpr const char *kSafetensorsIndexName = "model.safetensors.index.json";

/// The weight files of a model folder.
struct CheckpointFiles {
    std::vector<std::filesystem::path> shards;              ///< absolute-or-as-given paths, in name order
    std::map<std::string, std::filesystem::path> tensorToShard; ///< empty for a single file (all tensors in shards[0])
    std::optional<std::filesystem::path> index;             ///< the index file, when sharded
    std::optional<std::uint64_t> totalSize;                 ///< the index's metadata.total_size, if given
};

/// Finds the weights of `modelFolder`: model.safetensors when present (as transformers prefers),
/// else the index and its shards. Throws Error(InvalidInput) naming the folder or index and the rule.
CheckpointFiles locateCheckpoint(const std::filesystem::path &modelFolder);

/// Parses an index file's text; `folder` is where shards must live. Exposed for tests.
CheckpointFiles parseShardIndex(const std::string &text, const std::filesystem::path &folder,
                                const std::filesystem::path &indexPath);

/// "model-00002-of-00005.safetensors" (1-based index, as save_pretrained names shards).
std::string shardFileName(int index, int count);

} // namespace engine::io
