#include "engine/core/atomicfile.h"
#include "engine/core/error.h"
#include "engine/report/lossplot.h"
#include "engine/report/plotstyle.h"
#include "support/expecterror.h"
#include "support/tempdir.h"

#include <gtest/gtest.h>
#include <zlib.h>

#include <cmath>
#include <filesystem>
#include <limits>

namespace fs = std::filesystem;
using engine::report::CurvePoint;
using engine::report::LossPlotOptions;
using engine::report::Rgb;
using testing_support::expectError;
using testing_support::TempDir;

namespace {

uint32_t bigEndian32(const std::string &bytes, size_t at)
{
    return (uint32_t(uint8_t(bytes[at])) << 24) | (uint32_t(uint8_t(bytes[at + 1])) << 16) |
           (uint32_t(uint8_t(bytes[at + 2])) << 8) | uint32_t(uint8_t(bytes[at + 3]));
}

/// A decoded PNG as the test reads it back: chunk checks done, pixels unfiltered.
struct DecodedPng {
    uint32_t width = 0;
    uint32_t height = 0;
    std::vector<std::string> chunkTypes;
    std::vector<uint8_t> rgb; ///< 3 bytes per pixel
    Rgb at(int x, int y) const
    {
        const size_t i = (size_t(y) * width + x) * 3;
        return {rgb[i], rgb[i + 1], rgb[i + 2]};
    }
};

DecodedPng decodePng(const std::string &bytes)
{
    DecodedPng png;
    EXPECT_EQ(bytes.substr(0, 8), std::string("\x89PNG\r\n\x1a\n", 8));
    std::string idat;
    size_t at = 8;
    while (at + 12 <= bytes.size()) {
        const uint32_t length = bigEndian32(bytes, at);
        const std::string type = bytes.substr(at + 4, 4);
        const std::string data = bytes.substr(at + 8, length);
        const uint32_t crc = bigEndian32(bytes, at + 8 + length);
        EXPECT_EQ(crc, uint32_t(crc32(0, reinterpret_cast<const Bytef *>(bytes.data() + at + 4), 4 + length)))
            << "bad CRC in " << type;
        png.chunkTypes.push_back(type);
        if (type == "IHDR") {
            png.width = bigEndian32(data, 0);
            png.height = bigEndian32(data, 4);
            EXPECT_EQ(uint8_t(data[8]), 8);  // bit depth
            EXPECT_EQ(uint8_t(data[9]), 2);  // RGB
            EXPECT_EQ(uint8_t(data[12]), 0); // no interlace
        } else if (type == "IDAT") {
            idat += data;
        }
        at += 12 + length;
    }
    EXPECT_EQ(at, bytes.size()) << "trailing bytes after the last chunk";
    const size_t rowBytes = size_t(png.width) * 3 + 1;
    std::vector<uint8_t> raw(rowBytes * png.height + 16);
    uLongf rawSize = raw.size();
    EXPECT_EQ(uncompress(raw.data(), &rawSize, reinterpret_cast<const Bytef *>(idat.data()), idat.size()), Z_OK);
    EXPECT_EQ(rawSize, rowBytes * png.height);
    for (uint32_t y = 0; y < png.height; ++y) {
        EXPECT_EQ(raw[y * rowBytes], 0) << "row " << y << " filter byte";
        png.rgb.insert(png.rgb.end(), raw.begin() + y * rowBytes + 1, raw.begin() + (y + 1) * rowBytes);
    }
    return png;
}

std::vector<CurvePoint> decreasingCurve(int count)
{
    std::vector<CurvePoint> curve;
    for (int step = 0; step < count; ++step)
        curve.push_back({double(step), 4.0 * std::exp(-step / 150.0) + 1.5 + 0.3 * std::sin(step * 1.7)});
    return curve;
}

} // namespace

TEST(SmoothDebiased, MatchesHandComputedValues)
{
    // w = 0.5: ema 1.5, 2.75, 1.375; debias by 0.5, 0.75, 0.875.
    const auto smoothed = engine::report::smoothDebiased({3, 4, 0}, 0.5);
    ASSERT_EQ(smoothed.size(), 3u);
    EXPECT_DOUBLE_EQ(smoothed[0], 3.0);
    EXPECT_DOUBLE_EQ(smoothed[1], 2.75 / 0.75);
    EXPECT_DOUBLE_EQ(smoothed[2], 1.375 / 0.875);
    EXPECT_EQ(engine::report::smoothDebiased({1, 5, 2}, 0.0), (std::vector<double>{1, 5, 2}));
    // A constant stays constant: the debiasing removes the pull towards 0.
    for (const double value : engine::report::smoothDebiased(std::vector<double>(50, 2.5), 0.9))
        EXPECT_NEAR(value, 2.5, 1e-12);
    // Non-finite values pass through without disturbing the average.
    const auto withNan = engine::report::smoothDebiased({3, std::nan(""), 4}, 0.5);
    EXPECT_TRUE(std::isnan(withNan[1]));
    EXPECT_DOUBLE_EQ(withNan[2], 2.75 / 0.75);
    EXPECT_TRUE(engine::report::smoothDebiased({}, 0.9).empty());
    expectError([] { engine::report::smoothDebiased({1}, 1.0); }, engine::ErrorKind::InvalidInput, "smoothing");
}

