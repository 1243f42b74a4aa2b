#pragma once
// Test helpers (torch-free): safetensors files that hold only a header. The data buffer is left a hole
// (a sparse file of zeros), so a checkpoint of any shape costs a few bytes of disk, and the planner,
// which reads headers only, sees a valid file.

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace testing_support {

/// One tensor of a header: full name, shape, safetensors dtype name ("F16", "BF16", "F32", "BOOL", ...).
struct HeaderTensor {
    std::string name;
    std::vector<int64_t> shape;
    std::string dtype = "F16";
};

/// Writes `path`: the header of `tensors` (in this order of offsets, padded to 8 bytes) and a zero buffer of
/// the size the header implies.
void writeSafetensorsHeaders(const std::filesystem::path &path, const std::vector<HeaderTensor> &tensors);

/// Writes `shards` files named as save_pretrained names them (model-00001-of-0000N.safetensors), the tensors
/// dealt out in order, and model.safetensors.index.json with their weight_map and total_size.
void writeShardedHeaders(const std::filesystem::path &folder, const std::vector<HeaderTensor> &tensors, int shards);

/// The safetensors name of a torch dtype name ("bfloat16" -> "BF16").
std::string safetensorsDtypeName(const std::string &torchName);

} // namespace testing_support
