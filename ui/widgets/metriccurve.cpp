#include "ui/widgets/metriccurve.h"

#include <algorithm>
#include <cmath>
#include <iterator>
#include <limits>

namespace ui {
namespace {

using engine::report::XYSeries;

/// Bucket counts of the pyramid's rungs, finest first; each rung is decimated from the one before.
constexpr int kRungBuckets[] = {65536, 16384, 4096, 1024};
/// Below this many points a curve is decimated straight from its points.
constexpr size_t kPyramidMinPoints = 8 * 8192;

/// Which of `count` equal stretches of [origin, origin + count / perUnit] holds x (x >= origin), as
/// decimateMinMax cuts its buckets: one multiplication.
inline int stretchOf(double x, double origin, double perUnit, int count)
{
    const double position = (x - origin) * perUnit;
    return position <= 0 ? 0 : position < count - 1 ? int(position) : count - 1;
}

} // namespace

void MetricCurve::reserve(size_t points)
{
    m_step.reserve(points);
    m_time.reserve(points);
    m_value.reserve(points);
}

void MetricCurve::append(double step, double time, double value)
{
    m_step.push_back(step);
    m_time.push_back(time);
    m_value.push_back(value);
}

void MetricCurve::assign(const std::vector<engine::store::MetricPoint> &points)
{
    const size_t n = points.size();
    m_step.resize(n);
    m_time.resize(n);
    m_value.resize(n);
    for (size_t i = 0; i < n; ++i) {
        m_step[i] = double(points[i].step);
        m_time[i] = points[i].wallTime;
        m_value[i] = points[i].value;
    }
    m_smoothed.clear();
    m_smoother.reset();
    for (Pyramid &pyramid : m_pyramids)
        pyramid = Pyramid();
}

const std::vector<double> &MetricCurve::smoothed(double weight)
{
    if (!m_smoother || weight != m_smoother->weight()) {
        for (Pyramid &pyramid : m_pyramids)
            pyramid.smoothValid = false; // every smoothed value changes
        m_smoother.emplace(weight);
        m_smoothed.clear();
    }
    // Appended points: the average is causal, so it goes on from where it stopped, and the values before
    // them (and the rungs built from them) stay as they were.
    if (m_smoothed.empty())
        m_smoothed.reserve(m_value.size()); // (later appends grow it geometrically, as push_back does)
    for (size_t i = m_smoothed.size(); i < m_value.size(); ++i)
        m_smoothed.push_back(m_smoother->next(m_value[i]));
    return m_smoothed;
}

void MetricCurve::addToBucket(Bucket &bucket, size_t index, const std::vector<double> &ys)
{
    const auto i = std::uint32_t(index);
    const double value = ys[index];
    if (!std::isfinite(value)) {
        if (bucket.gap == Bucket::kNone)
            bucket.gap = i;
        return;
    }
    if (bucket.first == Bucket::kNone) {
        bucket.first = bucket.lowest = bucket.highest = i;
    } else {
        bucket.lowest = value < ys[bucket.lowest] ? i : bucket.lowest; // strict: the earliest of equals
        bucket.highest = value > ys[bucket.highest] ? i : bucket.highest;
    }
    bucket.last = i;
}

void MetricCurve::mergeBucket(Bucket &into, const Bucket &next, const std::vector<double> &ys)
{
    if (next.gap != Bucket::kNone && into.gap == Bucket::kNone)
        into.gap = next.gap;
    if (next.first == Bucket::kNone)
        return;
    if (into.first == Bucket::kNone) {
        into.first = next.first;
        into.lowest = next.lowest;
        into.highest = next.highest;
    } else {
        into.lowest = ys[next.lowest] < ys[into.lowest] ? next.lowest : into.lowest;
        into.highest = ys[next.highest] > ys[into.highest] ? next.highest : into.highest;
    }
    into.last = next.last;
}

void MetricCurve::updatePyramid(X axis, bool withSmooth)
{
    Pyramid &pyramid = m_pyramids[axis == X::Step ? 0 : 1];
    const std::vector<double> &xs = x(axis);
    const size_t n = xs.size();
    if (n < kPyramidMinPoints || n >= Bucket::kNone || !std::isfinite(xs.front()) || !std::isfinite(xs.back())
        || !(xs.back() > xs.front())) {
        pyramid = Pyramid();
        return;
    }
    // Rebuilt when the points after it pass 1/16 of it (amortised O(1) per appended point), or when
    // its smoothed values are stale.
    const bool grown = pyramid.covered == 0 || n - pyramid.covered > std::max<size_t>(pyramid.covered / 16, 4096);
    if (!grown && (pyramid.smoothValid || !withSmooth))
        return;
    pyramid.rungs.clear();
    pyramid.covered = n;
    pyramid.smoothValid = withSmooth;
    // The finest rung from the points, each coarser one from the one before (its buckets are whole
    // groups of the finer rung's: the counts divide each other).
    const double origin = xs.front();
    for (const int buckets : kRungBuckets) {
        if (n <= 8 * size_t(buckets))
            continue; // would keep (nearly) every point: no gain
        Rung rung;
        rung.buckets = buckets;
        for (const bool smooth : {false, true}) {
            if (smooth && !withSmooth)
                continue;
            const std::vector<double> &ys = smooth ? m_smoothed : m_value;
            std::vector<Bucket> &out = smooth ? rung.smooth : rung.raw;
            out.assign(size_t(buckets), Bucket());
            if (pyramid.rungs.empty()) {
                const double perUnit = buckets / (xs[n - 1] - origin);
                for (size_t i = 0; i < n; ++i)
                    addToBucket(out[size_t(stretchOf(xs[i], origin, perUnit, buckets))], i, ys);
            } else {
                const Rung &finer = pyramid.rungs.back();
                const std::vector<Bucket> &source = smooth ? finer.smooth : finer.raw;
                const size_t group = size_t(finer.buckets / buckets);
                for (size_t k = 0; k < source.size(); ++k)
                    mergeBucket(out[k / group], source[k], ys);
            }
        }
        pyramid.rungs.push_back(std::move(rung));
    }
}

void MetricCurve::prepare(X axis, std::optional<double> weight)
{
    if (weight)
        smoothed(*weight);
    updatePyramid(axis, weight.has_value());
}

XYSeries MetricCurve::visible(X axis, bool smoothedLine, double a, double b, int buckets) const
{
    const std::vector<double> &xs = x(axis);
    if (xs.empty() || !(a <= b) || !std::isfinite(a) || !std::isfinite(b))
        return {};
    const Pyramid &pyramid = m_pyramids[axis == X::Step ? 0 : 1];
    if (smoothedLine && m_smoothed.size() != m_value.size())
        return {}; // prepare() was not called with a weight
    const std::vector<double> &ys = smoothedLine ? m_smoothed : m_value;

    const Rung *chosen = nullptr;
    const size_t covered = pyramid.covered;
    if (covered > 1 && covered <= xs.size() && (!smoothedLine || pyramid.smoothValid)) {
        const double first = xs.front();
        const double last = xs[covered - 1];
        const double span = last - first;
        const double overlap = std::min(b, last) - std::max(a, first);
        if (span > 0 && overlap > 0) {
            for (auto it = pyramid.rungs.rbegin(); it != pyramid.rungs.rend(); ++it) {
                if (double(it->buckets) * overlap / span >= 2.0 * buckets) {
                    chosen = &*it;
                    break;
                }
            }
        }
    }
    if (!chosen)
        return engine::report::decimateMinMax(xs, ys, a, b, buckets);

    // The rung for the points it covers, the points themselves after it.
    const double coveredEnd = xs[covered - 1];
    const std::vector<Bucket> &rung = smoothedLine ? chosen->smooth : chosen->raw;
    XYSeries out;
    if (a <= coveredEnd) {
        const double upper = std::min(b, coveredEnd);
        const int share = std::max(1, int(std::lround(buckets * (upper - a) / std::max(b - a, 1e-300))));
        readRung(rung, xs, coveredEnd, ys, a, upper, share, out);
    }
    if (b > coveredEnd && covered < xs.size()) {
        const double lower = std::max(a, xs[covered]);
        if (lower <= b) {
            const int share = std::max(1, int(std::lround(buckets * (b - lower) / std::max(b - a, 1e-300))));
            const XYSeries tail = engine::report::decimateMinMax(xs, ys, lower, b, share);
            for (size_t i = 0; i < tail.x.size(); ++i) {
                if (!out.x.empty() && tail.x[i] <= out.x.back())
                    continue; // the rung's last point, or its neighbour, again
                out.x.push_back(tail.x[i]);
                out.y.push_back(tail.y[i]);
            }
        }
    }
    return out;
}

void MetricCurve::readRung(const std::vector<Bucket> &rung, const std::vector<double> &xs, double coveredEnd,
                           const std::vector<double> &ys, double a, double b, int columns, XYSeries &out)
{
    const int count = int(rung.size());
    const double origin = xs.front();
    const double perUnit = count / (coveredEnd - origin);
    const int from = stretchOf(a, origin, perUnit, count);
    const int to = stretchOf(b, origin, perUnit, count);
    const auto emit = [&](const Bucket &bucket) {
        std::uint32_t kept[5] = {bucket.first, std::min(bucket.lowest, bucket.highest),
                                 std::max(bucket.lowest, bucket.highest), bucket.last, bucket.gap};
        if (bucket.gap != Bucket::kNone || bucket.first == Bucket::kNone)
            std::sort(std::begin(kept), std::end(kept)); // kNone sorts last
        for (size_t k = 0; k < 5 && kept[k] != Bucket::kNone; ++k) {
            if (k > 0 && kept[k] == kept[k - 1])
                continue;
            out.x.push_back(xs[kept[k]]);
            out.y.push_back(kept[k] == bucket.gap ? std::numeric_limits<double>::quiet_NaN() : ys[kept[k]]);
        }
    };
    out.x.reserve(out.x.size() + 4 * size_t(columns) + 2);
    out.y.reserve(out.y.size() + 4 * size_t(columns) + 2);
    // The point before the view (so the line runs to its edge): the last one of the nearest bucket
    // before, with one.
    for (int k = from - 1; k >= 0; --k) {
        if (rung[size_t(k)].last != Bucket::kNone) {
            out.x.push_back(xs[rung[size_t(k)].last]);
            out.y.push_back(ys[rung[size_t(k)].last]);
            break;
        }
    }
    // The rung's buckets that reach into [a, b], each whole in the column its first point falls in (a
    // bucket is at most half a column wide): per column, the first, lowest, highest and last point of
    // its buckets and their first gap, in x order, as decimateMinMax keeps a column's points.
    const double columnsPerUnit = b > a ? columns / (b - a) : 0.0;
    Bucket column;
    int current = -1;
    for (int k = from; k <= to; ++k) {
        const Bucket &bucket = rung[size_t(k)];
        if (bucket.empty())
            continue;
        const int at = stretchOf(xs[bucket.first != Bucket::kNone ? bucket.first : bucket.gap], a, columnsPerUnit, columns);
        if (at != current && !column.empty()) {
            emit(column);
            column = Bucket();
        }
        current = at;
        mergeBucket(column, bucket, ys);
    }
    if (!column.empty())
        emit(column);
    // And the point after it.
    for (int k = to + 1; k < count; ++k) {
        if (rung[size_t(k)].first != Bucket::kNone) {
            out.x.push_back(xs[rung[size_t(k)].first]);
            out.y.push_back(ys[rung[size_t(k)].first]);
            break;
        }
    }
}

} // namespace ui
