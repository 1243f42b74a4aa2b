#pragma once
// Loading and saving safetensors files as torch tensors.
//
// How to use:
//     const SafetensorsFile file = SafetensorsFile::open(path);       // maps the file, checks the header
//     torch::Tensor w = file.tensor("model.norm.weight");                // zero-copy over the mapping
//     torch::Tensor h = file.tensor("lm_head.weight", {.dtype = torch::kFloat}); // converted copy
//     writeSafetensors(out, {{"w", w}}, {{"format", "pt"}});            // atomic
//
// Zero-copy tensors alias the file's pages privately (copy-on-write): reading costs no copy, an
// in-place edit copies only the touched pages and never reaches the file. A tensor keeps the
// mapping alive after the SafetensorsFile is gone. Replacing the file by rename (as
// writeSafetensors does) is safe; truncating it in place while tensors live is not (SIGBUS).

#include "engine/io/safetensorsheader.h"

#include <torch/types.h>

#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace engine::io {

class MappedFile;

/// How tensor() materialises a tensor. The defaults give a zero-copy CPU tensor of the file's dtype.
struct TensorLoadOptions {
    std::optional<torch::Dtype> dtype; ///< convert to this dtype (a copy when it differs)
    torch::Device device = torch::kCPU; ///< move to this device (a copy when not CPU)
    bool copy = false;                  ///< own the memory: read with pread into a fresh tensor
};

/// An open safetensors file: the validated header plus a private mapping of the file.
class SafetensorsFile {
public:
    /// Maps `path` and validates its header (no tensor data is read). Throws engine::Error.
    static SafetensorsFile open(const std::filesystem::path &path);

    const SafetensorsHeader &header() const { return m_header; }
    const std::filesystem::path &path() const { return m_path; }
    /// Whether the file holds a tensor of this name.
    bool contains(const std::string &name) const { return m_index.count(name) != 0; }

    /// The tensor `name`: zero-copy when the options allow it and the data is aligned for its
    /// dtype, otherwise a copy. Throws Error(InvalidInput) for an unknown name or a dtype this
    /// libtorch cannot hold (named in the message).
    torch::Tensor tensor(const std::string &name, const TensorLoadOptions &options = {}) const;

private:
    SafetensorsFile() = default;

    std::filesystem::path m_path;
    SafetensorsHeader m_header;
    std::unordered_map<std::string, size_t> m_index;
    std::shared_ptr<MappedFile> m_file;
};

/// Writes `tensors` as a safetensors file at `path`, atomically (temp file, fsync, rename).
/// Tensors are copied to contiguous CPU memory one at a time as they are written. Order in the
/// file: dtype alignment descending, then name (the reference implementation's order), so equal
/// input gives identical bytes. `__metadata__` keys are written sorted; it is omitted when empty.
/// Throws Error(InvalidInput) for duplicate names, the name "__metadata__" or an unsupported dtype.
void writeSafetensors(const std::filesystem::path &path,
                      const std::vector<std::pair<std::string, torch::Tensor>> &tensors,
                      const std::map<std::string, std::string> &metadata = {});

} // namespace engine::io
