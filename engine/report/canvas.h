#pragma once
// An RGB pixel buffer with the few drawing operations a chart needs: rectangles, anti-aliased
// polylines and bitmap-font text. No Qt, so the headless CLI can draw pictures.

#include <cstdint>
#include <string_view>
#include <vector>

namespace engine::report {

/// An 8-bit-per-channel colour.
struct Rgb {
    uint8_t r = 0;
    uint8_t g = 0;
    uint8_t b = 0;
    friend bool operator==(const Rgb &, const Rgb &) = default;
};

/// A point in pixel coordinates; (0, 0) is the top-left corner of the top-left pixel.
struct PointF {
    double x = 0;
    double y = 0;
};

/// An axis-aligned pixel rectangle [x, x + width) x [y, y + height).
struct RectI {
    int x = 0;
    int y = 0;
    int width = 0;
    int height = 0;
};

/// A width x height RGB image, rows top to bottom, 3 bytes per pixel.
class Canvas {
public:
    /// A canvas filled with `background`.
    Canvas(int width, int height, Rgb background);

    int width() const { return m_width; }
    int height() const { return m_height; }
    /// The pixels, 3 * width * height bytes, row-major from the top-left.
    const std::vector<uint8_t> &pixels() const { return m_pixels; }
    Rgb pixel(int x, int y) const;

    /// Fills the rectangle (clipped to the canvas) with an opaque colour.
    void fillRect(const RectI &rect, Rgb color);
    /// Draws a one-pixel rectangle outline inside `rect`.
    void strokeRect(const RectI &rect, Rgb color);
    /// Draws an anti-aliased polyline of `lineWidth` pixels, clipped to `clip`. Joints are drawn
    /// once, so overlapping segments do not darken.
    void strokePolyline(const std::vector<PointF> &points, double lineWidth, Rgb color, const RectI &clip);
    /// Draws ASCII text with its top-left corner at (x, y), each font pixel `scale` pixels wide.
    void drawText(int x, int y, std::string_view text, int scale, Rgb color);
    /// Draws text rotated 90 degrees counter-clockwise (reading bottom to top); (x, y) is its
    /// bottom-left corner.
    void drawTextUp(int x, int y, std::string_view text, int scale, Rgb color);

    /// Width in pixels of `text` drawn at `scale` (no trailing spacing column).
    static int textWidth(std::string_view text, int scale);
    /// Height in pixels of a line of text drawn at `scale`, without the descenders of g, p, q and y
    /// (they reach 2 * scale pixels lower).
    static int textHeight(int scale);

private:
    void blend(int x, int y, Rgb color, double coverage);

    int m_width;
    int m_height;
    std::vector<uint8_t> m_pixels;
};

} // namespace engine::report
