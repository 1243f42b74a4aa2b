#pragma once
// A PNG picture of a loss curve, drawn without Qt (the headless CLI has no QApplication).

#include <filesystem>
#include <string>
#include <vector>

namespace engine::report {

struct CurvePoint {
    double x = 0; ///< step
    double y = 0; ///< value
};

struct LossPlotOptions {
    int width = 960;
    int height = 540;
    std::string title;               ///< drawn at the top, ASCII
    double smoothing = 0.9;          ///< debiased EMA weight for the smoothed line (0 = none)
};

/// Draws the raw curve (light) and its debiased exponential moving average (dark) with axes, tick
/// labels and the title, and writes an RGB PNG atomically. Throws Error(InvalidInput) on an empty
/// curve, Error(Io) when the file cannot be written.
void writeLossPlotPng(const std::filesystem::path &path, const std::vector<CurvePoint> &curve,
                      const LossPlotOptions &options = {});

/// Debiased exponential moving average (TensorBoard's smoothing) of the y values.
std::vector<double> smoothDebiased(const std::vector<double> &values, double weight);

} // namespace engine::report
