// MetricCurve: the plots' per-run series (Qt-free), against engine/report's whole-series functions.

#include "engine/report/series.h"
#include "engine/report/metriccurve.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

namespace {

std::vector<double> noisyLoss(size_t count, unsigned seed)
{
    std::mt19937 random(seed);
    std::normal_distribution<double> noise(0.0, 0.2);
    std::vector<double> values(count);
    for (size_t i = 0; i < count; ++i)
        values[i] = 4.0 * std::exp(-double(i) / 30000.0) + 1.0 + noise(random);
    return values;
}

} // namespace

// Points appended in flushes, as a live run sends them: the moving average goes on from where it
// stopped and equals the whole-series average bit for bit; a new weight starts it again.
TEST(MetricCurve, AppendedPointsSmoothAsTheWholeSeries)
{
    const std::vector<double> values = noisyLoss(200000, 5);
    engine::report::MetricCurve curve;
    size_t next = 0;
    for (const size_t flush : {1000u, 1u, 70000u, 4u, 128995u}) {
        for (size_t k = 0; k < flush; ++k, ++next)
            curve.append(double(next + 1), double(next) * 0.1, values[next]);
        curve.prepare(engine::report::MetricCurve::X::Step, 0.9);
        const std::vector<double> whole =
            engine::report::smoothDebiased(std::vector<double>(values.begin(), values.begin() + long(next)), 0.9);
        ASSERT_EQ(curve.smoothed(0.9), whole) << "after " << next << " points";
    }
    ASSERT_EQ(next, values.size());
    EXPECT_EQ(curve.smoothed(0.5), engine::report::smoothDebiased(values, 0.5));
    EXPECT_EQ(curve.smoothed(0.9), engine::report::smoothDebiased(values, 0.9));
}

// What a view draws keeps every column's extremes: the global minimum and maximum of the points in
// view are among the points visible() returns, for the raw and the smoothed line, zoomed in or not,
// read from the pyramid or not (this curve has enough points for one).
TEST(MetricCurve, VisiblePointsKeepTheExtremesInView)
{
    const std::vector<double> values = noisyLoss(300000, 9);
    engine::report::MetricCurve curve;
    for (size_t i = 0; i < values.size(); ++i)
        curve.append(double(i + 1), double(i), values[i]);
    curve.prepare(engine::report::MetricCurve::X::Step, 0.8);
    const std::vector<double> &smoothed = curve.smoothed(0.8);
    for (const auto &[a, b] : {std::pair{1.0, 300000.0}, std::pair{12345.0, 23456.5}, std::pair{299000.0, 400000.0}}) {
        for (const bool smooth : {false, true}) {
            const std::vector<double> &ys = smooth ? smoothed : values;
            double low = INFINITY, high = -INFINITY;
            for (size_t i = 0; i < ys.size(); ++i) {
                if (double(i + 1) >= a && double(i + 1) <= b) {
                    low = std::min(low, ys[i]);
                    high = std::max(high, ys[i]);
                }
            }
            const engine::report::XYSeries shown = curve.visible(engine::report::MetricCurve::X::Step, smooth, a, b, 1200);
            ASSERT_FALSE(shown.x.empty());
            EXPECT_LE(shown.x.size(), 4u * 1200 + 2) << "at most first, lowest, highest and last per column";
            double shownLow = INFINITY, shownHigh = -INFINITY;
            for (size_t i = 0; i < shown.x.size(); ++i) {
                if (shown.x[i] >= a && shown.x[i] <= b) {
                    shownLow = std::min(shownLow, shown.y[i]);
                    shownHigh = std::max(shownHigh, shown.y[i]);
                }
                EXPECT_EQ(shown.y[i], ys[size_t(shown.x[i]) - 1]) << "a point that is not the curve's, at x " << shown.x[i];
            }
            EXPECT_EQ(shownLow, low) << "view [" << a << ", " << b << "] smooth " << smooth;
            EXPECT_EQ(shownHigh, high) << "view [" << a << ", " << b << "] smooth " << smooth;
        }
    }
}

// A stretch of non-finite values (a NaN loss the run skipped) stays a break in the line when the view
// is read from the pyramid: a NaN point inside it, no finite point inside it, finite points on each side.
// The same after appending (the points past the pyramid are read directly).
TEST(MetricCurve, GapsSurviveThePyramid)
{
    std::vector<double> values = noisyLoss(300000, 4);
    for (size_t i = 150000; i < 151000; ++i)
        values[i] = i % 2 ? NAN : INFINITY;
    engine::report::MetricCurve curve;
    for (size_t i = 0; i < values.size(); ++i)
        curve.append(double(i), double(i), values[i]);
    for (const bool appended : {false, true}) {
        if (appended) {
            for (size_t i = 300000; i < 302000; ++i)
                curve.append(double(i), double(i), i < 301000 ? 2.0 : NAN);
        }
        curve.prepare(engine::report::MetricCurve::X::Step, std::nullopt);
        const engine::report::XYSeries shown = curve.visible(engine::report::MetricCurve::X::Step, false, 0, double(curve.size() - 1), 1000);
        int nanInGap = 0, finiteInGap = 0, finiteBefore = 0, finiteAfter = 0;
        for (size_t i = 0; i < shown.x.size(); ++i) {
            const bool inGap = shown.x[i] >= 150000 && shown.x[i] < 151000;
            nanInGap += inGap && std::isnan(shown.y[i]) ? 1 : 0;
            finiteInGap += inGap && std::isfinite(shown.y[i]) ? 1 : 0;
            finiteBefore += shown.x[i] < 150000 && std::isfinite(shown.y[i]) ? 1 : 0;
            finiteAfter += shown.x[i] >= 151000 && std::isfinite(shown.y[i]) ? 1 : 0;
            if (i > 0) {
                EXPECT_LT(shown.x[i - 1], shown.x[i]) << "x ascends, each point once";
            }
        }
        EXPECT_GE(nanInGap, 1) << (appended ? "after appending" : "");
        EXPECT_EQ(finiteInGap, 0);
        EXPECT_GT(finiteBefore, 100);
        EXPECT_GT(finiteAfter, 100);
        if (appended) {
            EXPECT_TRUE(std::isnan(shown.y.back())) << "the appended gap at the end";
        }
    }
}
