#pragma once
// Comparing two drawings of the same thing, pixel by pixel, for the ui tests (GoogleTest assertions).

#include <QImage>

#include <functional>

namespace uitest {

/// Two drawings of one line agree to within a pixel: every pixel `lit` in either image has a lit pixel
/// of the other at most one row and one column away (a failed EXPECT names each pixel that has none).
/// Returns how many pixels of `ours` are lit, for the caller to check that a line was drawn at all.
int expectSameLineToWithinAPixel(const QImage &ours, const QImage &reference, const std::function<bool(QRgb)> &lit);

} // namespace uitest
