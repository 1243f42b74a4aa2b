#include "engine/io/safetensorslayout.h"

#include "engine/core/error.h"

#include <algorithm>
#include <limits>

namespace engine::io {
namespace {

std::string shapeText(const std::vector<std::uint64_t> &shape)
{
    std::string text = "[";
    for (size_t i = 0; i < shape.size(); ++i) {
        if (i)
            text += ", ";
        text += std::to_string(shape[i]);
    }
    text += ']';
    return text;
}

std::string offsetsText(const TensorInfo &info)
{
    std::string text = "[";
    text += std::to_string(info.begin);
    text += ", ";
    text += std::to_string(info.end);
    text += ']';
    return text;
}

void checkByteCount(const TensorInfo &info, const std::string &fileLabel)
{
    const auto fail = [&](const std::string &rule) {
        throw invalidInput(fileLabel + ": tensor '" + info.name + "' (" + std::string(dtypeName(info.dtype)) + ", shape "
                           + shapeText(info.shape) + "): " + rule);
    };
    const std::optional<std::uint64_t> numel = checkedNumel(info.shape);
    if (!numel)
        fail("the element count overflows 64 bits");
    const std::uint64_t bits = dtypeBits(info.dtype);
    if (*numel > std::numeric_limits<std::uint64_t>::max() / bits)
        fail("the bit count overflows 64 bits");
    const std::uint64_t totalBits = *numel * bits;
    if (totalBits % 8 != 0)
        fail("holds " + std::to_string(totalBits) + " bits, not a whole number of bytes");
    if (info.end - info.begin != totalBits / 8)
        fail("needs " + std::to_string(totalBits / 8) + " bytes but data_offsets " + offsetsText(info) + " hold "
             + std::to_string(info.end - info.begin) + " (end - begin must equal numel x bits / 8)");
}

} // namespace

std::optional<std::uint64_t> checkedNumel(const std::vector<std::uint64_t> &shape)
{
    std::uint64_t numel = 1;
    for (const std::uint64_t dim : shape) {
        if (dim != 0 && numel > std::numeric_limits<std::uint64_t>::max() / dim)
            return std::nullopt;
        numel *= dim;
    }
    return numel;
}

void validateSafetensorsLayout(SafetensorsHeader &header, const std::string &fileLabel)
{
    std::sort(header.tensors.begin(), header.tensors.end(), [](const TensorInfo &a, const TensorInfo &b) {
        return a.begin != b.begin ? a.begin < b.begin : a.end < b.end;
    });
    std::uint64_t expected = 0;
    const TensorInfo *previous = nullptr;
    for (const TensorInfo &info : header.tensors) {
        if (info.end < info.begin)
            throw invalidInput(fileLabel + ": tensor '" + info.name + "' has data_offsets " + offsetsText(info)
                               + " whose end is before its begin");
        if (info.begin < expected)
            throw invalidInput(fileLabel + ": tensor '" + info.name + "' data_offsets " + offsetsText(info)
                               + " overlap tensor '" + previous->name + "' " + offsetsText(*previous)
                               + " (tensors must not overlap)");
        if (info.begin > expected)
            throw invalidInput(fileLabel + ": gap of " + std::to_string(info.begin - expected) + " bytes before tensor '"
                               + info.name + "' at data_offsets " + offsetsText(info)
                               + (previous ? " after tensor '" + previous->name + "'" : std::string(" (the first tensor must start at 0)"))
                               + " (tensors must be contiguous)");
        checkByteCount(info, fileLabel);
        expected = info.end;
        previous = &info;
    }
    const std::uint64_t available = header.fileSize - header.dataOffset;
    if (expected > available)
        throw invalidInput(fileLabel + ": file is truncated: the tensors need " + std::to_string(expected)
                           + " bytes of data after the header but the file holds " + std::to_string(available));
    if (expected < available)
        throw invalidInput(fileLabel + ": " + std::to_string(available - expected)
                           + " bytes at the end of the file belong to no tensor (the buffer must cover the rest of the file exactly)");
}

} // namespace engine::io
