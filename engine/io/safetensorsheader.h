#pragma once
// Reading the header of a safetensors file without torch and without touching tensor data.
//
// How to use:
//     const SafetensorsHeader header = readSafetensorsHeader("model.safetensors");
//     for (const TensorInfo &t : header.tensors)   // sorted by offset
//         show(t.name, dtypeName(t.dtype), t.shape, t.end - t.begin);
//
// Every rule of the format (the huggingface/safetensors specification) is checked: a violation throws engine::Error
// (InvalidInput) whose one-line message names the file and the rule.

#include "engine/io/dtype.h"

#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace engine::io {

/// The largest header the reference implementation accepts, in bytes.
inline constexpr std::uint64_t kMaxSafetensorsHeaderBytes = 100'000'000;

/// One tensor as the header describes it. Offsets are relative to the data buffer, [begin, end).
struct TensorInfo {
    std::string name;
    DType dtype = DType::F32;
    std::vector<std::uint64_t> shape;
    std::uint64_t begin = 0;
    std::uint64_t end = 0;

    /// Number of elements (product of the shape; 1 for a scalar). Validated not to overflow.
    std::uint64_t numel() const;
    /// end - begin.
    std::uint64_t byteSize() const { return end - begin; }
};

/// A validated header: tensors sorted by offset, contiguous from 0, covering the buffer exactly.
struct SafetensorsHeader {
    std::vector<TensorInfo> tensors;
    std::map<std::string, std::string> metadata; ///< "__metadata__", string to string
    std::uint64_t headerSize = 0;                ///< N: the JSON bytes, padding included
    std::uint64_t dataOffset = 0;                ///< 8 + N: where the buffer starts in the file
    std::uint64_t fileSize = 0;

    /// The tensor with this name, or nullptr.
    const TensorInfo *find(std::string_view name) const;
    /// Sum of the tensors' byte sizes (= fileSize - dataOffset).
    std::uint64_t dataSize() const { return fileSize - dataOffset; }
};

/// Reads and validates the header of `path`: reads 8 + N bytes, never the tensor data.
/// Throws Error(Io) when the file cannot be read, Error(InvalidInput) when it breaks a rule.
SafetensorsHeader readSafetensorsHeader(const std::filesystem::path &path);

/// Checks the 8-byte little-endian length prefix against the limit and the file size; returns N.
/// `fileLabel` names the file in error messages.
std::uint64_t checkSafetensorsHeaderLength(const unsigned char prefix[8], std::uint64_t fileSize,
                                           const std::string &fileLabel);

/// Parses and validates header JSON (the N bytes after the prefix) of a file of `fileSize` bytes.
SafetensorsHeader parseSafetensorsHeader(std::string_view json, std::uint64_t fileSize,
                                         const std::string &fileLabel);

} // namespace engine::io
