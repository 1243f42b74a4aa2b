#include "engine/report/pngwriter.h"

#include "engine/core/error.h"

#include <zlib.h>

#include <cstring>

namespace engine::report {
namespace {

void appendBigEndian32(std::string &out, uint32_t value)
{
    out += static_cast<char>((value >> 24) & 0xFF);
    out += static_cast<char>((value >> 16) & 0xFF);
    out += static_cast<char>((value >> 8) & 0xFF);
    out += static_cast<char>(value & 0xFF);
}

/// Length, type, data and the CRC-32 of type + data.
void appendChunk(std::string &out, const char (&type)[5], const std::string &data)
{
    appendBigEndian32(out, static_cast<uint32_t>(data.size()));
    const size_t typeStart = out.size();
    out.append(type, 4);
    out += data;
    const auto *bytes = reinterpret_cast<const Bytef *>(out.data() + typeStart);
    appendBigEndian32(out, static_cast<uint32_t>(crc32(0L, bytes, static_cast<uInt>(4 + data.size()))));
}

} // namespace

std::string encodePng(int width, int height, const std::vector<uint8_t> &rgb)
{
    if (width <= 0 || height <= 0 || rgb.size() != static_cast<size_t>(width) * height * 3)
        throw Error(ErrorKind::Internal, "encodePng: pixel buffer does not match " + std::to_string(width) + "x" +
                                             std::to_string(height));

    // Each row starts with its filter type: 0 (none).
    const size_t rowBytes = static_cast<size_t>(width) * 3;
    std::vector<uint8_t> raw(static_cast<size_t>(height) * (rowBytes + 1));
    for (int y = 0; y < height; ++y) {
        uint8_t *row = raw.data() + static_cast<size_t>(y) * (rowBytes + 1);
        row[0] = 0;
        std::memcpy(row + 1, rgb.data() + static_cast<size_t>(y) * rowBytes, rowBytes);
    }
    uLongf compressedSize = compressBound(static_cast<uLong>(raw.size()));
    std::string compressed(compressedSize, '\0');
    const int rc = compress2(reinterpret_cast<Bytef *>(compressed.data()), &compressedSize, raw.data(),
                             static_cast<uLong>(raw.size()), Z_DEFAULT_COMPRESSION);
    if (rc != Z_OK)
        throw Error(ErrorKind::Internal, "encodePng: zlib compress2 failed with code " + std::to_string(rc));
    compressed.resize(compressedSize);

    std::string header;
    appendBigEndian32(header, static_cast<uint32_t>(width));
    appendBigEndian32(header, static_cast<uint32_t>(height));
    header += static_cast<char>(8); // bit depth
    header += static_cast<char>(2); // colour type: truecolour RGB
    header += static_cast<char>(0); // compression: deflate
    header += static_cast<char>(0); // filter method: adaptive (we use type 0 on every row)
    header += static_cast<char>(0); // no interlace

    std::string png("\x89PNG\r\n\x1a\n", 8);
    appendChunk(png, "IHDR", header);
    appendChunk(png, "IDAT", compressed);
    appendChunk(png, "IEND", {});
    return png;
}

} // namespace engine::report
