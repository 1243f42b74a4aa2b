#include "engine/train/lrschedule.h"

#include <algorithm>
#include <cmath>
#include <numbers>

namespace engine::train {

const char *scheduleName(ScheduleKind kind)
{
    switch (kind) {
    case ScheduleKind::Constant:
        return "constant";
    case ScheduleKind::Linear:
        return "linear";
    case ScheduleKind::Cosine:
        break;
    }
    return "cosine";
}

double LearningRateSchedule::at(int64_t step) const
{
    if (warmupSteps > 0 && step <= warmupSteps)
        return peak * static_cast<double>(step) / static_cast<double>(warmupSteps);
    const int64_t decaySteps = totalSteps - warmupSteps;
    if (decaySteps <= 0)
        return peak;
    if (kind == ScheduleKind::Constant)
        return peak;
    const double progress = std::clamp(static_cast<double>(step - warmupSteps) / static_cast<double>(decaySteps), 0.0, 1.0);
    if (kind == ScheduleKind::Linear)
        return peak * (minRatio + (1.0 - minRatio) * (1.0 - progress));
    const double cosine = 0.5 * (1.0 + std::cos(std::numbers::pi * progress));
    return peak * (minRatio + (1.0 - minRatio) * cosine);
}

} // namespace engine::train
