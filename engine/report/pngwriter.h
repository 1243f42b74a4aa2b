#pragma once
// Encoding an RGB image as a PNG file's bytes (zlib deflate, no filtering).

#include <cstdint>
#include <string>
#include <vector>

namespace engine::report {

/// PNG bytes of a width x height 8-bit RGB image; `rgb` holds 3 * width * height bytes, rows top to
/// bottom. Throws Error(Internal) when the sizes disagree or zlib fails.
std::string encodePng(int width, int height, const std::vector<uint8_t> &rgb);

} // namespace engine::report
