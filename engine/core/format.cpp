#include "engine/core/format.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>

namespace engine {

std::string formatBytes(int64_t bytes, int decimals)
{
    static constexpr std::array<const char *, 6> units{"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
    decimals = std::clamp(decimals, 0, 6);
    const double magnitude = std::fabs(static_cast<double>(bytes));
    char buffer[64];
    if (magnitude < 1024.0) {
        std::snprintf(buffer, sizeof buffer, "%lld B", static_cast<long long>(bytes));
        return buffer;
    }
    // The largest value that still rounds below 1024 at this many decimals.
    const double rollover = 1024.0 - 0.5 * std::pow(10.0, -decimals);
    double value = magnitude / 1024.0;
    size_t unit = 0;
    while (value >= rollover && unit + 1 < units.size()) {
        value /= 1024.0;
        ++unit;
    }
    std::snprintf(buffer, sizeof buffer, "%s%.*f %s", bytes < 0 ? "-" : "", decimals, value, units[unit]);
    return buffer;
}

std::string formatDuration(double seconds)
{
    if (!std::isfinite(seconds) || seconds < 0)
        return "\u2013";
    const long long total = std::llround(seconds);
    char text[48];
    if (total >= 3600)
        std::snprintf(text, sizeof text, "%lld:%02lld:%02lld", total / 3600, (total / 60) % 60, total % 60);
    else
        std::snprintf(text, sizeof text, "%lld:%02lld", total / 60, total % 60);
    return text;
}

} // namespace engine
