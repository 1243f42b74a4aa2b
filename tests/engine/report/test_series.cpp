#include "engine/core/atomicfile.h"
#include "engine/core/error.h"
#include "engine/report/series.h"
#include "support/expecterror.h"
#include "support/tempdir.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <map>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <utility>

using engine::report::decimateMinMax;
using engine::report::smoothDebiased;
using engine::report::XYSeries;
using testing_support::expectError;
using testing_support::TempDir;

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

bool pythonAvailable()
{
    static const bool available = std::system("/usr/bin/python3 -c 'import math' >/dev/null 2>&1") == 0;
    return available;
}

/// TensorBoard's smoothing of `values` as tests/engine/report/smoothing_reference.py computes it.
std::vector<double> pythonSmoothed(const std::vector<double> &values, double weight)
{
    const TempDir dir("smoothing-reference");
    std::ostringstream input;
    for (const double value : values) {
        char buffer[64];
        std::snprintf(buffer, sizeof buffer, "%.17g\n", value); // nan, inf, -inf as Python reads them
        input << buffer;
    }
    engine::writeFileAtomically(dir / "values.txt", input.str());
    const std::string command = "/usr/bin/python3 " SMOOTHING_REFERENCE_SCRIPT " " + std::to_string(weight) + " < "
        + (dir / "values.txt").string() + " > " + (dir / "smoothed.txt").string();
    EXPECT_EQ(std::system(command.c_str()), 0) << command;
    std::istringstream output(engine::readFile(dir / "smoothed.txt"));
    std::vector<double> smoothed;
    std::string line;
    while (std::getline(output, line))
        smoothed.push_back(std::strtod(line.c_str(), nullptr));
    return smoothed;
}

/// The same average written out as its closed form, for machines without python3: the n-th
/// finite value's output is sum_k (1 - w) w^(n-k) v_k / (1 - w^n) over the finite v_1..v_n.
std::vector<double> closedFormSmoothed(const std::vector<double> &values, double weight)
{
    std::vector<double> finite;
    std::vector<double> smoothed;
    for (const double value : values) {
        if (!std::isfinite(value)) {
            smoothed.push_back(kNaN);
            continue;
        }
        finite.push_back(value);
        const size_t n = finite.size();
        long double sum = 0;
        for (size_t k = 0; k < n; ++k)
            sum += (1.0L - weight) * std::pow(static_cast<long double>(weight), static_cast<long double>(n - 1 - k)) * finite[k];
        smoothed.push_back(static_cast<double>(sum / (1.0L - std::pow(static_cast<long double>(weight), static_cast<long double>(n)))));
    }
    return smoothed;
}

/// A noisy falling loss with a NaN and infinities inside.
std::vector<double> noisyLoss(size_t count, unsigned seed)
{
    std::mt19937 random(seed);
    std::normal_distribution<double> noise(0.0, 0.3);
    std::vector<double> values;
    for (size_t i = 0; i < count; ++i)
        values.push_back(4.0 * std::exp(-static_cast<double>(i) / 300.0) + 1.5 + noise(random));
    values[7] = kNaN;
    values[100] = kInf;
    values[101] = -kInf;
    return values;
}

void expectSameSeries(const std::vector<double> &actual, const std::vector<double> &expected, double tolerance)
{
    ASSERT_EQ(actual.size(), expected.size());
    for (size_t i = 0; i < actual.size(); ++i) {
        if (std::isnan(expected[i])) {
            EXPECT_TRUE(std::isnan(actual[i])) << "at " << i << ": " << actual[i];
        } else {
            EXPECT_NEAR(actual[i], expected[i], tolerance * std::max(1.0, std::abs(expected[i]))) << "at " << i;
        }
    }
}

std::vector<double> iota(size_t count)
{
    std::vector<double> x(count);
    for (size_t i = 0; i < count; ++i)
        x[i] = static_cast<double>(i);
    return x;
}

