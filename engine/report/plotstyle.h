#pragma once
// Colours of the report pictures (shared with the tests that look for them).

#include "engine/report/canvas.h"

namespace engine::report {

inline constexpr Rgb kBackgroundColor{255, 255, 255};
inline constexpr Rgb kGridColor{232, 232, 232};
inline constexpr Rgb kFrameColor{140, 140, 140};
inline constexpr Rgb kTextColor{40, 40, 40};
inline constexpr Rgb kRawCurveColor{166, 200, 232};      ///< the raw values: light blue
inline constexpr Rgb kSmoothedCurveColor{23, 92, 176};   ///< the smoothed curve: strong blue

} // namespace engine::report
