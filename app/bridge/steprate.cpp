#include "app/bridge/steprate.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace app {

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

std::string formatDuration(double seconds)
{
    if (!std::isfinite(seconds) || seconds < 0)
        return "\u2013";
    const long long total = std::llround(seconds);
    const long long h = total / 3600;
    const long long m = (total / 60) % 60;
    const long long s = total % 60;
    char text[48];
    if (h > 0)
        std::snprintf(text, sizeof text, "%lld:%02lld:%02lld", h, m, s);
    else
        std::snprintf(text, sizeof text, "%lld:%02lld", m, s);
    return text;
}

} // namespace app
