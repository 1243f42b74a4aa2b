#include "engine/core/atomicfile.h"
#include "engine/core/error.h"
#include "engine/report/lossplot.h"
#include "engine/report/plotstyle.h"
#include "engine/report/ticks.h"
#include "support/expecterror.h"
#include "support/tempdir.h"

#include <cairo.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <limits>
#include <memory>

namespace fs = std::filesystem;
using engine::report::CurvePoint;
using engine::report::LossPlotOptions;
using engine::report::Rgb;
using testing_support::expectError;
using testing_support::TempDir;

namespace {

/// A PNG read back through cairo, as RGB.
class Picture {
public:
    explicit Picture(const fs::path &file)
        : m_surface(cairo_image_surface_create_from_png(file.c_str()), cairo_surface_destroy)
    {
        EXPECT_EQ(cairo_surface_status(m_surface.get()), CAIRO_STATUS_SUCCESS) << file;
        cairo_surface_flush(m_surface.get());
    }
    bool valid() const { return cairo_surface_status(m_surface.get()) == CAIRO_STATUS_SUCCESS; }
    int width() const { return cairo_image_surface_get_width(m_surface.get()); }
    int height() const { return cairo_image_surface_get_height(m_surface.get()); }
    Rgb at(int x, int y) const
    {
        const unsigned char *row = cairo_image_surface_get_data(m_surface.get())
            + static_cast<size_t>(y) * cairo_image_surface_get_stride(m_surface.get());
        uint32_t pixel;
        std::memcpy(&pixel, row + 4 * x, 4); // native-endian 0xAARRGGBB (RGB24 or opaque ARGB32)
        return {uint8_t(pixel >> 16), uint8_t(pixel >> 8), uint8_t(pixel)};
    }
    /// Pixels within `tolerance` per channel of `color` in columns [x0, x1), rows from y0 down.
    int count(Rgb color, int x0, int x1, int tolerance = 0, int y0 = 0) const
    {
        int n = 0;
        for (int y = y0; y < height(); ++y)
            for (int x = x0; x < x1; ++x)
                n += near(at(x, y), color, tolerance);
        return n;
    }
    static bool near(Rgb a, Rgb b, int tolerance)
    {
        return std::abs(a.r - b.r) <= tolerance && std::abs(a.g - b.g) <= tolerance && std::abs(a.b - b.b) <= tolerance;
    }

private:
    std::unique_ptr<cairo_surface_t, void (*)(cairo_surface_t *)> m_surface;
};

std::vector<CurvePoint> decreasingCurve(int count)
{
    std::vector<CurvePoint> curve;
    for (int step = 0; step < count; ++step)
        curve.push_back({double(step), 4.0 * std::exp(-step / 150.0) + 1.5 + 0.3 * std::sin(step * 1.7)});
    return curve;
}

int luminance(Rgb c) { return (299 * c.r + 587 * c.g + 114 * c.b) / 1000; }

std::vector<std::string> filesIn(const fs::path &folder)
{
    std::vector<std::string> names;
    for (const auto &entry : fs::directory_iterator(folder))
        names.push_back(entry.path().filename().string());
    std::sort(names.begin(), names.end());
    return names;
}

} // namespace

TEST(LossPlot, WritesPngSvgAndPdfByExtension)
{
    const TempDir dir("lossplot-formats");
    LossPlotOptions options;
    options.title = "run 7: tiny-llama on moby-dick";
    options.evalCurve = {{0, 5.2}, {100, 3.1}, {200, 2.4}};
    const std::vector<std::pair<std::string, std::string>> expected = {
        {"loss.png", std::string("\x89PNG\r\n\x1a\n", 8)}, {"loss.svg", "<?xml"}, {"loss.pdf", "%PDF-"},
        {"LOSS.SVG", "<?xml"}};
    for (const auto &[name, magic] : expected) {
        engine::report::writeLossPlot(dir / name, decreasingCurve(300), options);
        const std::string bytes = engine::readFile(dir / name);
        EXPECT_GT(bytes.size(), 1000u) << name;
        EXPECT_EQ(bytes.substr(0, magic.size()), magic) << name;
        if (magic == "<?xml") {
            EXPECT_NE(bytes.find("<svg"), std::string::npos) << name;
        }
    }
    // writeLossPlotPng, the trainer's call, writes a PNG whatever the name says.
    engine::report::writeLossPlotPng(dir / "loss.img", decreasingCurve(10));
    EXPECT_EQ(engine::readFile(dir / "loss.img").substr(0, 4), "\x89PNG");
}

TEST(LossPlot, PngHasTheRequestedSizeAndBackground)
{
    const TempDir dir("lossplot-size");
    for (const auto &[width, height] : std::vector<std::pair<int, int>>{{640, 400}, {160, 120}, {1920, 1080}}) {
        LossPlotOptions options;
        options.width = width;
        options.height = height;
        options.title = "a title much too long to fit beside the legend in a small picture, so it is cut";
        engine::report::writeLossPlot(dir / "loss.png", decreasingCurve(500), options);
        const Picture png(dir / "loss.png");
        ASSERT_TRUE(png.valid());
        EXPECT_EQ(png.width(), width);
        EXPECT_EQ(png.height(), height);
        EXPECT_EQ(png.at(0, 0), engine::report::kBackgroundColor);
        EXPECT_EQ(png.at(width - 1, height - 1), engine::report::kBackgroundColor);
    }
}

