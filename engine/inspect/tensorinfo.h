#pragma once
// Torch tensors described as the report's plain values. Engine-internal (torch headers).

#include "engine/inspect/report.h"

#include <cstdint>
#include <string>

#include <ATen/core/Tensor.h>

namespace engine::inspect {

/// "float32", "bfloat16", "int64", ... (PyTorch's Python names without "torch.").
std::string dtypeName(c10::ScalarType type);

/// Shape, dtype, device and current version (versionBefore); storageId left 0.
TensorInfo describeTensor(const at::Tensor &t);

/// "[1, 16, 8] float32".
std::string tensorLabel(const at::Tensor &t);

/// "[1, 16, 8]".
std::string shapeText(const std::vector<int64_t> &shape);

/// Rough bytes an op record takes in memory.
int64_t estimateBytes(const OpRecord &record);

/// A 64-bit checksum of the tensor's values (its view, not the whole storage). Runs torch ops.
uint64_t tensorChecksum(const at::Tensor &t);

} // namespace engine::inspect
