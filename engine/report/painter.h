#pragma once
// The few drawing operations the report pictures need, on a cairo context: lines, polylines with
// gaps, markers and text in one font family, with every length scaled by one unit so a bigger
// picture gets bigger text and lines. Only the report's own .cpp files include this (cairo is a
// private dependency of engine_report).

#include "engine/report/plotstyle.h"
#include "engine/report/series.h"

#include <cairo.h>

#include <string>

namespace engine::report {

class Painter {
public:
    /// `unit`: pixels per length unit. `textAsPaths`: glyphs become filled outlines (for SVG: Qt's
    /// SVG renderer does not draw the <symbol> glyphs cairo writes for text).
    Painter(cairo_t *cr, double unit, bool textAsPaths);

    /// `length` units in pixels.
    double px(double length) const { return length * m_unit; }
    /// A crisp one-pixel line lies on a pixel's centre.
    static double snapped(double coordinate);

    void color(Rgb rgb);
    /// DejaVu Sans at `size` units (at least 7 pixels).
    void font(double size, bool bold = false);
    double textWidth(const std::string &text);
    /// Height of a digit of the current font, for centring text on a line.
    double capHeight();
    /// Text whose horizontal anchor (0 left, 0.5 centre, 1 right) is at x and whose digits are
    /// centred on y. `text` must be valid UTF-8.
    void text(const std::string &text, double x, double y, double anchor);
    /// Text reading bottom to top, centred on (x, y).
    void textUp(const std::string &text, double x, double y);
    /// `text` cut with an ellipsis, a whole UTF-8 character at a time, until it is at most `width` wide.
    std::string fitted(std::string text, double width);

    void line(double x0, double y0, double x1, double y1, double width, Rgb rgb);
    /// A polyline through points given in pixels; a NaN y breaks it, a lone point shows as a dot.
    void polyline(const XYSeries &pixels, double width, Rgb rgb);
    /// A filled circle with a ring of the background colour (the eval-loss marker).
    void marker(double x, double y, double radius, Rgb rgb);

private:
    cairo_t *m_cr;
    double m_unit;
    bool m_textAsPaths;
};

} // namespace engine::report
