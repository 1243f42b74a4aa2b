#pragma once
// Draws a metric's curve (a line whose x never goes back) without antialiasing straight into an image,
// one vertical span per pixel column: the rows the line passes through in that column. A curve of
// thousands of points per plot width is a span per column to fill, where QPainter draws every segment
// on its own; and each pixel is blended once, so a translucent line does not darken where its segments
// overlap (a min/max-decimated curve zigzags inside every column). Dashes follow the line's length.
// Needs no GUI thread: the images of different plots are drawn on several threads at once.
//
//   QImage image(size, QImage::Format_ARGB32_Premultiplied);
//   ui::rasterizeCurve(image, points, {QColor(31, 119, 180, 70), 1, {}}); // points in device pixels

#include <QColor>
#include <QImage>
#include <QPointF>
#include <QVector>

namespace ui {

struct CurvePen {
    QColor color;
    int width = 1;          ///< device pixels (a 1 px line on a 2x screen is 2)
    QVector<double> dashes; ///< on, off, on, ... lengths along the line in device pixels; empty: solid
};

/// Draws the line through `points` (device pixels of `image`, pixel (i, j) covering [i, i+1) x [j, j+1);
/// x ascending; a point with a non-finite coordinate is a gap: the line breaks there, and a point with
/// gaps on both sides is drawn as a dot) into `image`, which must be Format_ARGB32_Premultiplied.
/// Column c gets the rows from floor(lowest) to floor(highest) y of the line over x in [c, c+1), each
/// blended once with the pen's colour. What falls outside the image is clipped; coordinates far outside
/// it (even 1e300) are safe.
void rasterizeCurve(QImage &image, const QVector<QPointF> &points, const CurvePen &pen);

} // namespace ui
