#include "engine/report/canvas.h"

#include "engine/report/bitmapfont.h"

#include <algorithm>
#include <cmath>

namespace engine::report {
namespace {

/// Distance from p to the segment a-b.
double distanceToSegment(PointF p, PointF a, PointF b)
{
    const double dx = b.x - a.x;
    const double dy = b.y - a.y;
    const double lengthSquared = dx * dx + dy * dy;
    double t = 0;
    if (lengthSquared > 0)
        t = std::clamp(((p.x - a.x) * dx + (p.y - a.y) * dy) / lengthSquared, 0.0, 1.0);
    return std::hypot(p.x - (a.x + t * dx), p.y - (a.y + t * dy));
}

RectI intersect(const RectI &a, const RectI &b)
{
    const int x0 = std::max(a.x, b.x);
    const int y0 = std::max(a.y, b.y);
    const int x1 = std::min(a.x + a.width, b.x + b.width);
    const int y1 = std::min(a.y + a.height, b.y + b.height);
    return {x0, y0, std::max(0, x1 - x0), std::max(0, y1 - y0)};
}

} // namespace

Canvas::Canvas(int width, int height, Rgb background)
    : m_width(width), m_height(height), m_pixels(static_cast<size_t>(width) * height * 3)
{
    fillRect({0, 0, width, height}, background);
}

Rgb Canvas::pixel(int x, int y) const
{
    const size_t i = (static_cast<size_t>(y) * m_width + x) * 3;
    return {m_pixels[i], m_pixels[i + 1], m_pixels[i + 2]};
}

void Canvas::blend(int x, int y, Rgb color, double coverage)
{
    if (x < 0 || y < 0 || x >= m_width || y >= m_height || coverage <= 0)
        return;
    const size_t i = (static_cast<size_t>(y) * m_width + x) * 3;
    if (coverage >= 1) {
        m_pixels[i] = color.r;
        m_pixels[i + 1] = color.g;
        m_pixels[i + 2] = color.b;
        return;
    }
    auto mix = [coverage](uint8_t under, uint8_t over) {
        return static_cast<uint8_t>(std::lround(under + (over - under) * coverage));
    };
    m_pixels[i] = mix(m_pixels[i], color.r);
    m_pixels[i + 1] = mix(m_pixels[i + 1], color.g);
    m_pixels[i + 2] = mix(m_pixels[i + 2], color.b);
}

void Canvas::fillRect(const RectI &rect, Rgb color)
{
    const RectI r = intersect(rect, {0, 0, m_width, m_height});
    for (int y = r.y; y < r.y + r.height; ++y)
        for (int x = r.x; x < r.x + r.width; ++x)
            blend(x, y, color, 1);
}

void Canvas::strokeRect(const RectI &rect, Rgb color)
{
    fillRect({rect.x, rect.y, rect.width, 1}, color);
    fillRect({rect.x, rect.y + rect.height - 1, rect.width, 1}, color);
    fillRect({rect.x, rect.y, 1, rect.height}, color);
    fillRect({rect.x + rect.width - 1, rect.y, 1, rect.height}, color);
}

void Canvas::strokePolyline(const std::vector<PointF> &points, double lineWidth, Rgb color, const RectI &clip)
{
    const RectI area = intersect(clip, {0, 0, m_width, m_height});
    if (points.empty() || area.width == 0 || area.height == 0)
        return;
    // Coverage is accumulated as a maximum over segments, then blended once per pixel.
    std::vector<float> coverage(static_cast<size_t>(area.width) * area.height, 0.0f);
    const double half = lineWidth / 2;
    const double reach = half + 1;
    auto stamp = [&](PointF a, PointF b) {
        const int x0 = std::max(area.x, static_cast<int>(std::floor(std::min(a.x, b.x) - reach)));
        const int x1 = std::min(area.x + area.width - 1, static_cast<int>(std::ceil(std::max(a.x, b.x) + reach)));
        const int y0 = std::max(area.y, static_cast<int>(std::floor(std::min(a.y, b.y) - reach)));
        const int y1 = std::min(area.y + area.height - 1, static_cast<int>(std::ceil(std::max(a.y, b.y) + reach)));
        for (int y = y0; y <= y1; ++y) {
            for (int x = x0; x <= x1; ++x) {
                const double d = distanceToSegment({x + 0.5, y + 0.5}, a, b);
                const float c = static_cast<float>(std::clamp(half + 0.5 - d, 0.0, 1.0));
                float &cell = coverage[static_cast<size_t>(y - area.y) * area.width + (x - area.x)];
                cell = std::max(cell, c);
            }
        }
    };
    if (points.size() == 1)
        stamp(points[0], points[0]);
    for (size_t i = 1; i < points.size(); ++i)
        stamp(points[i - 1], points[i]);
    for (int y = 0; y < area.height; ++y)
        for (int x = 0; x < area.width; ++x)
            blend(area.x + x, area.y + y, color, coverage[static_cast<size_t>(y) * area.width + x]);
}

void Canvas::drawText(int x, int y, std::string_view text, int scale, Rgb color)
{
    for (size_t i = 0; i < text.size(); ++i) {
        const auto &rows = glyphRows(text[i]);
        const int left = x + static_cast<int>(i) * kGlyphAdvance * scale;
        const int top = y + glyphDrop(text[i]) * scale;
        for (int row = 0; row < kGlyphHeight; ++row)
            for (int column = 0; column < kGlyphWidth; ++column)
                if (rows[row] & (0x10 >> column))
                    fillRect({left + column * scale, top + row * scale, scale, scale}, color);
    }
}

void Canvas::drawTextUp(int x, int y, std::string_view text, int scale, Rgb color)
{
    // Font pixel (column, row) of the i-th glyph lands at (x + row, y - (i * advance + column) - 1), scaled.
    for (size_t i = 0; i < text.size(); ++i) {
        const auto &rows = glyphRows(text[i]);
        const int bottom = y - static_cast<int>(i) * kGlyphAdvance * scale;
        const int left = x + glyphDrop(text[i]) * scale;
        for (int row = 0; row < kGlyphHeight; ++row)
            for (int column = 0; column < kGlyphWidth; ++column)
                if (rows[row] & (0x10 >> column))
                    fillRect({left + row * scale, bottom - (column + 1) * scale, scale, scale}, color);
    }
}

int Canvas::textWidth(std::string_view text, int scale)
{
    if (text.empty())
        return 0;
    return (static_cast<int>(text.size()) * kGlyphAdvance - (kGlyphAdvance - kGlyphWidth)) * scale;
}

int Canvas::textHeight(int scale) { return kGlyphHeight * scale; }

} // namespace engine::report
