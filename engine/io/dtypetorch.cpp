#include "engine/io/dtypetorch.h"

#include "engine/core/torchversion.h"

namespace engine::io {

std::optional<c10::ScalarType> toTorchDtype(DType dtype)
{
    switch (dtype) {
    case DType::Bool: return c10::ScalarType::Bool;
    case DType::U8: return c10::ScalarType::Byte;
    case DType::I8: return c10::ScalarType::Char;
    case DType::I16: return c10::ScalarType::Short;
    case DType::I32: return c10::ScalarType::Int;
    case DType::I64: return c10::ScalarType::Long;
    case DType::F16: return c10::ScalarType::Half;
    case DType::BF16: return c10::ScalarType::BFloat16;
    case DType::F32: return c10::ScalarType::Float;
    case DType::F64: return c10::ScalarType::Double;
    case DType::C64: return c10::ScalarType::ComplexFloat;
#if TUNEBENCH_TORCH_AT_LEAST(2, 3)
    case DType::U16: return c10::ScalarType::UInt16;
    case DType::U32: return c10::ScalarType::UInt32;
    case DType::U64: return c10::ScalarType::UInt64;
#endif
#if TUNEBENCH_TORCH_AT_LEAST(2, 2)
    case DType::F8E5M2: return c10::ScalarType::Float8_e5m2;
    case DType::F8E4M3: return c10::ScalarType::Float8_e4m3fn;
    case DType::F8E5M2Fnuz: return c10::ScalarType::Float8_e5m2fnuz;
    case DType::F8E4M3Fnuz: return c10::ScalarType::Float8_e4m3fnuz;
#endif
    default: return std::nullopt; // what this libtorch has no scalar type for (1.13: U16/U32/U64, F8, F6, F4)
    }
}

std::optional<DType> fromTorchDtype(c10::ScalarType type)
{
    switch (type) {
    case c10::ScalarType::Bool: return DType::Bool;
    case c10::ScalarType::Byte: return DType::U8;
    case c10::ScalarType::Char: return DType::I8;
    case c10::ScalarType::Short: return DType::I16;
    case c10::ScalarType::Int: return DType::I32;
    case c10::ScalarType::Long: return DType::I64;
    case c10::ScalarType::Half: return DType::F16;
    case c10::ScalarType::BFloat16: return DType::BF16;
    case c10::ScalarType::Float: return DType::F32;
    case c10::ScalarType::Double: return DType::F64;
    case c10::ScalarType::ComplexFloat: return DType::C64;
#if TUNEBENCH_TORCH_AT_LEAST(2, 3)
    case c10::ScalarType::UInt16: return DType::U16;
    case c10::ScalarType::UInt32: return DType::U32;
    case c10::ScalarType::UInt64: return DType::U64;
#endif
#if TUNEBENCH_TORCH_AT_LEAST(2, 2)
    case c10::ScalarType::Float8_e5m2: return DType::F8E5M2;
    case c10::ScalarType::Float8_e4m3fn: return DType::F8E4M3;
    case c10::ScalarType::Float8_e5m2fnuz: return DType::F8E5M2Fnuz;
    case c10::ScalarType::Float8_e4m3fnuz: return DType::F8E4M3Fnuz;
#endif
    default: return std::nullopt;
    }
}

std::string torchVersionText()
{
    std::string text = "libtorch ";
    text += std::to_string(TORCH_VERSION_MAJOR);
    text += '.';
    text += std::to_string(TORCH_VERSION_MINOR);
    return text;
}

} // namespace engine::io
