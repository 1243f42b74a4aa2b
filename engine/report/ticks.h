#pragma once
// Axis ticks for the report pictures: "nice" positions (1, 2 or 5 times a power of ten) and labels
// with just enough decimals to tell neighbours apart.

#include <string>
#include <vector>

namespace engine::report {

/// Tick positions inside [lo, hi], about `target` of them; only whole numbers with `integersOnly`.
/// A range without width gets one tick at lo.
std::vector<double> niceTicks(double lo, double hi, int target, bool integersOnly);

/// One label per tick. Whole steps of 10,000 and more read "250k", "1.5M", "3G"; very large or very small
/// values are written in scientific notation.
std::vector<std::string> tickLabels(const std::vector<double> &ticks);

} // namespace engine::report
