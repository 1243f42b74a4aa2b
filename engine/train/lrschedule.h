#pragma once

#include <cstdint>

namespace engine::train {

enum class ScheduleKind { Constant, Linear, Cosine };

/// "constant" / "linear" / "cosine".
const char *scheduleName(ScheduleKind kind);

/// Linear warmup to the peak, then constant, or a linear or cosine decay to peak * minRatio at the last step.
struct LearningRateSchedule {
    double peak = 1e-3;
    int64_t warmupSteps = 0;
    int64_t totalSteps = 1;
    double minRatio = 0.1;
    ScheduleKind kind = ScheduleKind::Cosine;

    /// Learning rate for a 1-based step.
    double at(int64_t step) const;
};

} // namespace engine::train
