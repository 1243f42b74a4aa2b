#pragma once
// A tiny 5x7 bitmap font for printable ASCII, drawn for tunebench (no font files, no Qt).

#include <array>
#include <cstdint>

namespace engine::report {

inline constexpr int kGlyphWidth = 5;   ///< pixels per glyph column set, before scaling
inline constexpr int kGlyphHeight = 7;  ///< pixels per glyph, before scaling
inline constexpr int kGlyphAdvance = 6; ///< glyph width plus one column of spacing

/// Rows that `c` is drawn below the others: 2 for the descenders g, p, q and y, else 0.
int glyphDrop(char c);

/// Seven rows of five bits (bit 4 is the leftmost pixel) for `c`; '?' for characters outside 32..126.
const std::array<uint8_t, kGlyphHeight> &glyphRows(char c);

} // namespace engine::report
