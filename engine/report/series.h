#pragma once
// The curve maths the headless report and the GUI plots share, so both show the same truth:
// TensorBoard's debiased smoothing over the full series, then a min/max-keeping decimation to the
// pixels a view has. Smooth first, decimate second: a smoothed curve must not change with how far
// the view is zoomed or how long the run is, and no spike may fall between two kept points.
//
//   const auto smoothed = smoothDebiased(loss, 0.9);                 // every point, once
//   const XYSeries shown = decimateMinMax(step, smoothed, x0, x1, plotWidthInPixels);

#include <vector>

namespace engine::report {

/// Debiased exponential moving average (TensorBoard's smoothing) over the whole series:
/// ema = w * ema + (1 - w) * v, output ema / (1 - w^n) with n the finite values seen so far.
/// A non-finite value (NaN, +-inf) is output as NaN and does not advance the average. Weight 0
/// returns the finite values exactly. Throws Error(InvalidInput) when weight is outside [0, 1).
std::vector<double> smoothDebiased(const std::vector<double> &values, double weight);

/// smoothDebiased one value at a time, for a series that grows: after values v0..vn it has output
/// exactly what smoothDebiased({v0..vn}, weight) holds.
class DebiasedSmoother {
public:
    /// Throws Error(InvalidInput) when weight is outside [0, 1).
    explicit DebiasedSmoother(double weight);
    /// The next smoothed value (NaN for a non-finite `value`, which does not advance the average).
    double next(double value);
    double weight() const { return m_weight; }

private:
    double m_weight;
    double m_ema = 0;
    int m_finiteCount = 0;
    bool m_debiasSettled; ///< once 1 - w^n rounds to 1 it stays 1: no more pow
};

/// Points of a line, x and y of the same length.
struct XYSeries {
    std::vector<double> x;
    std::vector<double> y;
};

/// The points of (x, y) worth drawing in [xMin, xMax] at `buckets` columns (usually the plot's width
/// in pixels). x must be ascending (NaN y allowed). Keeps the points with xMin <= x <= xMax plus the
/// one neighbour just outside each side (so lines run to the edge); when more than 4 * buckets points
/// are in range, splits [xMin, xMax] into `buckets` equal-width buckets and keeps, per non-empty
/// bucket, its first, lowest, highest and last finite points in x order, each once, so every bucket's
/// min and max survive exactly. A bucket with non-finite y values also keeps one point with y = NaN
/// at the x of the first of them, so a line drawn through the result breaks there. With at most
/// 4 * buckets points in range, returns them (and the neighbours) unchanged.
/// Throws Error(InvalidInput) when x and y differ in length, buckets < 1, xMin or xMax is not finite, or
/// xMin > xMax.
XYSeries decimateMinMax(const std::vector<double> &x, const std::vector<double> &y, double xMin, double xMax,
                        int buckets);

} // namespace engine::report