/// The (x, y) pairs of a series, NaN y as a NaN-free key so sets can hold them.
std::set<std::pair<double, double>> pairs(const XYSeries &series)
{
    std::set<std::pair<double, double>> out;
    for (size_t i = 0; i < series.x.size(); ++i)
        out.insert({series.x[i], std::isnan(series.y[i]) ? -12345.0 : series.y[i]});
    return out;
}

} // namespace

TEST(SmoothDebiased, MatchesTensorBoardsFormulaComputedInPython)
{
    const std::vector<double> values = noisyLoss(3000, 1);
    for (const double weight : {0.0, 0.3, 0.6, 0.9, 0.99, 0.999}) {
        SCOPED_TRACE("weight " + std::to_string(weight));
        const std::vector<double> smoothed = smoothDebiased(values, weight);
        if (pythonAvailable())
            expectSameSeries(smoothed, pythonSmoothed(values, weight), 1e-12);
        else // the reference the brief allows without python3: an independently written formula
            expectSameSeries(smoothed, closedFormSmoothed(values, weight), 1e-9);
    }
}

TEST(SmoothDebiased, MatchesItsClosedForm)
{
    // A second, independent reference that runs everywhere: the sum the recurrence unrolls to.
    const std::vector<double> values = noisyLoss(400, 2);
    for (const double weight : {0.5, 0.9, 0.99})
        expectSameSeries(smoothDebiased(values, weight), closedFormSmoothed(values, weight), 1e-9);
}

TEST(SmoothDebiased, NonFiniteValuesAreNaNAndDoNotAdvanceTheAverage)
{
    const std::vector<double> smoothed = smoothDebiased({3, kNaN, kInf, -kInf, 4}, 0.5);
    ASSERT_EQ(smoothed.size(), 5u);
    EXPECT_DOUBLE_EQ(smoothed[0], 3.0);
    for (size_t i = 1; i <= 3; ++i)
        EXPECT_TRUE(std::isnan(smoothed[i])) << "at " << i << ": " << smoothed[i];
    EXPECT_DOUBLE_EQ(smoothed[4], smoothDebiased({3, 4}, 0.5)[1]); // as if the gaps were not there
    // Weight 0 is the identity on finite values, NaN elsewhere.
    const std::vector<double> identity = smoothDebiased({1.25, kInf, -7e300, 5e-320}, 0.0);
    EXPECT_EQ(identity[0], 1.25);
    EXPECT_TRUE(std::isnan(identity[1]));
    EXPECT_EQ(identity[2], -7e300);
    EXPECT_EQ(identity[3], 5e-320);
    // A constant stays constant: the debiasing removes the pull towards 0.
    for (const double value : smoothDebiased(std::vector<double>(50, 2.5), 0.9))
        EXPECT_NEAR(value, 2.5, 1e-12);
    EXPECT_TRUE(smoothDebiased({}, 0.9).empty());
    EXPECT_TRUE(std::isnan(smoothDebiased({kNaN}, 0.9)[0]));
}

TEST(SmoothDebiased, RefusesWeightsOutsideZeroToOne)
{
    for (const double weight : {1.0, -0.1, 1.5, kNaN}) {
        expectError([&] { smoothDebiased({1, 2}, weight); }, engine::ErrorKind::InvalidInput, "smoothing weight");
        expectError([&] { engine::report::DebiasedSmoother{weight}; }, engine::ErrorKind::InvalidInput, "smoothing weight");
    }
}

// The plots smooth a growing series one value at a time: bit for bit what the whole-series pass gives,
// gaps and the debias's settling (1 - w^n reaching 1 after a few hundred values at w = 0.9) included.
TEST(SmoothDebiased, OneValueAtATimeEqualsTheWholeSeries)
{
    std::mt19937 random(11);
    std::normal_distribution<double> noise(0.0, 1.0);
    std::vector<double> values(5000);
    for (size_t i = 0; i < values.size(); ++i)
        values[i] = i % 97 == 13 ? kNaN : (i % 311 == 7 ? kInf : 3.0 + noise(random));
    for (const double weight : {0.0, 0.6, 0.9, 0.999}) {
        const std::vector<double> whole = smoothDebiased(values, weight);
        engine::report::DebiasedSmoother smoother(weight);
        for (size_t i = 0; i < values.size(); ++i) {
            const double one = smoother.next(values[i]);
            if (std::isnan(whole[i]))
                EXPECT_TRUE(std::isnan(one)) << "weight " << weight << " at " << i;
            else
                EXPECT_EQ(one, whole[i]) << "weight " << weight << " at " << i;
        }
    }
}

