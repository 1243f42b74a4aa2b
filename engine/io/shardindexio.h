#pragma once
// Loading and saving whole checkpoints (one file or shards + index) as torch tensors.
//
// How to use:
//     auto weights = loadCheckpoint(folder);                        // name -> zero-copy tensor
//     forEachCheckpointTensor(folder, {.dtype = torch::kFloat},    // streaming, one tensor at a time
//                             [&](const std::string &name, torch::Tensor t) { model.set(name, t); });
//     writeShardedSafetensors(out, tensors, 5'000'000'000);        // save_pretrained layout

#include "engine/io/safetensorsfile.h"
#include "engine/io/shardindex.h"

#include <functional>

namespace engine::io {

/// Calls `visit` once per tensor of the checkpoint in `modelFolder`, shard by shard (each shard is
/// opened once). With a single file every tensor is visited; with an index exactly the tensors it
/// lists, and each must be in its shard (Error(InvalidInput) names the index, tensor and shard).
void forEachCheckpointTensor(const std::filesystem::path &modelFolder, const TensorLoadOptions &options,
                             const std::function<void(const std::string &, torch::Tensor)> &visit);

/// forEachCheckpointTensor with the load options chosen per tensor from its file's header and entry
/// (for loaders that put each tensor somewhere else), the entry passed on to `visit`.
void forEachCheckpointTensorInfo(const std::filesystem::path &modelFolder,
                                 const std::function<TensorLoadOptions(const SafetensorsHeader &, const TensorInfo &)> &optionsFor,
                                 const std::function<void(const TensorInfo &, torch::Tensor)> &visit);

/// All tensors of the checkpoint in `modelFolder`, by name (see forEachCheckpointTensor).
std::map<std::string, torch::Tensor> loadCheckpoint(const std::filesystem::path &modelFolder,
                                                    const TensorLoadOptions &options = {});

/// Writes `tensors` into `folder` as save_pretrained does: one model.safetensors when they fit in
/// `maxShardBytes`, otherwise model-0000i-of-0000N.safetensors shards (filled in the given order;
/// a tensor larger than the limit gets a shard of its own) plus model.safetensors.index.json with
/// metadata.total_size and a sorted weight_map. Every file carries `metadata` (default
/// {"format": "pt"}, which transformers requires). Weight files of an earlier save that the new
/// layout does not use are removed afterwards. Returns the files written.
CheckpointFiles writeShardedSafetensors(const std::filesystem::path &folder,
                                        const std::vector<std::pair<std::string, torch::Tensor>> &tensors,
                                        std::uint64_t maxShardBytes,
                                        const std::map<std::string, std::string> &metadata = {{"format", "pt"}});

} // namespace engine::io
