#pragma once
// A picture of a loss curve (PNG, SVG or PDF), drawn with cairo so the headless CLI, which has no
// QApplication, writes the same curve the GUI shows: the raw values, their debiased moving average
// computed on the full data (series.h), and the eval loss as marked points.

#include "engine/report/series.h"

#include <filesystem>
#include <string>
#include <vector>

namespace engine::report {

struct CurvePoint {
    double x = 0; ///< step
    double y = 0; ///< value
};

struct LossPlotOptions {
    int width = 960;                  ///< pixels (PNG) or points (SVG, PDF), 160 to 8192
    int height = 540;                 ///< pixels (PNG) or points (SVG, PDF), 120 to 8192
    std::string title;                ///< drawn at the top (UTF-8; invalid bytes show as '?')
    double smoothing = 0.9;           ///< debiased EMA weight for the smoothed line (0 = none)
    std::vector<CurvePoint> evalCurve; ///< eval loss, drawn as marked points; empty = none
};

/// The picture formats writeLossPlot knows, by file extension.
enum class PlotFormat { Png, Svg, Pdf };

/// The format for `path`'s extension (.png, .svg, .pdf, any case). Throws Error(InvalidInput) naming
/// the extension otherwise.
PlotFormat plotFormatFor(const std::filesystem::path &path);

/// Draws the raw curve (light) and its debiased exponential moving average (strong) with axes,
/// tick labels, a legend and the title, and writes it atomically as PNG, SVG or PDF by `path`'s
/// extension. Non-finite x values are dropped; non-finite y values break the lines.
/// Throws Error(InvalidInput) on an unknown extension, an empty or all-NaN curve or a size out of
/// range; Error(Io) naming the path when the file cannot be written (nothing is left behind).
void writeLossPlot(const std::filesystem::path &path, const std::vector<CurvePoint> &curve,
                   const LossPlotOptions &options = {});

/// writeLossPlot, always as PNG whatever the extension.
void writeLossPlotPng(const std::filesystem::path &path, const std::vector<CurvePoint> &curve,
                      const LossPlotOptions &options = {});

} // namespace engine::report