TEST(DecimateMinMax, KeepsEachBucketsFirstLowestHighestAndLast)
{
    const size_t count = 100000;
    const int buckets = 100;
    std::mt19937 random(3);
    std::uniform_real_distribution<double> uniform(0.0, 1.0);
    const std::vector<double> x = iota(count);
    std::vector<double> y(count);
    for (double &value : y)
        value = uniform(random);
    const XYSeries out = decimateMinMax(x, y, 0, static_cast<double>(count - 1), buckets);

    ASSERT_EQ(out.x.size(), out.y.size());
    EXPECT_LE(out.x.size(), 4u * buckets);
    EXPECT_TRUE(std::is_sorted(out.x.begin(), out.x.end()));
    EXPECT_EQ(std::set<double>(out.x.begin(), out.x.end()).size(), out.x.size()) << "a point kept twice";
    for (size_t i = 0; i < out.x.size(); ++i)
        EXPECT_EQ(out.y[i], y[static_cast<size_t>(out.x[i])]) << "not an input point at x " << out.x[i];

    // Bucket b holds x with floor(x / 99999 * 100) == b; x = 99999 is in the last one.
    const auto kept = pairs(out);
    std::map<int, std::vector<size_t>> members;
    for (size_t i = 0; i < count; ++i)
        members[std::min(buckets - 1, static_cast<int>(std::floor(x[i] / (count - 1) * buckets)))].push_back(i);
    ASSERT_EQ(members.size(), static_cast<size_t>(buckets));
    for (const auto &[bucket, indices] : members) {
        size_t lowest = indices.front(), highest = indices.front();
        for (const size_t i : indices) {
            lowest = y[i] < y[lowest] ? i : lowest;
            highest = y[i] > y[highest] ? i : highest;
        }
        for (const size_t i : {indices.front(), indices.back(), lowest, highest})
            EXPECT_TRUE(kept.count({x[i], y[i]})) << "bucket " << bucket << " lost x " << x[i];
        size_t inBucket = 0;
        for (const double kx : out.x)
            inBucket += kx >= x[indices.front()] && kx <= x[indices.back()];
        EXPECT_LE(inBucket, 4u) << "bucket " << bucket;
    }
}

TEST(DecimateMinMax, AOnePointSpikeInAMillionSurvives)
{
    const size_t count = 1000000;
    const std::vector<double> x = iota(count);
    std::vector<double> y(count);
    for (size_t i = 0; i < count; ++i)
        y[i] = 2.0 + 0.1 * std::sin(static_cast<double>(i) * 0.01);
    const size_t spike = 654321;
    y[spike] = 50.0;
    const size_t dip = 12345;
    y[dip] = -3.0;
    const XYSeries out = decimateMinMax(x, y, 0, static_cast<double>(count - 1), 800);
    EXPECT_LE(out.x.size(), 4u * 800);
    EXPECT_TRUE(pairs(out).count({static_cast<double>(spike), 50.0}));
    EXPECT_TRUE(pairs(out).count({static_cast<double>(dip), -3.0}));
    EXPECT_EQ(*std::max_element(out.y.begin(), out.y.end()), 50.0);
    EXPECT_EQ(*std::min_element(out.y.begin(), out.y.end()), -3.0);
}

