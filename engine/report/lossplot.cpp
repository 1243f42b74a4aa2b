#include "engine/report/lossplot.h"

#include "engine/core/atomicfile.h"
#include "engine/core/error.h"
#include "engine/report/canvas.h"
#include "engine/report/plotstyle.h"
#include "engine/report/pngwriter.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace engine::report {
namespace {

struct Range {
    double lo = 0;
    double hi = 1;
};

/// "Nice" tick positions (1, 2 or 5 times a power of ten) inside `range`, about `target` of them.
std::vector<double> niceTicks(Range range, int target, bool integersOnly)
{
    const double span = range.hi - range.lo;
    if (!(span > 0) || !std::isfinite(span))
        return {range.lo};
    const double rough = span / std::max(1, target);
    const double magnitude = std::pow(10.0, std::floor(std::log10(rough)));
    const double normalized = rough / magnitude;
    double step = (normalized < 1.5 ? 1 : normalized < 3 ? 2 : normalized < 7 ? 5 : 10) * magnitude;
    if (integersOnly)
        step = std::max(step, 1.0);
    std::vector<double> ticks;
    const double first = std::ceil(range.lo / step - 1e-9);
    for (int i = 0; i < 1000; ++i) {
        const double tick = (first + i) * step;
        if (tick > range.hi + step * 1e-9)
            break;
        ticks.push_back(std::abs(tick) < step * 1e-9 ? 0.0 : tick);
    }
    return ticks;
}

/// Tick labels with just enough decimals to tell neighbours apart.
std::vector<std::string> tickLabels(const std::vector<double> &ticks)
{
    const double step = ticks.size() > 1 ? ticks[1] - ticks[0] : std::max(std::abs(ticks[0]), 1.0);
    const double largest = std::max(std::abs(ticks.front()), std::abs(ticks.back()));
    const int decimals = std::clamp(static_cast<int>(-std::floor(std::log10(step) + 1e-9)), 0, 12);
    const bool scientific = largest >= 1e7 || (largest > 0 && decimals > 6);
    std::vector<std::string> labels;
    for (const double tick : ticks) {
        char buffer[64];
        if (scientific)
            std::snprintf(buffer, sizeof buffer, "%.3g", tick);
        else
            std::snprintf(buffer, sizeof buffer, "%.*f", decimals, tick);
        labels.emplace_back(buffer);
    }
    return labels;
}

/// Printable ASCII only: one '?' per other UTF-8 character.
std::string asciiOnly(const std::string &text)
{
    std::string out;
    for (const char c : text) {
        const auto byte = static_cast<unsigned char>(c);
        if (byte >= 32 && byte <= 126)
            out += c;
        else if (byte < 0x80 || byte >= 0xC0)
            out += '?';
    }
    return out;
}

/// Shortens `text` with "..." until it fits in `width` pixels.
std::string fitted(std::string text, int width, int scale)
{
    if (Canvas::textWidth(text, scale) <= width)
        return text;
    while (!text.empty() && Canvas::textWidth(text + "...", scale) > width)
        text.pop_back();
    return text + "...";
}

Range paddedRange(double lo, double hi, double fraction)
{
    if (hi > lo) {
        const double pad = (hi - lo) * fraction;
        return {lo - pad, hi + pad};
    }
    const double pad = lo != 0 ? std::abs(lo) * 0.1 : 1.0;
    return {lo - pad, hi + pad};
}

} // namespace

std::vector<double> smoothDebiased(const std::vector<double> &values, double weight)
{
    if (!(weight >= 0 && weight < 1))
        throw invalidInput("smoothing weight must be at least 0 and below 1, not " + std::to_string(weight));
    std::vector<double> smoothed;
    smoothed.reserve(values.size());
    double ema = 0;
    int finiteCount = 0; // non-finite values pass through and do not count, as in TensorBoard
    for (const double value : values) {
        if (!std::isfinite(value)) {
            smoothed.push_back(value);
            continue;
        }
        ema = weight * ema + (1 - weight) * value;
        ++finiteCount;
        smoothed.push_back(ema / (1 - std::pow(weight, finiteCount)));
    }
    return smoothed;
}

