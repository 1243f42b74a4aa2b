#pragma once
// Internal to engine/io: the offset and size rules of a safetensors header.

#include "engine/io/safetensorsheader.h"

#include <optional>
#include <string>

namespace engine::io {

/// numel of `shape`, or nothing when the product overflows 64 bits.
std::optional<std::uint64_t> checkedNumel(const std::vector<std::uint64_t> &shape);

/// Sorts `header.tensors` by offset and checks: start at 0, contiguous (no gap, no overlap),
/// end - begin == numel x bits / 8 without overflow, and the buffer covers the rest of the file
/// exactly. Needs headerSize, dataOffset and fileSize set. Throws Error(InvalidInput).
void validateSafetensorsLayout(SafetensorsHeader &header, const std::string &fileLabel);

} // namespace engine::io
