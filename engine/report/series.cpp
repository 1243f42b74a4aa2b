#include "engine/report/series.h"

#include "engine/core/error.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <iterator>
#include <limits>
#include <string>

namespace engine::report {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

/// The points [begin, end) of one bucket as decimateMinMax keeps them, appended to `out`.
void keepBucket(const std::vector<double> &x, const std::vector<double> &y, size_t begin, size_t end, XYSeries &out)
{
    constexpr size_t kNone = std::numeric_limits<size_t>::max();
    size_t first = kNone, last = kNone, lowest = kNone, highest = kNone, gap = kNone;
    for (size_t i = begin; i < end; ++i) {
        const double value = y[i];
        if (!std::isfinite(value)) {
            if (gap == kNone)
                gap = i;
            continue;
        }
        if (first == kNone) {
            first = lowest = highest = i;
        } else if (value < y[lowest]) {
            lowest = i;
        } else if (value > y[highest]) {
            highest = i;
        }
        last = i;
    }
    size_t kept[5] = {first, lowest, highest, last, gap};
    std::sort(std::begin(kept), std::end(kept)); // x order; kNone sorts last
    for (size_t k = 0; k < 5 && kept[k] != kNone; ++k) {
        if (k > 0 && kept[k] == kept[k - 1])
            continue;
        out.x.push_back(x[kept[k]]);
        out.y.push_back(kept[k] == gap ? kNaN : y[kept[k]]);
    }
}

} // namespace

std::vector<double> smoothDebiased(const std::vector<double> &values, double weight)
{
    if (!(weight >= 0 && weight < 1))
        throw invalidInput("smoothing weight must be at least 0 and below 1, not " + std::to_string(weight));
    std::vector<double> smoothed;
    smoothed.reserve(values.size());
    double ema = 0;
    double debias = 1 - weight; // 1 - w^n for the n finite values so far
    int finiteCount = 0;
    bool debiasSettled = weight == 0; // once 1 - w^n rounds to 1 it stays 1: skip the pow
    for (const double value : values) {
        if (!std::isfinite(value)) {
            smoothed.push_back(kNaN);
            continue;
        }
        ema = weight * ema + (1 - weight) * value;
        ++finiteCount;
        if (!debiasSettled) {
            debias = 1 - std::pow(weight, finiteCount);
            debiasSettled = debias == 1.0;
        } else {
            debias = 1.0;
        }
        smoothed.push_back(ema / debias);
    }
    return smoothed;
}

XYSeries decimateMinMax(const std::vector<double> &x, const std::vector<double> &y, double xMin, double xMax,
                        int buckets)
{
    if (x.size() != y.size())
        throw invalidInput("cannot decimate a series of " + std::to_string(x.size()) + " x values and "
                           + std::to_string(y.size()) + " y values: they must be as many");
    if (buckets < 1)
        throw invalidInput("cannot decimate into " + std::to_string(buckets) + " buckets: at least 1 is needed");
    if (!std::isfinite(xMin) || !std::isfinite(xMax) || xMin > xMax)
        throw invalidInput("cannot decimate to the x range [" + std::to_string(xMin) + ", " + std::to_string(xMax)
                           + "]: it must be finite and not reversed");
    assert(std::is_sorted(x.begin(), x.end()));

    // [begin, end): the points in range; the neighbours just outside are begin - 1 and end.
    const size_t begin = static_cast<size_t>(std::lower_bound(x.begin(), x.end(), xMin) - x.begin());
    const size_t end = static_cast<size_t>(std::upper_bound(x.begin() + static_cast<std::ptrdiff_t>(begin), x.end(), xMax)
                                           - x.begin());
    const size_t keepFrom = begin > 0 ? begin - 1 : begin;
    const size_t keepTo = end < x.size() ? end + 1 : end;

    XYSeries out;
    if (end - begin <= 4 * static_cast<size_t>(buckets)) {
        out.x.assign(x.begin() + static_cast<std::ptrdiff_t>(keepFrom), x.begin() + static_cast<std::ptrdiff_t>(keepTo));
        out.y.assign(y.begin() + static_cast<std::ptrdiff_t>(keepFrom), y.begin() + static_cast<std::ptrdiff_t>(keepTo));
        return out;
    }

    out.x.reserve(4 * static_cast<size_t>(buckets) + 2);
    out.y.reserve(4 * static_cast<size_t>(buckets) + 2);
    if (keepFrom < begin) {
        out.x.push_back(x[keepFrom]);
        out.y.push_back(y[keepFrom]);
    }
    const double span = xMax - xMin;
    auto bucketOf = [&](double value) {
        if (!(span > 0))
            return 0;
        const double position = std::floor((value - xMin) / span * buckets);
        return static_cast<int>(std::clamp(position, 0.0, static_cast<double>(buckets - 1)));
    };
    size_t bucketBegin = begin;
    int bucket = bucketOf(x[begin]);
    for (size_t i = begin + 1; i < end; ++i) {
        const int next = bucketOf(x[i]);
        if (next == bucket)
            continue;
        keepBucket(x, y, bucketBegin, i, out);
        bucketBegin = i;
        bucket = next;
    }
    keepBucket(x, y, bucketBegin, end, out);
    if (end < keepTo) {
        out.x.push_back(x[end]);
        out.y.push_back(y[end]);
    }
    return out;
}

} // namespace engine::report
