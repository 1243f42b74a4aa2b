#include "engine/io/dtypetorch.h"

#include <torch/version.h>

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
    default: return std::nullopt; // unsigned 16/32/64-bit and the 8/6/4-bit floats
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
