#pragma once
// Helpers for the engine/io tests: crafting safetensors bytes by hand.

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>

namespace io_test {

/// 8-byte little-endian length, then `header`, then `data`. `length` overrides the prefix.
std::string safetensorsBytes(const std::string &header, const std::string &data,
                             std::optional<std::uint64_t> length = std::nullopt);

/// Writes `bytes` to `path` (plain write, for crafted files).
void writeBytes(const std::filesystem::path &path, const std::string &bytes);

/// The whole content of `path`.
std::string readBytes(const std::filesystem::path &path);

/// `count` zero bytes.
inline std::string zeros(size_t count) { return std::string(count, '\0'); }

} // namespace io_test
