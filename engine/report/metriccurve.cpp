#include "engine/report/metriccurve.h"

#include <algorithm>
#include <cmath>

namespace engine::report {
namespace {

/// Bucket counts of the pyramid's rungs, finest first; each rung is decimated from the one before. Rungs
/// 2x apart: a view reads between 2 and 4 buckets of its rung per column (4x apart read 2 to 8).
constexpr int kRungBuckets[] = {65536, 32768, 16384, 8192, 4096, 2048, 1024};
/// Below this many points a curve is decimated straight from its points.
constexpr size_t kPyramidMinPoints = 8 * 8192;

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

void MetricCurve::assign(const std::vector<store::MetricPoint> &points)
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

void MetricCurve::updatePyramid(X axis, bool withSmooth)
{
    Pyramid &pyramid = m_pyramids[axis == X::Step ? 0 : 1];
    const std::vector<double> &xs = x(axis);
    const size_t n = xs.size();
    if (n < kPyramidMinPoints || !std::isfinite(xs.front()) || !std::isfinite(xs.back()) || !(xs.back() > xs.front())) {
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
    for (const int buckets : kRungBuckets) {
        // Worth it when it keeps at most about half its source: a bucket keeps up to 4 points, and a
        // finer rung's bucket (half of one of these) up to 4 too.
        const bool fromPoints = pyramid.rungs.empty();
        const size_t sourceSize = fromPoints ? n : pyramid.rungs.back().raw.x.size();
        if (sourceSize <= (fromPoints ? 8 : 4) * size_t(buckets))
            continue;
        Rung rung;
        rung.buckets = buckets;
        if (fromPoints) {
            rung.raw = engine::report::decimateMinMax(xs, m_value, xs.front(), xs.back(), buckets);
            if (withSmooth)
                rung.smooth = engine::report::decimateMinMax(xs, m_smoothed, xs.front(), xs.back(), buckets);
        } else {
            const Rung &finer = pyramid.rungs.back();
            rung.raw = engine::report::decimateMinMax(finer.raw.x, finer.raw.y, xs.front(), xs.back(), buckets);
            if (withSmooth)
                rung.smooth = engine::report::decimateMinMax(finer.smooth.x, finer.smooth.y, xs.front(), xs.back(), buckets);
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
    const XYSeries &rung = smoothedLine ? chosen->smooth : chosen->raw;
    XYSeries out;
    if (a <= coveredEnd) {
        const double upper = std::min(b, coveredEnd);
        const int share = std::max(1, int(std::lround(buckets * (upper - a) / std::max(b - a, 1e-300))));
        out = engine::report::decimateMinMax(rung.x, rung.y, a, upper, share);
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

} // namespace engine::report