TEST(LossPlot, DecreasingCurveIsDrawnHighOnTheLeftAndLowOnTheRight)
{
    const TempDir dir("lossplot-curve");
    engine::report::writeLossPlot(dir / "loss.png", decreasingCurve(800));
    const Picture png(dir / "loss.png");
    ASSERT_EQ(png.width(), 960);
    // Mean row of the smoothed colour in the second and fourth fifths of the picture, below the
    // header row (whose legend shows the colours too).
    auto meanRow = [&](int x0, int x1, Rgb color) {
        double sum = 0;
        int count = 0;
        for (int y = png.height() / 8; y < png.height(); ++y)
            for (int x = x0; x < x1; ++x)
                if (Picture::near(png.at(x, y), color, 6)) {
                    sum += y;
                    ++count;
                }
        return count ? sum / count : -1.0;
    };
    const double left = meanRow(png.width() / 5, 2 * png.width() / 5, engine::report::kSmoothedCurveColor);
    const double right = meanRow(3 * png.width() / 5, 4 * png.width() / 5, engine::report::kSmoothedCurveColor);
    ASSERT_GT(left, 0) << "no smoothed-colour pixels on the left";
    ASSERT_GT(right, 0) << "no smoothed-colour pixels on the right";
    EXPECT_LT(left, right) << "the loss goes down, so its line should be higher (smaller rows) on the left";
    EXPECT_GT(png.count(engine::report::kRawCurveColor, png.width() / 5, 4 * png.width() / 5, 6, png.height() / 8), 0)
        << "no raw curve";
}

TEST(LossPlot, AOneStepSpikeInAMillionStepsIsDrawn)
{
    const TempDir dir("lossplot-spike");
    const int count = 1000000;
    const int spike = 700000;
    std::vector<CurvePoint> curve;
    curve.reserve(count);
    for (int step = 0; step < count; ++step)
        curve.push_back({double(step), 2.0 + 0.05 * std::sin(step * 0.001)});
    curve[spike].y = 20.0;
    engine::report::writeLossPlot(dir / "loss.png", curve);
    const Picture png(dir / "loss.png");
    ASSERT_TRUE(png.valid());

    // Find the plot's left and right edges by the smoothed line at its mid rows: the spike's column
    // is at 70 % of the way between where the curve starts and ends.
    int first = png.width(), last = -1;
    for (int x = 0; x < png.width(); ++x)
        for (int y = png.height() / 2; y < png.height(); ++y)
            if (Picture::near(png.at(x, y), engine::report::kSmoothedCurveColor, 30)) {
                first = std::min(first, x);
                last = std::max(last, x);
            }
    ASSERT_LT(first, last) << "no smoothed line";
    const int spikeColumn = first + static_cast<int>(std::lround(0.7 * (last - first)));
    // Near the top of the plot (the spike is the maximum, 5 % below the top), the spike's columns are
    // darker than the background while columns 40 pixels away are not.
    auto darkest = [&](int x0, int x1, int y0, int y1) {
        int value = 255;
        for (int x = x0; x <= x1; ++x)
            for (int y = y0; y <= y1; ++y)
                value = std::min(value, luminance(png.at(x, y)));
        return value;
    };
    const int top = png.height() / 10;
    const int bottom = png.height() / 5;
    // 230: darker than the background (255) and the grid lines (236).
    EXPECT_LT(darkest(spikeColumn - 2, spikeColumn + 2, top, bottom), 230) << "the spike at x " << spikeColumn;
    EXPECT_GT(darkest(spikeColumn - 45, spikeColumn - 40, top, bottom), darkest(spikeColumn - 2, spikeColumn + 2, top, bottom));
}

TEST(LossPlot, EvalLossIsMarked)
{
    const TempDir dir("lossplot-eval");
    LossPlotOptions options;
    options.evalCurve = {{0, 5.0}, {200, 3.0}, {400, 2.0}, {600, std::nan("")}};
    engine::report::writeLossPlot(dir / "loss.png", decreasingCurve(700), options);
    const Picture png(dir / "loss.png");
    EXPECT_GT(png.count(engine::report::kEvalColor, 0, png.width(), 4, png.height() / 8), 20); // below the legend

    engine::report::writeLossPlot(dir / "plain.png", decreasingCurve(700));
    EXPECT_EQ(Picture(dir / "plain.png").count(engine::report::kEvalColor, 0, 960, 4), 0);
}

