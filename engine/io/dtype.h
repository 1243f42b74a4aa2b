#pragma once
// The element types of the safetensors format, independent of torch: header-only reads, planners
// and the UI use these without compiling torch headers.

#include <cstdint>
#include <optional>
#include <string_view>

namespace engine::io {

/// A safetensors dtype. Declared in the reference implementation's order, which is increasing
/// alignment: writers sort tensors by this order, descending, then by name.
enum class DType : std::uint8_t {
    Bool,
    F4,
    F6E2M3,
    F6E3M2,
    U8,
    I8,
    F8E5M2,
    F8E4M3,
    F8E8M0,
    F8E4M3Fnuz,
    F8E5M2Fnuz,
    I16,
    U16,
    F16,
    BF16,
    I32,
    U32,
    F32,
    C64,
    F64,
    I64,
    U64,
};

/// The name as it appears in a safetensors header: "BOOL", "F8_E4M3", "BF16", ...
std::string_view dtypeName(DType dtype);

/// The dtype for a header name (exact, case-sensitive), or nothing when the name is unknown.
std::optional<DType> parseDType(std::string_view name);

/// Bits per element: 4 (F4), 6 (F6_*), 8, 16, 32 or 64.
unsigned dtypeBits(DType dtype);

} // namespace engine::io
