#include "bridge/steprate.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace bridge {

void StepRateMeter::add(int64_t step, double wallSeconds)
{
    if (!std::isfinite(wallSeconds))
        return;
    if (!m_samples.empty() && (step <= m_samples.back().step || wallSeconds < m_samples.back().seconds))
        return;
    m_samples.push_back({step, wallSeconds});
    // Keep one sample at or before the window's start, so the rate always spans the whole window.
    while (m_samples.size() > 2 && m_samples[1].seconds <= wallSeconds - m_window)
        m_samples.pop_front();
}

double StepRateMeter::stepsPerSecond() const
{
    if (m_samples.size() < 2)
        return 0;
    const Sample &first = m_samples.front();
    const Sample &last = m_samples.back();
    const double seconds = last.seconds - first.seconds;
    return seconds > 0 ? static_cast<double>(last.step - first.step) / seconds : 0;
}

double StepRateMeter::etaSeconds(int64_t totalSteps) const
{
    const double rate = stepsPerSecond();
    if (rate <= 0)
        return -1;
    return static_cast<double>(std::max<int64_t>(0, totalSteps - m_samples.back().step)) / rate;
}

} // namespace bridge
