#pragma once
// Automatic mixed precision (torch.autocast) for the engine: matrix products run in bf16 or fp16 while
// the weights, norms, softmax and loss stay in float32. The state is thread-local, as in PyTorch.
//
// How to use:
//   {
//       engine::AutocastScope amp(c10::DeviceType::CPU, at::kBFloat16); // like `with torch.autocast("cpu")`
//       logits = model->forward(ids);
//   }                                                                    // cast weights are dropped here
//   loss.backward();                                                     // backward outside, as in PyTorch
//
// libtorch 1.13 and 2.x name these switches differently; autocast.cpp is the one place that knows.

#include <c10/core/DeviceType.h>
#include <c10/core/ScalarType.h>

namespace engine {

/// Whether autocast is on for the CPU and for CUDA on this thread, and in which dtypes.
struct AutocastState {
    bool cpu = false;
    c10::ScalarType cpuDtype = c10::ScalarType::BFloat16;
    bool cuda = false;
    c10::ScalarType cudaDtype = c10::ScalarType::Half;

    /// The state of the calling thread.
    static AutocastState current();
    bool any() const { return cpu || cuda; }
};

/// Sets autocast for the scope's lifetime and puts the previous state back after it. When the
/// outermost scope ends, the weights cast for it are freed (PyTorch's autocast cache).
class AutocastScope {
public:
    /// Autocast on `device` ("cpu" or "cuda") in `dtype` (bf16 or fp16).
    AutocastScope(c10::DeviceType device, c10::ScalarType dtype);
    /// Exactly `state` (e.g. the forward's, re-entered by a recomputation in backward).
    explicit AutocastScope(const AutocastState &state);
    ~AutocastScope();
    AutocastScope(const AutocastScope &) = delete;
    AutocastScope &operator=(const AutocastScope &) = delete;

private:
    void apply(const AutocastState &state);
    AutocastState m_previous;
};

} // namespace engine