TEST(LossPlot, WritesAValidPngOfTheRequestedSize)
{
    const TempDir dir("lossplot");
    LossPlotOptions options;
    options.width = 640;
    options.height = 400;
    options.title = "run 7: tiny-llama on moby-dick";
    engine::report::writeLossPlotPng(dir / "loss.png", decreasingCurve(500), options);
    const DecodedPng png = decodePng(engine::readFile(dir / "loss.png"));
    EXPECT_EQ(png.width, 640u);
    EXPECT_EQ(png.height, 400u);
    EXPECT_EQ(png.chunkTypes, (std::vector<std::string>{"IHDR", "IDAT", "IEND"}));
    EXPECT_EQ(png.at(0, 0), engine::report::kBackgroundColor);
}

TEST(LossPlot, DecreasingCurveIsDrawnHighOnTheLeftAndLowOnTheRight)
{
    const TempDir dir("lossplot-curve");
    engine::report::writeLossPlotPng(dir / "loss.png", decreasingCurve(800));
    const DecodedPng png = decodePng(engine::readFile(dir / "loss.png"));
    ASSERT_EQ(png.width, 960u);
    // Mean row of the smoothed colour in the left and right fifths of the picture.
    auto meanRow = [&](int x0, int x1, Rgb color) {
        double sum = 0;
        int count = 0;
        for (int y = 0; y < int(png.height); ++y)
            for (int x = x0; x < x1; ++x)
                if (png.at(x, y) == color) {
                    sum += y;
                    ++count;
                }
        return count ? sum / count : -1.0;
    };
    const double left = meanRow(int(png.width) / 5, 2 * int(png.width) / 5, engine::report::kSmoothedCurveColor);
    const double right = meanRow(3 * int(png.width) / 5, 4 * int(png.width) / 5, engine::report::kSmoothedCurveColor);
    ASSERT_GT(left, 0) << "no smoothed-colour pixels on the left";
    ASSERT_GT(right, 0) << "no smoothed-colour pixels on the right";
    EXPECT_LT(left, right) << "the loss goes down, so its line should be higher (smaller rows) on the left";
    EXPECT_GT(meanRow(png.width / 5, 4 * png.width / 5, engine::report::kRawCurveColor), 0) << "no raw curve";
}

TEST(LossPlot, EdgeCasesStillDraw)
{
    const TempDir dir("lossplot-edges");
    const double nan = std::numeric_limits<double>::quiet_NaN();
    const double inf = std::numeric_limits<double>::infinity();
    auto countColor = [](const DecodedPng &png, Rgb color) {
        int count = 0;
        for (uint32_t y = 0; y < png.height; ++y)
            for (uint32_t x = 0; x < png.width; ++x)
                count += png.at(x, y) == color;
        return count;
    };
    const std::vector<std::vector<CurvePoint>> curves = {
        {{10, 2.5}},                                   // one point
        {{0, 3}, {1, 3}, {2, 3}, {3, 3}},              // flat
        {{0, 0}, {1, 0}},                              // flat at zero
        {{0, 5}, {1, nan}, {2, inf}, {3, 4}, {4, -inf}, {5, 3}}, // non-finite values are skipped
        {{0, 1e-6}, {1, 2e-6}, {2, 1.5e-6}},           // tiny values
        {{0, 1e9}, {100000, 2e9}},                     // huge values and steps
    };
    for (size_t i = 0; i < curves.size(); ++i) {
        const fs::path file = dir / ("edge" + std::to_string(i) + ".png");
        engine::report::writeLossPlotPng(file, curves[i]);
        const DecodedPng png = decodePng(engine::readFile(file));
        EXPECT_GT(countColor(png, engine::report::kSmoothedCurveColor), 0) << "curve " << i << " not drawn";
    }
}

TEST(LossPlot, ErrorsNameTheProblem)
{
    const TempDir dir("lossplot-errors");
    const double nan = std::numeric_limits<double>::quiet_NaN();
    expectError([&] { engine::report::writeLossPlotPng(dir / "a.png", {}); }, engine::ErrorKind::InvalidInput,
                "no points");
    expectError([&] { engine::report::writeLossPlotPng(dir / "a.png", {{0, nan}, {1, nan}}); },
                engine::ErrorKind::InvalidInput, "NaN");
    LossPlotOptions tiny;
    tiny.width = 10;
    expectError([&] { engine::report::writeLossPlotPng(dir / "a.png", {{0, 1}}, tiny); },
                engine::ErrorKind::InvalidInput, "size");
    // A regular file where a folder should be: the parent cannot be created.
    engine::writeFileAtomically(dir / "file", "x");
    expectError([&] { engine::report::writeLossPlotPng(dir / "file" / "loss.png", {{0, 1}, {1, 0.5}}); },
                engine::ErrorKind::Io, (dir / "file").string());
    EXPECT_FALSE(fs::exists(dir / "a.png"));
}
