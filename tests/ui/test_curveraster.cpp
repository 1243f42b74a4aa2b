// rasterizeCurve against QPainter (the independent reference): the same pixels, to within one column,
// for an opaque line, each translucent pixel blended exactly once, spikes, gaps, dashes, wide pens and
// coordinates far outside the image.

#include "ui/widgets/curveraster.h"

#include "pixelcompare.h"

#include <QImage>
#include <QPainter>

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

QImage blank(int width = 400, int height = 200)
{
    QImage image(width, height, QImage::Format_ARGB32_Premultiplied);
    image.fill(Qt::transparent);
    return image;
}

/// The first and last painted row of column c, or (-1, -1).
std::pair<int, int> paintedRows(const QImage &image, int c)
{
    int first = -1, last = -1;
    for (int row = 0; row < image.height(); ++row) {
        if (qAlpha(image.pixel(c, row)) != 0) {
            if (first < 0)
                first = row;
            last = row;
        }
    }
    return {first, last};
}

int paintedPixels(const QImage &image)
{
    int count = 0;
    for (int row = 0; row < image.height(); ++row)
        for (int c = 0; c < image.width(); ++c)
            count += qAlpha(image.pixel(c, row)) != 0 ? 1 : 0;
    return count;
}

/// A min/max-decimated-looking curve: several points per column, noise, one spike, then a sparse
/// stretch (a segment over many columns).
QVector<QPointF> noisyCurve()
{
    std::mt19937 random(7);
    std::normal_distribution<double> noise(0.0, 6.0);
    QVector<QPointF> points;
    for (int i = 0; i < 1000; ++i) {
        const double x = 3.0 + i * 0.25;
        points.append(QPointF(x, 100 + 25 * std::sin(x / 30.0) + noise(random) + (i == 480 ? -60.0 : 0.0)));
    }
    for (double x = 253.0; x < 398.0; x += 23.7)
        points.append(QPointF(x, 100 + 60 * std::cos(x / 20.0)));
    return points;
}

} // namespace

TEST(CurveRaster, AnOpaqueLineIsQPaintersLineToWithinAPixel)
{
    const QVector<QPointF> points = noisyCurve();
    QImage ours = blank();
    ui::rasterizeCurve(ours, points, {QColor(31, 119, 180), 1, {}});

    QImage theirs = blank();
    {
        QPainter painter(&theirs);
        painter.setPen(QPen(QColor(31, 119, 180), 0)); // cosmetic, aliased: what QCustomPlot draws in a draft
        painter.drawPolyline(points.constData(), int(points.size()));
    }
    // The same line to within a pixel (QPainter lights the pixels whose centres the line passes nearest,
    // row by row for steep segments; this takes every pixel the line passes through, column by column).
    const int painted = uitest::expectSameLineToWithinAPixel(ours, theirs, [](QRgb pixel) { return qAlpha(pixel) != 0; });
    EXPECT_GT(painted, 1000);
    // Every column the line crosses is painted, and the spike (point 480, 60 px above its neighbours)
    // reaches its own pixel row.
    for (int c = 3; c <= 395; ++c)
        EXPECT_GE(paintedRows(ours, c).first, 0) << "column " << c;
    const QPointF spike = points[480];
    EXPECT_EQ(paintedRows(ours, int(spike.x())).first, int(spike.y()));
}

TEST(CurveRaster, EachTranslucentPixelIsBlendedOnce)
{
    // A zigzag of 200 points inside one column, up and down over the same rows: QPainter blends the
    // shared pixels once per segment; a curve's pixel should show the pen's colour once.
    QVector<QPointF> points;
    for (int i = 0; i < 200; ++i)
        points.append(QPointF(50.2 + i * 0.003, i % 2 ? 40.5 : 120.5));
    points.append(QPointF(60.5, 80.5));
    const QColor pen(200, 40, 40, 70);
    QImage image = blank(100, 160);
    image.fill(QColor(255, 255, 255));
    ui::rasterizeCurve(image, points, {pen, 1, {}});

    QImage once = blank(1, 1);
    once.fill(QColor(255, 255, 255));
    QPainter(&once).fillRect(QRect(0, 0, 1, 1), pen);
    const QRgb expected = once.pixel(0, 0);
    for (int row = 40; row <= 120; ++row)
        ASSERT_EQ(image.pixel(50, row), expected) << "row " << row;
    EXPECT_EQ(image.pixel(50, 30), qRgb(255, 255, 255));
    EXPECT_EQ(image.pixel(50, 130), qRgb(255, 255, 255));
}

TEST(CurveRaster, EveryPixelOfAStraightLineOverAGradientIsBlendedAsQPainterBlendsIt)
{
    // Over a background whose every pixel differs: each pixel is either the background blended once with
    // the pen, as QPainter blends it, or the background untouched, by the line's own rows in its column.
    const int width = 203, height = 120;
    QImage background = blank(width, height);
    for (int y = 0; y < height; ++y)
        for (int x = 0; x < width; ++x)
            background.setPixel(x, y, qPremultiply(qRgba((x * 7) % 256, (y * 13) % 256, (x + y) % 256, 120 + (x * y) % 136)));
    const QColor pen(30, 160, 90, 150);
    const QPointF from(0.5, 10.5), to(width - 0.5, height - 12.5);
    QImage image = background;
    ui::rasterizeCurve(image, {from, to}, {pen, 1, {}});

    const double slope = (to.y() - from.y()) / (to.x() - from.x());
    const auto yAt = [&](double x) { return from.y() + slope * (x - from.x()); };
    for (int x = 0; x < width; ++x) {
        const int top = int(std::floor(yAt(std::max(double(x), from.x()))));
        const int bottom = int(std::floor(yAt(std::min(double(x + 1), to.x()))));
        for (int y = 0; y < height; ++y) {
            QImage expected = background.copy(x, y, 1, 1);
            if (y >= top && y <= bottom)
                QPainter(&expected).fillRect(QRect(0, 0, 1, 1), pen);
            ASSERT_EQ(image.pixel(x, y), expected.pixel(0, 0)) << "pixel " << x << ", " << y << " (line rows " << top << ".." << bottom << ")";
        }
    }
}

