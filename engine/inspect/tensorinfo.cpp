#include "engine/inspect/tensorinfo.h"

#include <torch/torch.h>

#include <ATen/Parallel.h>

#include <algorithm>
#include <atomic>
#include <cstring>

namespace engine::inspect {

namespace {

/// Runs `body(begin, end)` over [0, count) in chunks on libtorch's intra-op pool, or inline when the
/// range is small or we are already inside a parallel region.
template <typename Body>
void forChunks(int64_t count, int64_t grain, const Body &body)
{
    if (count < 2 * grain || at::in_parallel_region() || at::get_num_threads() < 2)
        body(int64_t(0), count);
    else
        at::parallel_for(0, count, grain, body);
}

/// Any element whose exponent bits are all ones (Inf or NaN) among `count` words of type Word.
template <typename Word>
bool exponentAllOnes(const void *data, int64_t count, Word mask)
{
    const auto *words = static_cast<const Word *>(data);
    std::atomic<bool> found{false};
    forChunks(count, int64_t(1) << 16, [&](int64_t begin, int64_t end) {
        constexpr int64_t kBlock = 4096; // stop early once a block has found one
        for (int64_t block = begin; block < end && !found.load(std::memory_order_relaxed); block += kBlock) {
            const int64_t stop = std::min(end, block + kBlock);
            Word any = 0;
            for (int64_t i = block; i < stop; ++i)
                any |= static_cast<Word>((words[i] & mask) == mask); // branch-free: vectorizes
            if (any)
                found.store(true, std::memory_order_relaxed);
        }
    });
    return found.load();
}

} // namespace

bool hasNonFinite(const at::Tensor &t)
{
    if (!t.defined() || !t.is_floating_point() || t.numel() == 0)
        return false;
    if (t.device().is_cpu() && t.layout() == c10::kStrided) {
        const at::Tensor c = t.is_contiguous() ? t : t.contiguous();
        const void *data = c.data_ptr();
        const int64_t n = c.numel();
        switch (c.scalar_type()) {
        case c10::ScalarType::Float: return exponentAllOnes<uint32_t>(data, n, 0x7f800000u);
        case c10::ScalarType::Double: return exponentAllOnes<uint64_t>(data, n, 0x7ff0000000000000ull);
        case c10::ScalarType::Half: return exponentAllOnes<uint16_t>(data, n, uint16_t(0x7c00));
        case c10::ScalarType::BFloat16: return exponentAllOnes<uint16_t>(data, n, uint16_t(0x7f80));
        default: break;
        }
    }
    torch::NoGradGuard noGrad;
    return !t.isfinite().all().item<bool>();
}

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
        // The sum is position-weighted, so chunks summed apart add up to the same value.
        const at::Tensor c = t.is_contiguous() ? t : t.contiguous();
        const auto *bytes = static_cast<const unsigned char *>(c.data_ptr());
        const size_t size = static_cast<size_t>(c.numel()) * c.element_size();
        const int64_t words = static_cast<int64_t>(size / 8);
        std::atomic<uint64_t> total{1469598103934665603ull};
        forChunks(words, int64_t(1) << 15, [&](int64_t begin, int64_t end) {
            uint64_t hash = 0;
            for (int64_t w = begin; w < end; ++w) {
                uint64_t word;
                std::memcpy(&word, bytes + 8 * w, 8);
                hash += word * (16 * uint64_t(w) + 1);
            }
            total.fetch_add(hash, std::memory_order_relaxed);
        });
        uint64_t hash = total.load();
        for (size_t i = 8 * static_cast<size_t>(words); i < size; ++i)
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
