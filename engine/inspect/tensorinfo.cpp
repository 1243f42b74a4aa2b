#include "engine/inspect/tensorinfo.h"

#include <torch/torch.h>

#include <cstring>

namespace engine::inspect {

std::string dtypeName(c10::ScalarType type)
{
    switch (type) {
    case c10::ScalarType::Float: return "float32";
    case c10::ScalarType::Double: return "float64";
    case c10::ScalarType::Half: return "float16";
    case c10::ScalarType::BFloat16: return "bfloat16";
    case c10::ScalarType::Long: return "int64";
    case c10::ScalarType::Int: return "int32";
    case c10::ScalarType::Short: return "int16";
    case c10::ScalarType::Char: return "int8";
    case c10::ScalarType::Byte: return "uint8";
    case c10::ScalarType::Bool: return "bool";
    case c10::ScalarType::ComplexFloat: return "complex64";
    case c10::ScalarType::ComplexDouble: return "complex128";
    default: return c10::toString(type);
    }
}

TensorInfo describeTensor(const at::Tensor &t)
{
    TensorInfo info;
    if (!t.defined())
        return info;
    info.shape = t.sizes().vec();
    info.dtype = dtypeName(t.scalar_type());
    info.device = t.device().str();
    if (!t.is_inference())
        info.versionBefore = static_cast<int64_t>(t._version());
    return info;
}

std::string shapeText(const std::vector<int64_t> &shape)
{
    std::string text = "[";
    for (size_t i = 0; i < shape.size(); ++i)
        text += (i ? ", " : "") + std::to_string(shape[i]);
    return text + "]";
}

std::string tensorLabel(const at::Tensor &t)
{
    return shapeText(t.sizes().vec()) + " " + dtypeName(t.scalar_type());
}

int64_t estimateBytes(const OpRecord &record)
{
    int64_t bytes = static_cast<int64_t>(sizeof(OpRecord) + record.name.size() + record.module.size());
    for (const TensorInfo &info : record.inputs)
        bytes += static_cast<int64_t>(sizeof(TensorInfo) + 8 * info.shape.size() + info.dtype.size() + info.device.size());
    return bytes;
}

uint64_t tensorChecksum(const at::Tensor &t)
{
    if (!t.defined() || t.numel() == 0)
        return 0;
    torch::NoGradGuard noGrad;
    if (t.device().is_cpu()) {
        // Sum of 64-bit words times odd weights (mod 2^64): any single changed word changes it, and the
        // loop vectorizes (a byte-serial hash cost more than the step itself on big activations).
        const at::Tensor c = t.detach().contiguous();
        const auto *bytes = static_cast<const unsigned char *>(c.data_ptr());
        const size_t size = static_cast<size_t>(c.numel()) * c.element_size();
        uint64_t hash = 1469598103934665603ull;
        size_t i = 0;
        for (; i + 8 <= size; i += 8) {
            uint64_t word;
            std::memcpy(&word, bytes + i, 8);
            hash += word * (2 * uint64_t(i) + 1);
        }
        for (; i < size; ++i)
            hash += uint64_t(bytes[i]) * (2 * uint64_t(i) + 1);
        return hash;
    }
    // Other devices: two weighted sums in float64 (a change of any value moves them).
    const at::Tensor d = t.detach().reshape({-1}).to(torch::kDouble);
    const at::Tensor weights = torch::arange(1, d.numel() + 1, d.options()).remainder(7919.0) + 1.0;
    const double a = d.sum().item<double>();
    const double b = (d * weights).sum().item<double>();
    uint64_t ua, ub;
    std::memcpy(&ua, &a, 8);
    std::memcpy(&ub, &b, 8);
    return ua ^ (ub * 1099511628211ull);
}

} // namespace engine::inspect