TEST(DecimateMinMax, NaNsBecomeOneGapPerBucket)
{
    const size_t count = 10000;
    const std::vector<double> x = iota(count);
    std::vector<double> y(count);
    for (size_t i = 0; i < count; ++i)
        y[i] = std::cos(static_cast<double>(i));
    for (size_t i = 5000; i < 5300; ++i) // a run of NaNs across three buckets of 100
        y[i] = kNaN;
    y[7777] = kInf;
    const XYSeries out = decimateMinMax(x, y, 0, static_cast<double>(count), 100); // bucket k: [100k, 100k + 100)

    std::vector<double> gapXs;
    for (size_t i = 0; i < out.x.size(); ++i)
        if (std::isnan(out.y[i]))
            gapXs.push_back(out.x[i]);
        else
            EXPECT_TRUE(std::isfinite(out.y[i])) << "x " << out.x[i];
    EXPECT_EQ(gapXs, (std::vector<double>{5000, 5100, 5200, 7777}));
    // The finite extremes of a bucket with a gap still survive: bucket [5200, 5300) has none, [7700, 7800) does.
    double lowest = kInf;
    for (size_t i = 7700; i < 7800; ++i)
        if (std::isfinite(y[i]))
            lowest = std::min(lowest, y[i]);
    bool found = false;
    for (size_t i = 0; i < out.x.size(); ++i)
        found = found || (out.x[i] >= 7700 && out.x[i] < 7800 && out.y[i] == lowest);
    EXPECT_TRUE(found);
}

TEST(DecimateMinMax, ClipsToTheRangePlusOneNeighbourEachSide)
{
    const std::vector<double> x = iota(10000);
    std::vector<double> y(x.size());
    for (size_t i = 0; i < x.size(); ++i)
        y[i] = std::sin(static_cast<double>(i) * 0.37);
    const XYSeries out = decimateMinMax(x, y, 2000.5, 3000.5, 10);
    ASSERT_GE(out.x.size(), 3u);
    EXPECT_EQ(out.x.front(), 2000); // the neighbour before the range
    EXPECT_EQ(out.x.back(), 3001);  // the neighbour after
    for (size_t i = 1; i + 1 < out.x.size(); ++i) {
        EXPECT_GE(out.x[i], 2000.5);
        EXPECT_LE(out.x[i], 3000.5);
    }
    EXPECT_LE(out.x.size(), 4u * 10 + 2);

    // A range past the data's end: only the left neighbour and what is in range.
    const XYSeries tail = decimateMinMax(x, y, 9990, 20000, 10);
    EXPECT_EQ(tail.x.front(), 9989);
    EXPECT_EQ(tail.x.back(), 9999);
    EXPECT_EQ(tail.x.size(), 11u);
    // A range between two points: just those two neighbours, so the line still crosses the view.
    const XYSeries between = decimateMinMax(x, y, 10.2, 10.8, 10);
    EXPECT_EQ(between.x, (std::vector<double>{10, 11}));
    // A range with no width.
    const XYSeries single = decimateMinMax(x, y, 50, 50, 1);
    EXPECT_EQ(single.x, (std::vector<double>{49, 50, 51}));
}

TEST(DecimateMinMax, SmallInputComesBackUnchanged)
{
    const std::vector<double> x = {0, 1, 2.5, 3, 7, 8, 9};
    const std::vector<double> y = {5, kNaN, 4, kInf, 3, 3, 1};
    const XYSeries out = decimateMinMax(x, y, 0, 9, 2); // 7 points <= 4 * 2
    EXPECT_EQ(out.x, x);
    ASSERT_EQ(out.y.size(), y.size());
    for (size_t i = 0; i < y.size(); ++i)
        EXPECT_TRUE(out.y[i] == y[i] || (std::isnan(out.y[i]) && std::isnan(y[i]))) << "at " << i;
    EXPECT_TRUE(decimateMinMax({}, {}, 0, 1, 10).x.empty());
}

TEST(DecimateMinMax, RefusesBadArguments)
{
    expectError([] { decimateMinMax({1, 2}, {1}, 0, 1, 10); }, engine::ErrorKind::InvalidInput, "as many");
    expectError([] { decimateMinMax({1}, {1}, 0, 1, 0); }, engine::ErrorKind::InvalidInput, "0 buckets");
    expectError([] { decimateMinMax({1}, {1}, 2, 1, 10); }, engine::ErrorKind::InvalidInput, "range");
    expectError([] { decimateMinMax({1}, {1}, kNaN, 1, 10); }, engine::ErrorKind::InvalidInput, "range");
}
