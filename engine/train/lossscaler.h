#pragma once
// Dynamic loss scaling for fp16 training, with torch.amp.GradScaler's rules and defaults: the loss is
// multiplied by the scale before backward, the gradients are divided by it before clipping and the
// update; a step whose gradients overflowed (an Inf or NaN) is skipped and the scale halves; after
// 2000 clean steps in a row the scale doubles. Engine-internal.
//
//   LossScaler scaler;
//   scaler.scale(loss).backward();
//   if (scaler.unscale(parameters)) { clip; optimizer.step(); }   // false: overflow, skip the step
//   scaler.update();

#include <torch/types.h>

#include <cstdint>
#include <vector>

namespace engine::train {

class LossScaler {
public:
    static constexpr double kInitialScale = 65536.0; ///< 2^16, GradScaler's init_scale
    static constexpr double kGrowthFactor = 2.0;
    static constexpr double kBackoffFactor = 0.5;
    static constexpr int64_t kGrowthInterval = 2000;

    /// The loss times the scale (in float32).
    torch::Tensor scale(const torch::Tensor &loss) const;
    /// Divides every defined gradient by the scale; true when all of them are finite. Records the
    /// result for update().
    bool unscale(const std::vector<torch::Tensor> &parameters);
    /// After the step (taken or skipped): backs off after an overflow, grows after kGrowthInterval clean steps.
    void update();

    double currentScale() const { return m_scale; }
    int64_t growthTracker() const { return m_growthTracker; }
    /// Restores a checkpointed state.
    void restore(double scale, int64_t growthTracker);

private:
    double m_scale = kInitialScale;
    int64_t m_growthTracker = 0;
    bool m_foundInf = false;
};

} // namespace engine::train
