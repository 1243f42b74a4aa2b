#pragma once
// Torch tensors described as the report's plain values. Engine-internal (torch headers).

#include "engine/inspect/inspectionreport.h"

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

/// A 64-bit checksum of the tensor's values (its view, not the whole storage). CPU tensors are read
/// in place (a copy only when not contiguous), split over libtorch's intra-op threads.
uint64_t tensorChecksum(const at::Tensor &t);

/// Whether a floating-point tensor holds a NaN or an Inf. CPU float32/float64/float16/bfloat16 are
/// read in place by their exponent bits (no allocation, no torch op, split over the intra-op threads);
/// other dtypes and devices use torch's isfinite.
bool hasNonFinite(const at::Tensor &t);

} // namespace engine::inspect
