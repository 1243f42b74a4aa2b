#include "engine/report/painter.h"

#include <algorithm>
#include <cmath>
#include <numbers>

namespace engine::report {

Painter::Painter(cairo_t *cr, double unit, bool textAsPaths) : m_cr(cr), m_unit(unit), m_textAsPaths(textAsPaths)
{
    cairo_font_options_t *fontOptions = cairo_font_options_create();
    cairo_font_options_set_antialias(fontOptions, CAIRO_ANTIALIAS_GRAY);
    cairo_font_options_set_hint_style(fontOptions, CAIRO_HINT_STYLE_SLIGHT);
    cairo_font_options_set_hint_metrics(fontOptions, CAIRO_HINT_METRICS_OFF); // same layout in every format
    cairo_set_font_options(m_cr, fontOptions);
    cairo_font_options_destroy(fontOptions);
}

double Painter::snapped(double coordinate) { return std::floor(coordinate) + 0.5; }

void Painter::color(Rgb rgb) { cairo_set_source_rgb(m_cr, rgb.r / 255.0, rgb.g / 255.0, rgb.b / 255.0); }

void Painter::font(double size, bool bold)
{
    cairo_select_font_face(m_cr, "DejaVu Sans", CAIRO_FONT_SLANT_NORMAL,
                           bold ? CAIRO_FONT_WEIGHT_BOLD : CAIRO_FONT_WEIGHT_NORMAL);
    cairo_set_font_size(m_cr, std::max(7.0, px(size)));
}

double Painter::textWidth(const std::string &text)
{
    cairo_text_extents_t extents;
    cairo_text_extents(m_cr, text.c_str(), &extents);
    return extents.x_advance;
}

double Painter::capHeight()
{
    cairo_text_extents_t extents;
    cairo_text_extents(m_cr, "0", &extents);
    return -extents.y_bearing;
}

void Painter::text(const std::string &text, double x, double y, double anchor)
{
    cairo_move_to(m_cr, x - anchor * textWidth(text), y + capHeight() / 2);
    if (m_textAsPaths) {
        cairo_text_path(m_cr, text.c_str());
        cairo_fill(m_cr);
    } else {
        cairo_show_text(m_cr, text.c_str());
    }
}

void Painter::textUp(const std::string &text, double x, double y)
{
    cairo_save(m_cr);
    cairo_translate(m_cr, x, y);
    cairo_rotate(m_cr, -std::numbers::pi / 2);
    this->text(text, 0, 0, 0.5);
    cairo_restore(m_cr);
}

std::string Painter::fitted(std::string text, double width)
{
    if (textWidth(text) <= width)
        return text;
    const std::string ellipsis = "\u2026";
    while (!text.empty() && textWidth(text + ellipsis) > width) {
        while (!text.empty() && (static_cast<unsigned char>(text.back()) & 0xC0) == 0x80)
            text.pop_back(); // the last character's continuation bytes
        if (!text.empty())
            text.pop_back(); // and its first byte
    }
    return text + ellipsis;
}

void Painter::line(double x0, double y0, double x1, double y1, double width, Rgb rgb)
{
    color(rgb);
    cairo_set_line_width(m_cr, width);
    cairo_move_to(m_cr, x0, y0);
    cairo_line_to(m_cr, x1, y1);
    cairo_stroke(m_cr);
}

void Painter::polyline(const XYSeries &pixels, double width, Rgb rgb)
{
    color(rgb);
    cairo_set_line_width(m_cr, width);
    cairo_set_line_join(m_cr, CAIRO_LINE_JOIN_ROUND);
    cairo_set_line_cap(m_cr, CAIRO_LINE_CAP_ROUND);
    size_t run = 0; // points in the current piece of line
    for (size_t i = 0; i < pixels.x.size(); ++i) {
        if (!std::isfinite(pixels.y[i]))
            continue;
        if (run++ == 0)
            cairo_move_to(m_cr, pixels.x[i], pixels.y[i]);
        else
            cairo_line_to(m_cr, pixels.x[i], pixels.y[i]);
        if (i + 1 < pixels.x.size() && std::isfinite(pixels.y[i + 1]))
            continue;
        if (run > 1) {
            cairo_stroke(m_cr);
        } else { // a dot where a line has only one point between gaps
            cairo_new_path(m_cr);
            cairo_arc(m_cr, pixels.x[i], pixels.y[i], width * 1.2, 0, 2 * std::numbers::pi);
            cairo_fill(m_cr);
        }
        run = 0;
    }
}

void Painter::marker(double x, double y, double radius, Rgb rgb)
{
    cairo_new_path(m_cr);
    cairo_arc(m_cr, x, y, radius, 0, 2 * std::numbers::pi);
    color(rgb);
    cairo_fill_preserve(m_cr);
    color(kBackgroundColor);
    cairo_set_line_width(m_cr, std::max(1.0, radius * 0.35));
    cairo_stroke(m_cr);
}

} // namespace engine::report