TEST(LossPlot, EdgeCasesStillDraw)
{
    const TempDir dir("lossplot-edges");
    const double nan = std::numeric_limits<double>::quiet_NaN();
    const double inf = std::numeric_limits<double>::infinity();
    const std::vector<std::vector<CurvePoint>> curves = {
        {{10, 2.5}},                                             // one point
        {{0, 3}, {1, 3}, {2, 3}, {3, 3}},                        // flat
        {{0, 0}, {1, 0}},                                        // flat at zero
        {{0, 5}, {1, nan}, {2, inf}, {3, 4}, {4, -inf}, {5, 3}}, // non-finite values break the line
        {{0, 1e-6}, {1, 2e-6}, {2, 1.5e-6}},                     // tiny values
        {{0, 1e9}, {100000, 2e9}},                               // huge values and steps
        {{3, 1}, {1, 3}, {2, 2}, {nan, 9}},                      // unsorted, a NaN step
    };
    for (size_t i = 0; i < curves.size(); ++i) {
        for (const double smoothing : {0.9, 0.0}) {
            LossPlotOptions options;
            options.smoothing = smoothing;
            options.title = "bad UTF-8 \xff\xfe and a tab\t";
            const fs::path file = dir / ("edge" + std::to_string(i) + ".png");
            engine::report::writeLossPlot(file, curves[i], options);
            EXPECT_GT(Picture(file).count(engine::report::kSmoothedCurveColor, 0, 960, 6, 540 / 8), 0)
                << "curve " << i << " smoothing " << smoothing << " not drawn";
        }
    }
}

TEST(LossPlot, ErrorsNameTheProblemAndLeaveNothing)
{
    const TempDir dir("lossplot-errors");
    const double nan = std::numeric_limits<double>::quiet_NaN();
    expectError([&] { engine::report::writeLossPlot(dir / "a.png", {}); }, engine::ErrorKind::InvalidInput,
                "no points");
    expectError([&] { engine::report::writeLossPlot(dir / "a.svg", {{0, nan}, {1, nan}}); },
                engine::ErrorKind::InvalidInput, "NaN");
    LossPlotOptions tiny;
    tiny.width = 10;
    expectError([&] { engine::report::writeLossPlot(dir / "a.pdf", {{0, 1}}, tiny); },
                engine::ErrorKind::InvalidInput, "size");
    LossPlotOptions badSmoothing;
    badSmoothing.smoothing = 1.0;
    expectError([&] { engine::report::writeLossPlot(dir / "a.png", {{0, 1}}, badSmoothing); },
                engine::ErrorKind::InvalidInput, "smoothing");
    expectError([&] { engine::report::writeLossPlot(dir / "loss.txt", {{0, 1}}); }, engine::ErrorKind::InvalidInput,
                "\".txt\"");
    expectError([&] { engine::report::writeLossPlot(dir / "loss", {{0, 1}}); }, engine::ErrorKind::InvalidInput,
                "no extension");
    EXPECT_TRUE(filesIn(dir.path()).empty());

    // A regular file where a folder should be: the parent cannot be created.
    engine::writeFileAtomically(dir / "file", "x");
    expectError([&] { engine::report::writeLossPlot(dir / "file" / "loss.png", {{0, 1}, {1, 0.5}}); },
                engine::ErrorKind::Io, (dir / "file").string());
    // A folder where the picture should be: the temporary file is written, the rename fails.
    fs::create_directory(dir / "taken.svg");
    expectError([&] { engine::report::writeLossPlot(dir / "taken.svg", {{0, 1}, {1, 0.5}}); },
                engine::ErrorKind::Io, (dir / "taken.svg").string());
    EXPECT_EQ(filesIn(dir.path()), (std::vector<std::string>{"file", "taken.svg"})) << "a temporary file was left";
    EXPECT_TRUE(fs::is_empty(dir / "taken.svg"));
    // A place nobody may write, not even root.
    expectError([&] { engine::report::writeLossPlot("/proc/tunebench-loss.pdf", {{0, 1}, {1, 0.5}}); },
                engine::ErrorKind::Io, "/proc/tunebench-loss.pdf");
}

TEST(Ticks, NiceStepsAndLabelsPeopleRead)
{
    using engine::report::niceTicks;
    using engine::report::tickLabels;
    EXPECT_EQ(niceTicks(0, 1000000, 4, true), (std::vector<double>{0, 200000, 400000, 600000, 800000, 1000000}));
    EXPECT_EQ(tickLabels({0, 250000, 500000, 750000, 1000000, 1250000}),
              (std::vector<std::string>{"0", "250k", "500k", "750k", "1M", "1.25M"}));
    EXPECT_EQ(tickLabels({0, 200, 400}), (std::vector<std::string>{"0", "200", "400"}));
    EXPECT_EQ(tickLabels({1.5, 2.0, 2.5}), (std::vector<std::string>{"1.5", "2.0", "2.5"}));
    EXPECT_EQ(tickLabels({0.25, 0.5, 0.75}), (std::vector<std::string>{"0.25", "0.50", "0.75"}));
    EXPECT_EQ(tickLabels({-0.02, 0, 0.02}), (std::vector<std::string>{"-0.02", "0.00", "0.02"}));
    EXPECT_EQ(tickLabels({1e-7, 2e-7}), (std::vector<std::string>{"1e-07", "2e-07"}));
    EXPECT_EQ(niceTicks(3, 3, 5, false), (std::vector<double>{3}));
    EXPECT_EQ(niceTicks(1, 2, 5, true), (std::vector<double>{1, 2}));
}