void writeLossPlotPng(const std::filesystem::path &path, const std::vector<CurvePoint> &curve,
                      const LossPlotOptions &options)
{
    if (options.width < 160 || options.width > 8192 || options.height < 120 || options.height > 8192)
        throw invalidInput("loss plot size must be from 160x120 to 8192x8192 pixels, not " +
                           std::to_string(options.width) + "x" + std::to_string(options.height));
    if (curve.empty())
        throw invalidInput("cannot plot " + path.string() + ": the loss curve has no points");
    std::vector<CurvePoint> points;
    for (const auto &point : curve)
        if (std::isfinite(point.x) && std::isfinite(point.y))
            points.push_back(point);
    if (points.empty())
        throw invalidInput("cannot plot " + path.string() + ": every point of the loss curve is NaN or infinite");
    std::stable_sort(points.begin(), points.end(), [](const CurvePoint &a, const CurvePoint &b) { return a.x < b.x; });

    std::vector<double> ys;
    ys.reserve(points.size());
    for (const auto &point : points)
        ys.push_back(point.y);
    const std::vector<double> smoothed = smoothDebiased(ys, options.smoothing);

    const auto [yMin, yMax] = std::minmax_element(ys.begin(), ys.end());
    const Range yRange = paddedRange(*yMin, *yMax, 0.05);
    const Range xRange = points.front().x < points.back().x ? Range{points.front().x, points.back().x}
                                                              : paddedRange(points.front().x, points.back().x, 0);
    const bool integerSteps =
        std::all_of(points.begin(), points.end(), [](const CurvePoint &p) { return p.x == std::floor(p.x); });

    // Layout, in pixels; everything scales with the picture so that text stays readable.
    const int scale = std::clamp(std::min(options.width / 480, options.height / 270), 1, 4);
    const int titleScale = scale + 1;
    const int pad = 8 * scale;
    const int gap = 4 * scale;
    const int textHeight = Canvas::textHeight(scale);
    const int headerHeight = Canvas::textHeight(titleScale);

    const std::vector<double> yTicks = niceTicks(yRange, std::max(2, options.height / (textHeight * 5)), false);
    const std::vector<std::string> yLabels = tickLabels(yTicks);
    int yLabelWidth = 0;
    for (const auto &label : yLabels)
        yLabelWidth = std::max(yLabelWidth, Canvas::textWidth(label, scale));

    RectI plot;
    plot.x = pad + textHeight + gap * 2 + yLabelWidth + gap;
    plot.y = pad + headerHeight + gap * 2;
    plot.width = options.width - plot.x - pad * 2;
    plot.height = options.height - plot.y - (gap + textHeight + gap * 2 + textHeight + pad);

    // X ticks: as many as fit side by side with room to spare.
    const std::string widestX = tickLabels(niceTicks(xRange, 10, integerSteps)).back();
    const int xTarget = std::max(2, plot.width / std::max(1, Canvas::textWidth(widestX + "0000", scale)));
    const std::vector<double> xTicks = niceTicks(xRange, xTarget, integerSteps);
    const std::vector<std::string> xLabels = tickLabels(xTicks);

    auto toPixelX = [&](double x) { return plot.x + (x - xRange.lo) / (xRange.hi - xRange.lo) * plot.width; };
    auto toPixelY = [&](double y) { return plot.y + plot.height - (y - yRange.lo) / (yRange.hi - yRange.lo) * plot.height; };

    Canvas canvas(options.width, options.height, kBackgroundColor);

    // Grid and ticks.
    for (size_t i = 0; i < yTicks.size(); ++i) {
        const int y = static_cast<int>(std::floor(toPixelY(yTicks[i])));
        canvas.fillRect({plot.x, y, plot.width, 1}, kGridColor);
        canvas.fillRect({plot.x - gap, y, gap, 1}, kFrameColor);
        canvas.drawText(plot.x - gap * 2 - Canvas::textWidth(yLabels[i], scale), y - textHeight / 2, yLabels[i],
                        scale, kTextColor);
    }
    for (size_t i = 0; i < xTicks.size(); ++i) {
        const int x = static_cast<int>(std::floor(toPixelX(xTicks[i])));
        canvas.fillRect({x, plot.y, 1, plot.height}, kGridColor);
        canvas.fillRect({x, plot.y + plot.height, 1, gap}, kFrameColor);
        const int labelWidth = Canvas::textWidth(xLabels[i], scale);
        const int left = std::clamp(x - labelWidth / 2, 0, options.width - labelWidth);
        canvas.drawText(left, plot.y + plot.height + gap * 2, xLabels[i], scale, kTextColor);
    }

    // Curves: raw (light) under smoothed (strong). Without smoothing the raw curve is the strong one.
    const RectI clip{plot.x + 1, plot.y + 1, plot.width - 2, plot.height - 2};
    std::vector<PointF> raw;
    std::vector<PointF> smooth;
    raw.reserve(points.size());
    smooth.reserve(points.size());
    for (size_t i = 0; i < points.size(); ++i) {
        raw.push_back({toPixelX(points[i].x), toPixelY(points[i].y)});
        smooth.push_back({toPixelX(points[i].x), toPixelY(smoothed[i])});
    }
    const bool smoothing = options.smoothing > 0;
    const double dotWidth = points.size() == 1 ? 3.0 * scale : 0.0; // a lone point needs to be seen
    if (smoothing) {
        canvas.strokePolyline(raw, std::max(1.0, dotWidth), kRawCurveColor, clip);
        canvas.strokePolyline(smooth, std::max(1.0 + 0.75 * scale, dotWidth), kSmoothedCurveColor, clip);
    } else {
        canvas.strokePolyline(raw, std::max(1.0 + 0.75 * scale, dotWidth), kSmoothedCurveColor, clip);
    }
    canvas.strokeRect(plot, kFrameColor);

    // Axis names.
    canvas.drawText(plot.x + (plot.width - Canvas::textWidth("step", scale)) / 2,
                    plot.y + plot.height + gap * 3 + textHeight + gap, "step", scale, kTextColor);
    canvas.drawTextUp(pad, plot.y + (plot.height + Canvas::textWidth("loss", scale)) / 2, "loss", scale, kTextColor);

    // Legend at the right of the header row, title at its left.
    int legendLeft = options.width - pad;
    auto legendEntry = [&](const std::string &label, Rgb color) {
        const int labelWidth = Canvas::textWidth(label, scale);
        legendLeft -= labelWidth;
        const int textTop = pad + (headerHeight - textHeight) / 2;
        canvas.drawText(legendLeft, textTop, label, scale, kTextColor);
        legendLeft -= gap + 10 * scale;
        canvas.fillRect({legendLeft, textTop + textHeight / 2 - scale / 2 - 1, 10 * scale, std::max(2, scale)}, color);
        legendLeft -= gap * 3;
    };
    if (smoothing) {
        char label[64];
        std::snprintf(label, sizeof label, "smoothed (%.2g)", options.smoothing);
        legendEntry(label, kSmoothedCurveColor);
        legendEntry("raw", kRawCurveColor);
    }
    // The title is one size up when it fits, else the label size, shortened if need be.
    const std::string title = asciiOnly(options.title);
    const int titleRoom = legendLeft - pad - gap;
    const int shownScale = Canvas::textWidth(title, titleScale) <= titleRoom ? titleScale : scale;
    canvas.drawText(pad, pad + (headerHeight - Canvas::textHeight(shownScale)) / 2, fitted(title, titleRoom, shownScale),
                    shownScale, kTextColor);

    writeFileAtomically(path, encodePng(canvas.width(), canvas.height(), canvas.pixels()));
}

} // namespace engine::report