TEST(CurveRaster, GapsBreakTheLineAndALonePointIsADot)
{
    QVector<QPointF> points;
    for (int x = 0; x <= 100; x += 2)
        points.append(QPointF(x + 0.5, 50.5));
    points.append(QPointF(kNaN, kNaN));
    points.append(QPointF(150.5, 20.5)); // alone between two gaps
    points.append(QPointF(160.5, kNaN));
    for (int x = 200; x <= 300; x += 2)
        points.append(QPointF(x + 0.5, 70.5));
    QImage image = blank();
    ui::rasterizeCurve(image, points, {Qt::black, 1, {}});

    EXPECT_EQ(paintedRows(image, 60), std::make_pair(50, 50));
    EXPECT_EQ(paintedRows(image, 250), std::make_pair(70, 70));
    for (const int c : {101, 120, 149, 151, 180, 199})
        EXPECT_EQ(paintedRows(image, c).first, -1) << "column " << c << " lies in a gap";
    EXPECT_EQ(paintedRows(image, 150), std::make_pair(20, 20)) << "the lone point";
}

TEST(CurveRaster, DashesFollowThePattern)
{
    const QVector<QPointF> points{QPointF(0, 100.5), QPointF(400, 100.5)};
    QImage image = blank();
    ui::rasterizeCurve(image, points, {Qt::black, 1, {6.0, 4.0}});
    // Runs of painted and unpainted columns along the row: 6 on, 4 off.
    std::vector<int> runs;
    bool on = qAlpha(image.pixel(0, 100)) != 0;
    EXPECT_TRUE(on) << "a dash starts the line";
    int length = 0;
    for (int c = 0; c < image.width(); ++c) {
        const bool painted = qAlpha(image.pixel(c, 100)) != 0;
        if (painted != on) {
            runs.push_back(length);
            on = painted;
            length = 0;
        }
        ++length;
    }
    ASSERT_GE(runs.size(), 70u);
    for (size_t i = 0; i < runs.size(); ++i)
        EXPECT_EQ(runs[i], i % 2 == 0 ? 6 : 4) << "run " << i;
    EXPECT_EQ(paintedPixels(image), 240);
}

TEST(CurveRaster, AWidePenIsThatManyPixelsAcrossAndAlong)
{
    QImage image = blank();
    ui::rasterizeCurve(image, {QPointF(100, 50.5), QPointF(200, 50.5)}, {Qt::black, 3, {}});
    EXPECT_EQ(paintedRows(image, 150), std::make_pair(49, 51));
    QImage upright = blank();
    ui::rasterizeCurve(upright, {QPointF(100.5, 20), QPointF(100.5, 80)}, {Qt::black, 2, {}});
    for (const int c : {100, 101}) // the pen's square reaches one row past the lower end too
        EXPECT_EQ(paintedRows(upright, c), std::make_pair(20, 81)) << "column " << c;
    EXPECT_EQ(paintedRows(upright, 99).first, -1);
    EXPECT_EQ(paintedRows(upright, 102).first, -1);
}

TEST(CurveRaster, CoordinatesFarOutsideAreClippedSafely)
{
    // Across the whole image from far away on both sides, at one height.
    QImage image = blank();
    ui::rasterizeCurve(image, {QPointF(-1e300, 30.5), QPointF(1e300, 30.5)}, {Qt::black, 1, {}});
    for (const int c : {0, 200, 399})
        EXPECT_EQ(paintedRows(image, c), std::make_pair(30, 30)) << "column " << c;

    // From inside the image to 1e300 below it: the column it leaves from is painted to the bottom.
    QImage down = blank();
    ui::rasterizeCurve(down, {QPointF(10.5, 50.5), QPointF(11.5, 1e300), QPointF(12.5, 60.5)}, {Qt::black, 1, {}});
    EXPECT_EQ(paintedRows(down, 10).first, 50);
    EXPECT_EQ(paintedRows(down, 10).second, 199);

    // Entirely outside: nothing, and nothing breaks.
    QImage outside = blank();
    ui::rasterizeCurve(outside, {QPointF(-50, 10), QPointF(-1, 20), QPointF(kNaN, 1), QPointF(500, -1e300)}, {Qt::black, 1, {}});
    ui::rasterizeCurve(outside, {QPointF(5, -1e300), QPointF(6, -1e299)}, {Qt::black, 1, {}});
    EXPECT_EQ(paintedPixels(outside), 0);
}

TEST(CurveRaster, RefusesOtherImageFormatsAndEmptyInputQuietly)
{
    QImage rgb(50, 50, QImage::Format_RGB32);
    rgb.fill(Qt::white);
    const QImage before = rgb;
    ui::rasterizeCurve(rgb, {QPointF(0, 10), QPointF(50, 10)}, {Qt::black, 1, {}});
    EXPECT_EQ(rgb, before) << "only premultiplied ARGB32 is drawn into";
    QImage image = blank();
    ui::rasterizeCurve(image, {}, {Qt::black, 1, {}});
    ui::rasterizeCurve(image, {QPointF(0, 10), QPointF(50, 10)}, {QColor(0, 0, 0, 0), 1, {}});
    EXPECT_EQ(paintedPixels(image), 0);
}
