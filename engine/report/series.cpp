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

/// One bucket's points as decimateMinMax keeps them: its first, lowest, highest and last finite points
/// and its first non-finite one, seen one point at a time in x order.
class BucketScan {
public:
    void add(size_t i, double value)
    {
        if (!std::isfinite(value)) [[unlikely]] {
            gap = gap == kNone ? i : gap;
            return;
        }
        first = first == kNone ? i : first;
        // Selects, not branches: on noisy values every branch here would be a coin toss. Strict
        // comparisons keep the earliest of equal extremes.
        const bool lower = value < low;
        low = lower ? value : low;
        lowest = lower ? i : lowest;
        const bool higher = value > high;
        high = higher ? value : high;
        highest = higher ? i : highest;
        last = i;
    }

    /// Appends the kept points to `out`, in x order, each once (a gap's point with y = NaN).
    void keep(const std::vector<double> &x, const std::vector<double> &y, XYSeries &out) const
    {
        // x order: first <= the extremes <= last already; only a gap's point needs placing.
        size_t kept[5] = {first, std::min(lowest, highest), std::max(lowest, highest), last, gap};
        if (gap != kNone)
            std::sort(std::begin(kept), std::end(kept)); // kNone sorts last
        for (size_t k = 0; k < 5 && kept[k] != kNone; ++k) {
            if (k > 0 && kept[k] == kept[k - 1])
                continue;
            out.x.push_back(x[kept[k]]);
            out.y.push_back(kept[k] == gap ? kNaN : y[kept[k]]);
        }
    }

private:
    static constexpr size_t kNone = std::numeric_limits<size_t>::max();
    size_t first = kNone, last = kNone, lowest = kNone, highest = kNone, gap = kNone;
    double low = std::numeric_limits<double>::infinity();
    double high = -std::numeric_limits<double>::infinity();
};

} // namespace

DebiasedSmoother::DebiasedSmoother(double weight) : m_weight(weight), m_debiasSettled(weight == 0)
{
    if (!(weight >= 0 && weight < 1))
        throw invalidInput("smoothing weight must be at least 0 and below 1, not " + std::to_string(weight));
}

double DebiasedSmoother::next(double value)
{
    if (!std::isfinite(value))
        return kNaN;
    m_ema = m_weight * m_ema + (1 - m_weight) * value;
    ++m_finiteCount;
    double debias = 1.0; // 1 - w^n for the n finite values so far
    if (!m_debiasSettled) {
        debias = 1 - std::pow(m_weight, m_finiteCount);
        m_debiasSettled = debias == 1.0;
    }
    return m_ema / debias;
}

std::vector<double> smoothDebiased(const std::vector<double> &values, double weight)
{
    DebiasedSmoother smoother(weight);
    std::vector<double> smoothed;
    smoothed.reserve(values.size());
    for (const double value : values)
        smoothed.push_back(smoother.next(value));
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
    // One pass. A point's bucket is floor((x - xMin) * buckets / span), clamped to the last one: a bucket
    // goes on while that position stays below its end (x ascends, so its points follow each other).
    const double span = xMax - xMin;
    const double perUnit = span > 0 ? buckets / span : 0.0;
    const int lastBucket = buckets - 1;
    size_t i = begin;
    while (i < end) {
        const double position = (x[i] - xMin) * perUnit; // >= 0: x[i] >= xMin
        const int bucket = position < lastBucket ? static_cast<int>(position) : lastBucket;
        const double bucketEnd = bucket < lastBucket ? double(bucket + 1) : std::numeric_limits<double>::infinity();
        BucketScan scan;
        do {
            scan.add(i, y[i]);
            ++i;
        } while (i < end && (x[i] - xMin) * perUnit < bucketEnd);
        scan.keep(x, y, out);
    }
    if (end < keepTo) {
        out.x.push_back(x[end]);
        out.y.push_back(y[end]);
    }
    return out;
}

} // namespace engine::report
