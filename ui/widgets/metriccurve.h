#pragma once
// One run's metric as the plots hold it: every stored point, the debiased moving average over all of
// them (engine/report/series.h), and a min/max pyramid per x (step, time) so that a view of millions
// of points reads a few buckets per pixel column, not all of them: each rung cuts x into equal stretches
// and keeps, per stretch, the indices of its first, lowest, highest and last points (20 bytes, raw and
// smoothed each), each rung 4x coarser than the one before. Qt-free; one thread.
//
//   MetricCurve curve;
//   curve.append(step, secondsSinceStart, value);              // in step order
//   curve.prepare(MetricCurve::X::Step, 0.8);                    // smoothing weight, or nullopt
//   XYSeries shown = curve.visible(MetricCurve::X::Step, false, x0, x1, 2 * widthInPixels);

#include "engine/report/series.h"
#include "engine/store/runstore.h"

#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

namespace ui {

class MetricCurve {
public:
    enum class X { Step, Time };

    void reserve(size_t points);
    /// Appends one point after the others (x ascending). Amortised O(1); the moving average goes on
    /// over the new points at the next smoothed() or prepare() call.
    void append(double step, double time, double value);
    /// Replaces every point with `points` (in step order), in one pass.
    void assign(const std::vector<engine::store::MetricPoint> &points);

    size_t size() const { return m_value.size(); }
    bool empty() const { return m_value.empty(); }
    const std::vector<double> &steps() const { return m_step; }
    const std::vector<double> &times() const { return m_time; } ///< seconds since the run started
    const std::vector<double> &values() const { return m_value; }
    const std::vector<double> &x(X axis) const { return axis == X::Step ? m_step : m_time; }

    /// smoothDebiased(values(), weight), over every point.
    const std::vector<double> &smoothed(double weight);

    /// Brings the moving average (when `weight` is set) and the pyramid along `axis` up to date: after
    /// appends, a new weight or a new axis. The pyramid is rebuilt when the points after it pass 1/16
    /// of it, so appending stays amortised O(1) per point.
    void prepare(X axis, std::optional<double> weight);
    /// The points to draw for x in [a, b] at `buckets` columns: decimateMinMax of the stored (or, after
    /// prepare() with a weight, smoothed) values, read from the coarsest rung of the pyramid that still
    /// has two of its buckets per column, so each column's min and max survive (a rung's bucket counts
    /// whole in one column: to within half a column). Every point returned is a stored (or smoothed)
    /// one, at its own x.
    engine::report::XYSeries visible(X axis, bool smoothedLine, double a, double b, int buckets) const;

private:
    /// One stretch of x as a rung keeps it: indices of its first, lowest, highest and last finite
    /// points and of its first non-finite one (kNone: none), into the points.
    struct Bucket {
        static constexpr std::uint32_t kNone = 0xffffffffu;
        std::uint32_t first = kNone, lowest = kNone, highest = kNone, last = kNone, gap = kNone;
        bool empty() const { return first == kNone && gap == kNone; }
    };
    /// One rung: the covered points cut into `buckets` equal stretches of x, for the raw and the
    /// smoothed values. 20 bytes a bucket, whatever the values.
    struct Rung {
        int buckets = 0;
        std::vector<Bucket> raw;
        std::vector<Bucket> smooth;
    };
    struct Pyramid {
        std::vector<Rung> rungs;
        size_t covered = 0; ///< the rungs hold the first `covered` points; later ones are read directly
        bool smoothValid = false;
    };
    void updatePyramid(X axis, bool withSmooth);
    /// Point `index` (of `ys`) into a bucket that holds only points before it.
    static void addToBucket(Bucket &bucket, size_t index, const std::vector<double> &ys);
    /// The bucket after `into` (its points later in x) into it.
    static void mergeBucket(Bucket &into, const Bucket &next, const std::vector<double> &ys);
    /// The points of [a, b] at `columns` columns from one rung (built over the points up to x =
    /// coveredEnd), appended to `out`, with the one point just outside each side.
    static void readRung(const std::vector<Bucket> &rung, const std::vector<double> &xs, double coveredEnd,
                         const std::vector<double> &ys, double a, double b, int columns, engine::report::XYSeries &out);

    std::vector<double> m_step;
    std::vector<double> m_time;
    std::vector<double> m_value;
    std::vector<double> m_smoothed;
    std::optional<engine::report::DebiasedSmoother> m_smoother; ///< where m_smoothed stopped; none yet: nullopt
    Pyramid m_pyramids[2];        ///< by step, by time
};

} // namespace ui
