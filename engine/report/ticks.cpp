#include "engine/report/ticks.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace engine::report {
namespace {

std::string formatted(const char *format, int decimals, double value)
{
    char buffer[64];
    std::snprintf(buffer, sizeof buffer, format, decimals, value);
    return buffer;
}

/// The fewest decimals that write `step` exactly (0.25 -> 2, 5 -> 0), at most 12.
int decimalsFor(double step)
{
    double scaled = std::abs(step);
    for (int decimals = 0; decimals < 12; ++decimals, scaled *= 10)
        if (std::round(scaled) >= 1 && std::abs(scaled - std::round(scaled)) <= 1e-6 * scaled)
            return decimals;
    return 12;
}

} // namespace

std::vector<double> niceTicks(double lo, double hi, int target, bool integersOnly)
{
    const double span = hi - lo;
    if (!(span > 0) || !std::isfinite(span))
        return {lo};
    const double rough = span / std::max(1, target);
    const double magnitude = std::pow(10.0, std::floor(std::log10(rough)));
    const double normalized = rough / magnitude;
    double step = (normalized < 1.5 ? 1 : normalized < 3 ? 2 : normalized < 7 ? 5 : 10) * magnitude;
    if (integersOnly)
        step = std::max(step, 1.0);
    std::vector<double> ticks;
    const double first = std::ceil(lo / step - 1e-9);
    for (int i = 0; i < 1000; ++i) {
        const double tick = (first + i) * step;
        if (tick > hi + step * 1e-9)
            break;
        ticks.push_back(std::abs(tick) < step * 1e-9 ? 0.0 : tick);
    }
    return ticks;
}

std::vector<std::string> tickLabels(const std::vector<double> &ticks)
{
    std::vector<std::string> labels;
    if (ticks.empty())
        return labels;
    const double step = ticks.size() > 1 ? ticks[1] - ticks[0] : std::max(std::abs(ticks[0]), 1.0);
    const double largest = std::max(std::abs(ticks.front()), std::abs(ticks.back()));
    const int decimals = decimalsFor(step);
    const bool wholeSteps = step >= 1 && std::all_of(ticks.begin(), ticks.end(), [](double t) { return t == std::floor(t); });
    for (const double tick : ticks) {
        if (largest >= 1e13 || (largest > 0 && decimals > 6)) {
            labels.push_back(formatted("%.*g", 3, tick));
        } else if (wholeSteps && step >= 1e4) { // 250k, 1.5M: step counts people read at a glance
            const double size = std::abs(tick);
            const double unit = size >= 1e9 ? 1e9 : size >= 1e6 ? 1e6 : 1e3;
            const char *suffix = unit == 1e9 ? "G" : unit == 1e6 ? "M" : "k";
            std::string label = formatted("%.*f", decimalsFor(step / unit), tick / unit);
            if (label.find('.') != std::string::npos) { // 1.50M -> 1.5M, 1.0M -> 1M
                label.erase(label.find_last_not_of('0') + 1);
                if (label.back() == '.')
                    label.pop_back();
            }
            labels.push_back(tick == 0 ? std::string("0") : label + suffix);
        } else {
            labels.push_back(formatted("%.*f", decimals, tick));
        }
    }
    return labels;
}

} // namespace engine::report
