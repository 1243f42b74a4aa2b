#pragma once
// Mapping between safetensors dtypes and torch scalar types (torch header: keep out of Qt code).

#include "engine/io/dtype.h"

#include <c10/core/ScalarType.h>

#include <optional>
#include <string>

namespace engine::io {

/// The torch scalar type that holds `dtype` bit for bit, or nothing when this libtorch has none
/// (libtorch 1.13: U16, U32, U64, the F8 families, F6 and F4; 2.3+: only F8_E8M0, F6 and F4).
std::optional<c10::ScalarType> toTorchDtype(DType dtype);

/// The safetensors dtype of a torch scalar type, or nothing (ComplexDouble, ComplexHalf, quantized).
std::optional<DType> fromTorchDtype(c10::ScalarType type);

/// "libtorch 1.13": the version this code was compiled against, for error messages.
std::string torchVersionText();

} // namespace engine::io
