#pragma once
// Byte sizes as people and Accelerate write them: "15GiB", "6.5GiB", "13GB", "512MiB", 1073741824.
//
// How to use:
//   int64_t budget = engine::parseByteSize("15GiB", "--max-memory 0");  // 16106127360
//   engine::formatBytes(budget);  // "15.00 GiB" (engine/core/format.h)
//
// Units follow Accelerate's convert_file_size_to_int: KB/MB/GB/TB are powers of 10, KiB/MiB/GiB/TiB
// powers of 2, case-insensitive; a fractional number is allowed and the product truncated to whole
// bytes; a plain integer (optionally with a trailing "B") is bytes. A lowercase "b" after K/M/G/T
// ("5Gb") means bits, as in Accelerate (bytes = bits / 8). TB/TiB are an extension (Accelerate stops at G).

#include <cstdint>
#include <string>
#include <string_view>

namespace engine {

/// Parses a size; throws Error(InvalidInput) naming `what` for a malformed, negative or zero size, or one
/// above 2^62 bytes.
int64_t parseByteSize(std::string_view text, const std::string &what);

} // namespace engine
