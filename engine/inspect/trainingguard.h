#pragma once
// The always-on guard for training: cheap checks a trainer can leave on every step. It watches the
// tensors autograd saves (version only: no op trace, no checksums) and checks the loss and the
// gradients for NaN/Inf. When it fires, record that step fully with inspectStep (stepinspector.h)
// and hand the report to the Inspect page. Engine-internal (torch headers).
//
// How to use (in a training step):
//   TrainingGuard guard;
//   guard.beginStep();
//   torch::Tensor loss = forward();
//   GuardVerdict v = guard.beforeBackward(loss);   // fired: NaN loss, or backward would fail
//   if (!v.fired) { loss.backward(); v = guard.afterBackward(params); }
//   guard.endStep();

#include <memory>
#include <string>
#include <vector>

#include <ATen/core/Tensor.h>

namespace engine::inspect {

class StepRecorder;

/// What the guard saw.
struct GuardVerdict {
    bool fired = false;
    std::string reason; ///< "loss is NaN", "a tensor saved for BmmBackward0 was modified in place ...", ...
};

/// Cheap per-step checks; see the header comment. Not thread-safe; one step at a time.
class TrainingGuard {
public:
    TrainingGuard();
    ~TrainingGuard();

    /// Starts watching saved tensors (call before forward). When another inspection is recording in
    /// this process, the step is not watched (watching() is false); the other checks still work.
    void beginStep();
    /// Whether saved tensors are watched in this step.
    bool watching() const;
    /// Loss finite? Any saved tensor already stale (backward would raise)? Call after forward.
    GuardVerdict beforeBackward(const at::Tensor &loss);
    /// beforeBackward's second half, for a caller that checks the loss itself: any saved tensor stale?
    GuardVerdict checkSavedTensors(const at::Tensor &loss);
    /// Every gradient finite? Call after backward.
    GuardVerdict afterBackward(const std::vector<at::Tensor> &parameters);
    /// Stops watching (also done by the destructor and the next beginStep).
    void endStep();

private:
    std::unique_ptr<StepRecorder> m_recorder;
};

} // namespace engine::inspect
