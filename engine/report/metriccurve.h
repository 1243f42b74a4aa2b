#pragma once
// One run's metric as the plots hold it: every stored point, the debiased moving average over all of
// them (engine/report/series.h), and a min/max pyramid per x (step, time) so that a view of millions
// of points reads a few times its pixel count of points, not all of them. Qt-free; one thread.
//
//   MetricCurve curve;
//   curve.append(step, secondsSinceStart, value);              // in step order
//   curve.prepare(MetricCurve::X::Step, 0.8);                    // smoothing weight, or nullopt
//   XYSeries shown = curve.visible(MetricCurve::X::Step, false, x0, x1, 2 * widthInPixels);

#include "engine/report/series.h"
#include "engine/store/runstore.h"

#include <cstddef>
#include <optional>
#include <vector>

namespace engine::report {

class MetricCurve {
public:
    enum class X { Step, Time };

    void reserve(size_t points);
    /// Appends one point after the others (x ascending). Amortised O(1); the moving average goes on
    /// over the new points at the next smoothed() or prepare() call.
    void append(double step, double time, double value);
    /// Replaces every point with `points` (in step order), in one pass.
    void assign(const std::vector<store::MetricPoint> &points);

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
    /// has two of its buckets per column, so each column's min and max survive to within half a column
    /// (where a rung bucket straddles two columns, it keeps only the more extreme of their two extremes).
    /// Every point returned is a stored (or smoothed) one, at its own x.
    XYSeries visible(X axis, bool smoothedLine, double a, double b, int buckets) const;

private:
    /// One rung: the raw and the smoothed values decimated to `buckets` columns over the whole curve.
    struct Rung {
        int buckets = 0;
        XYSeries raw;
        XYSeries smooth;
    };
    struct Pyramid {
        std::vector<Rung> rungs;
        size_t covered = 0; ///< the rungs hold the first `covered` points; later ones are read directly
        bool smoothValid = false;
    };
    void updatePyramid(X axis, bool withSmooth);

    std::vector<double> m_step;
    std::vector<double> m_time;
    std::vector<double> m_value;
    std::vector<double> m_smoothed;
    std::optional<DebiasedSmoother> m_smoother; ///< where m_smoothed stopped; none yet: nullopt
    Pyramid m_pyramids[2];        ///< by step, by time
};

} // namespace engine::report
