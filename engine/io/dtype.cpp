#include "engine/io/dtype.h"

#include <array>
#include <utility>

namespace engine::io {
namespace {

struct DTypeEntry {
    DType dtype;
    std::string_view name;
    unsigned bits;
};

constexpr std::array<DTypeEntry, 22> kDTypes{{
    {DType::Bool, "BOOL", 8},
    {DType::F4, "F4", 4},
    {DType::F6E2M3, "F6_E2M3", 6},
    {DType::F6E3M2, "F6_E3M2", 6},
    {DType::U8, "U8", 8},
    {DType::I8, "I8", 8},
    {DType::F8E5M2, "F8_E5M2", 8},
    {DType::F8E4M3, "F8_E4M3", 8},
    {DType::F8E8M0, "F8_E8M0", 8},
    {DType::F8E4M3Fnuz, "F8_E4M3FNUZ", 8},
    {DType::F8E5M2Fnuz, "F8_E5M2FNUZ", 8},
    {DType::I16, "I16", 16},
    {DType::U16, "U16", 16},
    {DType::F16, "F16", 16},
    {DType::BF16, "BF16", 16},
    {DType::I32, "I32", 32},
    {DType::U32, "U32", 32},
    {DType::F32, "F32", 32},
    {DType::C64, "C64", 64},
    {DType::F64, "F64", 64},
    {DType::I64, "I64", 64},
    {DType::U64, "U64", 64},
}};

const DTypeEntry &entry(DType dtype) { return kDTypes[static_cast<size_t>(dtype)]; }

} // namespace

std::string_view dtypeName(DType dtype) { return entry(dtype).name; }

unsigned dtypeBits(DType dtype) { return entry(dtype).bits; }

std::optional<DType> parseDType(std::string_view name)
{
    for (const DTypeEntry &candidate : kDTypes) {
        if (candidate.name == name)
            return candidate.dtype;
    }
    return std::nullopt;
}

} // namespace engine::io
