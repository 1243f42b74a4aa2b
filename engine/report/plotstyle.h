#pragma once
// Colours of the report pictures (shared with the tests that look for them).

#include <cstdint>

namespace engine::report {

/// An 8-bit-per-channel colour.
struct Rgb {
    uint8_t r = 0;
    uint8_t g = 0;
    uint8_t b = 0;
    friend bool operator==(const Rgb &, const Rgb &) = default;
};

inline constexpr Rgb kBackgroundColor{255, 255, 255};
inline constexpr Rgb kGridColor{234, 236, 240};
inline constexpr Rgb kAxisColor{160, 164, 171};
inline constexpr Rgb kTextColor{60, 64, 67};
inline constexpr Rgb kTitleColor{32, 33, 36};
inline constexpr Rgb kRawCurveColor{168, 199, 236};     ///< the raw values: light blue
inline constexpr Rgb kSmoothedCurveColor{25, 103, 210}; ///< the smoothed curve: strong blue
inline constexpr Rgb kEvalColor{232, 113, 10};          ///< eval loss points: orange

} // namespace engine::report
