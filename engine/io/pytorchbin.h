#pragma once
// Legacy PyTorch checkpoints: `pytorch_model.bin` (the zip that torch.save writes since PyTorch 1.6)
// and the sharded `pytorch_model.bin.index.json`. Loading never executes code: the pickle inside is
// read by a restricted unpickler that only knows state-dict contents (see unpickler.h), as
// PyTorch's `torch.load(weights_only=True)` does. Engine-internal (torch header).
//
// How to use:
//   NamedTensors weights = loadPytorchBin(folderOrFile);   // in file order; CPU tensors
// Tensors that shared a storage in Python share memory here too (tied weights, views); a
// non-contiguous view stays non-contiguous. Big-endian files (byteorder "big") are byte-swapped.

#include "engine/io/unpickler.h"

#include <filesystem>

namespace engine::io {

/// "pytorch_model.bin"
inline constexpr const char *kPytorchBinName = "pytorch_model.bin";
/// "pytorch_model.bin.index.json"
inline constexpr const char *kPytorchBinIndexName = "pytorch_model.bin.index.json";

/// Loads a legacy checkpoint: a torch.save file, a `*.index.json` of shards (weight_map entries must
/// name files inside the index's folder), or a folder holding pytorch_model.bin or its index.
/// Throws engine::Error naming the file and the problem.
NamedTensors loadPytorchBin(const std::filesystem::path &path);

/// Loads one torch.save zip file holding a state dict.
NamedTensors loadPytorchBinFile(const std::filesystem::path &file);

/// Loads a torch.save zip file holding a list of tensors (`torch.save([t1, t2])`), e.g. a module's inputs.
std::vector<torch::Tensor> loadTensorListFile(const std::filesystem::path &file);

/// Loads every shard listed by a pytorch_model.bin.index.json, shard by shard in name order; each
/// tensor of the weight_map must be in its shard, and no name may appear in two shards.
NamedTensors loadPytorchBinIndex(const std::filesystem::path &indexFile);

} // namespace engine::io
