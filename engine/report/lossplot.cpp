#include "engine/report/lossplot.h"

#include "engine/core/atomicfile.h"
#include "engine/core/error.h"
#include "engine/report/painter.h"
#include "engine/report/plotstyle.h"
#include "engine/report/ticks.h"

#include <cairo-pdf.h>
#include <cairo-svg.h>
#include <cairo.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <memory>
#include <string_view>
#include <tuple>
#include <utility>

namespace engine::report {
namespace {

/// The curve as it is drawn: finite x, ascending; y as given (NaN breaks the line).
struct PlotData {
    std::vector<double> x, y, smoothed;
    std::vector<double> evalX, evalY;
    double xLo = 0, xHi = 1, yLo = 0, yHi = 1;
    bool integerSteps = true;
};

struct Rect {
    double x = 0, y = 0, width = 0, height = 0;
    double right() const { return x + width; }
    double bottom() const { return y + height; }
};

/// Splits a curve into ascending x and y, dropping points whose x is not finite.
void sortedFinite(const std::vector<CurvePoint> &curve, std::vector<double> &xs, std::vector<double> &ys)
{
    std::vector<CurvePoint> points;
    points.reserve(curve.size());
    for (const CurvePoint &point : curve)
        if (std::isfinite(point.x))
            points.push_back(point);
    auto byX = [](const CurvePoint &a, const CurvePoint &b) { return a.x < b.x; };
    if (!std::is_sorted(points.begin(), points.end(), byX))
        std::stable_sort(points.begin(), points.end(), byX);
    xs.reserve(points.size());
    ys.reserve(points.size());
    for (const CurvePoint &point : points) {
        xs.push_back(point.x);
        ys.push_back(point.y);
    }
}

/// [lo, hi] widened by `fraction` of its span on each side; a range without width gets some.
std::pair<double, double> padded(double lo, double hi, double fraction)
{
    if (hi > lo) {
        const double pad = (hi - lo) * fraction;
        return {lo - pad, hi + pad};
    }
    const double pad = lo != 0 ? std::abs(lo) * 0.1 : 1.0;
    return {lo - pad, hi + pad};
}

PlotData prepare(const std::filesystem::path &path, const std::vector<CurvePoint> &curve, const LossPlotOptions &options)
{
    if (options.width < 160 || options.width > 8192 || options.height < 120 || options.height > 8192)
        throw invalidInput("loss plot size must be from 160x120 to 8192x8192, not " + std::to_string(options.width)
                           + "x" + std::to_string(options.height));
    if (curve.empty())
        throw invalidInput("cannot plot " + path.string() + ": the loss curve has no points");
    PlotData data;
    sortedFinite(curve, data.x, data.y);
    sortedFinite(options.evalCurve, data.evalX, data.evalY);
    double yLo = INFINITY, yHi = -INFINITY, xLo = INFINITY, xHi = -INFINITY;
    auto extend = [&](const std::vector<double> &xs, const std::vector<double> &ys) {
        for (size_t i = 0; i < xs.size(); ++i) {
            if (!std::isfinite(ys[i]))
                continue;
            yLo = std::min(yLo, ys[i]);
            yHi = std::max(yHi, ys[i]);
            xLo = std::min(xLo, xs[i]);
            xHi = std::max(xHi, xs[i]);
            data.integerSteps = data.integerSteps && xs[i] == std::floor(xs[i]);
        }
    };
    extend(data.x, data.y);
    if (!(yLo <= yHi))
        throw invalidInput("cannot plot " + path.string() + ": every point of the loss curve is NaN or infinite");
    extend(data.evalX, data.evalY);
    data.smoothed = smoothDebiased(data.y, options.smoothing); // the full data, before any decimation
    std::tie(data.yLo, data.yHi) = padded(yLo, yHi, 0.05);
    std::tie(data.xLo, data.xHi) = xLo < xHi ? std::pair{xLo, xHi} : padded(xLo, xHi, 0);
    return data;
}

/// Valid UTF-8 with control characters as spaces; each byte of a broken sequence becomes '?'.
std::string cleanUtf8(std::string_view text)
{
    std::string out;
    size_t i = 0;
    while (i < text.size()) {
        const auto lead = static_cast<unsigned char>(text[i]);
        size_t length = lead < 0x80 ? 1 : (lead >> 5) == 0x6 ? 2 : (lead >> 4) == 0xE ? 3 : (lead >> 3) == 0x1E ? 4 : 0;
        if (length > 1) {
            bool valid = i + length <= text.size();
            for (size_t k = 1; valid && k < length; ++k)
                valid = (static_cast<unsigned char>(text[i + k]) & 0xC0) == 0x80;
            if (valid) { // refuse overlong forms, surrogates and code points past U+10FFFF
                uint32_t code = lead & (0x7F >> length);
                for (size_t k = 1; k < length; ++k)
                    code = (code << 6) | (static_cast<unsigned char>(text[i + k]) & 0x3F);
                static constexpr uint32_t kSmallest[5] = {0, 0, 0x80, 0x800, 0x10000};
                valid = code >= kSmallest[length] && code <= 0x10FFFF && !(code >= 0xD800 && code <= 0xDFFF);
            }
            if (!valid)
                length = 0;
        }
        if (length == 0) {
            out += '?';
            ++i;
        } else if (length == 1) {
            out += std::iscntrl(lead) ? ' ' : static_cast<char>(lead);
            ++i;
        } else {
            out.append(text.substr(i, length));
            i += length;
        }
    }
    return out;
}

struct SurfaceDeleter {
    void operator()(cairo_surface_t *surface) const { cairo_surface_destroy(surface); }
};
struct ContextDeleter {
    void operator()(cairo_t *cr) const { cairo_destroy(cr); }
};
using SurfacePtr = std::unique_ptr<cairo_surface_t, SurfaceDeleter>;
using ContextPtr = std::unique_ptr<cairo_t, ContextDeleter>;

/// cairo's output callback: appends to a std::string (no exception may cross cairo's C frames).
cairo_status_t appendBytes(void *closure, const unsigned char *data, unsigned int length)
{
    try {
        static_cast<std::string *>(closure)->append(reinterpret_cast<const char *>(data), length);
        return CAIRO_STATUS_SUCCESS;
    } catch (...) {
        return CAIRO_STATUS_WRITE_ERROR;
    }
}

void check(cairo_status_t status, const std::filesystem::path &path)
{
    if (status != CAIRO_STATUS_SUCCESS)
        throw Error(ErrorKind::Internal, "cannot draw " + path.string() + ": cairo: " + cairo_status_to_string(status));
}

void draw(cairo_t *cr, const PlotData &data, const LossPlotOptions &options, bool textAsPaths)
{
    const double width = options.width;
    const double height = options.height;
    // One unit is a pixel at 960x540; bigger pictures get bigger text and lines.
    const double unit = std::clamp(std::min(width / 960.0, height / 540.0), 0.6, 8.0);
    Painter paint(cr, unit, textAsPaths);

    paint.color(kBackgroundColor);
    cairo_paint(cr);

    const double margin = paint.px(18);
    const double tickFont = 12;
    const double labelFont = 13;
    const double titleFont = 16;

    // Header row: the title on the left, the legend on the right.
    paint.font(titleFont, true);
    const double headerHeight = paint.capHeight() * 1.6;
    const double headerCentre = margin + headerHeight / 2;

    // Y ticks first: their labels decide how far the plot starts from the left.
    paint.font(tickFont);
    const double tickHeight = paint.capHeight();
    Rect plot;
    plot.y = margin + headerHeight + paint.px(14);
    const double xTickRoom = paint.px(8) + tickHeight + paint.px(12) + paint.capHeight() * 1.1;
    plot.height = height - plot.y - margin - xTickRoom;
    const int yTarget = std::max(2, static_cast<int>(plot.height / (tickHeight * 5)));
    const std::vector<double> yTicks = niceTicks(data.yLo, data.yHi, yTarget, false);
    const std::vector<std::string> yLabels = tickLabels(yTicks);
    double yLabelWidth = 0;
    for (const std::string &label : yLabels)
        yLabelWidth = std::max(yLabelWidth, paint.textWidth(label));
    paint.font(labelFont);
    plot.x = margin + paint.capHeight() * 1.2 + paint.px(12) + yLabelWidth + paint.px(8);
    paint.font(tickFont);
    plot.width = width - plot.x - margin - paint.px(6);

    // X ticks: as many as fit side by side with room to spare.
    const std::string widestX = tickLabels(niceTicks(data.xLo, data.xHi, 10, data.integerSteps)).back();
    const int xTarget = std::max(2, static_cast<int>(plot.width / (paint.textWidth(widestX) + paint.px(56))));
    const std::vector<double> xTicks = niceTicks(data.xLo, data.xHi, xTarget, data.integerSteps);
    const std::vector<std::string> xLabels = tickLabels(xTicks);

    auto toX = [&](double x) { return plot.x + (x - data.xLo) / (data.xHi - data.xLo) * plot.width; };
    auto toY = [&](double y) { return plot.bottom() - (y - data.yLo) / (data.yHi - data.yLo) * plot.height; };

    // Grid, tick marks and tick labels.
    const double hairline = std::max(1.0, std::round(paint.px(1)));
    for (size_t i = 0; i < yTicks.size(); ++i) {
        const double y = Painter::snapped(toY(yTicks[i]));
        paint.line(plot.x, y, plot.right(), y, hairline, kGridColor);
        paint.color(kTextColor);
        paint.text(yLabels[i], plot.x - paint.px(8), y, 1.0);
    }
    for (size_t i = 0; i < xTicks.size(); ++i) {
        const double x = Painter::snapped(toX(xTicks[i]));
        paint.line(x, plot.y, x, plot.bottom(), hairline, kGridColor);
        paint.line(x, plot.bottom(), x, plot.bottom() + paint.px(5), hairline, kAxisColor);
        paint.color(kTextColor);
        const double labelWidth = paint.textWidth(xLabels[i]);
        const double centre = std::clamp(x, labelWidth / 2 + paint.px(2), width - labelWidth / 2 - paint.px(2));
        paint.text(xLabels[i], centre, plot.bottom() + paint.px(8) + tickHeight, 0.5);
    }
    const double axisX = Painter::snapped(plot.x);
    const double axisY = Painter::snapped(plot.bottom());
    paint.line(axisX, plot.y, axisX, axisY, hairline, kAxisColor);
    paint.line(axisX, axisY, plot.right(), axisY, hairline, kAxisColor);

    // Axis names.
    paint.font(labelFont);
    paint.color(kTextColor);
    paint.text("step", plot.x + plot.width / 2, height - margin - paint.capHeight() / 2, 0.5);
    paint.textUp("loss", margin + paint.capHeight() / 2, plot.y + plot.height / 2);

    // Curves, clipped to the plot: raw (light) under smoothed (strong), each decimated to the pixel
    // columns from the full data; without smoothing the raw curve is the strong one.
    cairo_save(cr);
    cairo_rectangle(cr, plot.x + hairline, plot.y - paint.px(4), plot.width + paint.px(4), plot.height + paint.px(4));
    cairo_clip(cr);
    const int buckets = std::max(1, static_cast<int>(std::ceil(plot.width)));
    const bool smoothing = options.smoothing > 0;
    const double strongWidth = std::max(1.5, paint.px(2));
    auto inPixels = [&](const std::vector<double> &ys) {
        XYSeries points = decimateMinMax(data.x, ys, data.xLo, data.xHi, buckets);
        for (size_t i = 0; i < points.x.size(); ++i) {
            points.x[i] = toX(points.x[i]);
            points.y[i] = toY(points.y[i]); // NaN stays NaN: a gap
        }
        return points;
    };
    if (smoothing) {
        paint.polyline(inPixels(data.y), std::max(1.0, paint.px(1.2)), kRawCurveColor);
        paint.polyline(inPixels(data.smoothed), strongWidth, kSmoothedCurveColor);
    } else {
        paint.polyline(inPixels(data.y), strongWidth, kSmoothedCurveColor);
    }
    cairo_restore(cr);
    // Eval markers are whole even at the plot's edges; only those outside the x range are left out.
    const XYSeries eval = decimateMinMax(data.evalX, data.evalY, data.xLo, data.xHi, buckets);
    const double markerRadius = std::max(2.5, paint.px(3.5));
    for (size_t i = 0; i < eval.x.size(); ++i)
        if (std::isfinite(eval.y[i]) && eval.x[i] >= data.xLo && eval.x[i] <= data.xHi)
            paint.marker(toX(eval.x[i]), toY(eval.y[i]), markerRadius, kEvalColor);

    // Legend, right to left at the right of the header row.
    paint.font(labelFont);
    double legendLeft = width - margin;
    auto legendEntry = [&](const std::string &label, Rgb rgb, bool isMarker, double lineWidth) {
        legendLeft -= paint.textWidth(label);
        paint.color(kTextColor);
        paint.text(label, legendLeft, headerCentre, 0);
        const double swatch = paint.px(18);
        legendLeft -= paint.px(6) + swatch;
        if (isMarker)
            paint.marker(legendLeft + swatch / 2, headerCentre, markerRadius, rgb);
        else
            paint.line(legendLeft, headerCentre, legendLeft + swatch, headerCentre, lineWidth, rgb);
        legendLeft -= paint.px(18);
    };
    bool hasEval = std::any_of(data.evalY.begin(), data.evalY.end(), [](double y) { return std::isfinite(y); });
    if (hasEval)
        legendEntry("eval", kEvalColor, true, 0);
    if (smoothing) {
        char label[64];
        std::snprintf(label, sizeof label, "smoothed (%.3g)", options.smoothing);
        legendEntry(label, kSmoothedCurveColor, false, strongWidth);
        legendEntry("raw", kRawCurveColor, false, std::max(1.5, paint.px(2)));
    } else {
        legendEntry("train", kSmoothedCurveColor, false, strongWidth);
    }

    // The title, shortened if the legend leaves it too little room.
    paint.font(titleFont, true);
    paint.color(kTitleColor);
    paint.text(paint.fitted(cleanUtf8(options.title), legendLeft - margin), margin, headerCentre, 0);
}

/// The picture's bytes in `format`.
std::string render(PlotFormat format, const std::filesystem::path &path, const std::vector<CurvePoint> &curve,
                   const LossPlotOptions &options)
{
    const PlotData data = prepare(path, curve, options);
    std::string bytes;
    SurfacePtr surface;
    switch (format) {
    case PlotFormat::Png:
        surface.reset(cairo_image_surface_create(CAIRO_FORMAT_RGB24, options.width, options.height));
        break;
    case PlotFormat::Svg:
        surface.reset(cairo_svg_surface_create_for_stream(appendBytes, &bytes, options.width, options.height));
        cairo_svg_surface_set_document_unit(surface.get(), CAIRO_SVG_UNIT_PX);
        break;
    case PlotFormat::Pdf:
        surface.reset(cairo_pdf_surface_create_for_stream(appendBytes, &bytes, options.width, options.height));
        cairo_pdf_surface_set_metadata(surface.get(), CAIRO_PDF_METADATA_TITLE, cleanUtf8(options.title).c_str());
        cairo_pdf_surface_set_metadata(surface.get(), CAIRO_PDF_METADATA_CREATOR, "tunebench");
        break;
    }
    check(cairo_surface_status(surface.get()), path);
    {
        ContextPtr cr(cairo_create(surface.get()));
        draw(cr.get(), data, options, format == PlotFormat::Svg);
        check(cairo_status(cr.get()), path);
    }
    if (format == PlotFormat::Png)
        check(cairo_surface_write_to_png_stream(surface.get(), appendBytes, &bytes), path);
    cairo_surface_finish(surface.get()); // SVG and PDF write their last bytes here
    check(cairo_surface_status(surface.get()), path);
    return bytes;
}

} // namespace

PlotFormat plotFormatFor(const std::filesystem::path &path)
{
    std::string extension = path.extension().string();
    std::transform(extension.begin(), extension.end(), extension.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    if (extension == ".png")
        return PlotFormat::Png;
    if (extension == ".svg")
        return PlotFormat::Svg;
    if (extension == ".pdf")
        return PlotFormat::Pdf;
    throw invalidInput("cannot write the plot " + path.string() + ": "
                       + (extension.empty() ? std::string("it has no extension")
                                            : "the extension \"" + path.extension().string() + "\" is not known")
                       + "; use .png, .svg or .pdf");
}

void writeLossPlot(const std::filesystem::path &path, const std::vector<CurvePoint> &curve, const LossPlotOptions &options)
{
    const PlotFormat format = plotFormatFor(path);
    writeFileAtomically(path, render(format, path, curve, options));
}

void writeLossPlotPng(const std::filesystem::path &path, const std::vector<CurvePoint> &curve,
                      const LossPlotOptions &options)
{
    writeFileAtomically(path, render(PlotFormat::Png, path, curve, options));
}

} // namespace engine::report
