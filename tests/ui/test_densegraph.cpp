// DenseGraph draws what QCustomPlot's own QCPGraph draws, with fewer painter calls: the same pixels,
// rendered offscreen side by side from the same data; on a CurveCanvas, the canvas shows it (once), as
// QCustomPlot would, and exports still draw the graph itself.

#include "ui/widgets/curvecanvas.h"
#include "ui/widgets/densegraph.h"
#include "ui/widgets/qcustomplotinclude.h"

#include "pixelcompare.h"

#include <QImage>
#include <QPainter>

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>

namespace {

// A dense noisy curve (many points per pixel column), a gap, and a sparse stretch.
QVector<QCPGraphData> sampleData()
{
    std::mt19937 random(4);
    std::normal_distribution<double> noise(0.0, 0.3);
    QVector<QCPGraphData> data;
    for (int i = 0; i < 20000; ++i)
        data.append(QCPGraphData(i, std::sin(i / 900.0) + noise(random) + (i == 7000 ? 4.0 : 0.0)));
    data[12000].value = std::numeric_limits<double>::quiet_NaN();
    for (int i = 20000; i < 30000; i += 400)
        data.append(QCPGraphData(i, std::cos(i / 1000.0)));
    return data;
}

/// Who draws the curve: QCustomPlot's own QCPGraph, a DenseGraph on its own, or a DenseGraph on a
/// CurveCanvas.
enum class Drawer { QCustomPlot, Dense, Canvas };

struct Look {
    QPen pen;
    bool antialiased = true;
    bool adaptiveSampling = true; ///< off: every point reaches the line drawing (tens per pixel column),
                                  ///< as QCustomPlot's own per-column reduction would hide their inner points
    bool logY = false;
    bool exported = false; ///< what toPixmap() gives (an export, drawn in QCustomPlot's no-caching mode,
                           ///< where a graph takes QCustomPlot's own path), not the screen
};

/// The plot holding one graph of `points`, as drawn on screen (replotted into the widget's buffers and
/// grabbed), or exported.
QImage render(Drawer drawer, const Look &look, const QVector<QCPGraphData> &points = sampleData())
{
    QCustomPlot plot;
    plot.resize(500, 300);
    plot.setPlottingHints(QCP::phFastPolylines | QCP::phCacheLabels); // as MetricPlots sets them
    QCPAxisRect *rect = plot.axisRect();
    QCPAxis *x = rect->axis(QCPAxis::atBottom);
    QCPAxis *y = rect->axis(QCPAxis::atLeft);
    ui::CurveCanvas *canvas = drawer == Drawer::Canvas ? new ui::CurveCanvas(rect) : nullptr; // owned by the plot
    QCPGraph *graph = drawer == Drawer::QCustomPlot ? new QCPGraph(x, y) : new ui::DenseGraph(x, y);
    if (canvas)
        canvas->addGraph(static_cast<ui::DenseGraph *>(graph));
    graph->data()->set(points, true);
    graph->setPen(look.pen);
    graph->setAntialiased(look.antialiased);
    graph->setAdaptiveSampling(look.adaptiveSampling);
    plot.xAxis->setRange(-100, 30100);
    plot.yAxis->setRange(-2.5, 5.5);
    if (look.logY) {
        plot.yAxis->setScaleType(QCPAxis::stLogarithmic);
        plot.yAxis->setRange(0.05, 300);
    }
    plot.replot(QCustomPlot::rpImmediateRefresh);
    return look.exported ? plot.toPixmap(500, 300).toImage() : plot.grab().toImage();
}

} // namespace

TEST(DenseGraph, DrawsTheSamePixelsAsQCPGraphWithoutAntialiasing)
{
    // Opaque, and translucent as the raw line's pen (overlapping segments blend as often as QCustomPlot's).
    for (const QColor &color : {QColor(31, 119, 180), QColor(31, 119, 180, 70)}) {
        for (const bool adaptive : {true, false}) {
            const QImage ours = render(Drawer::Dense, {QPen(color, 1), false, adaptive});
            const QImage theirs = render(Drawer::QCustomPlot, {QPen(color, 1), false, adaptive});
            ASSERT_EQ(ours.size(), theirs.size());
            EXPECT_TRUE(ours == theirs) << "alpha " << color.alpha() << ", adaptive sampling " << adaptive;
        }
    }
    EXPECT_FALSE(render(Drawer::Dense, {QPen(Qt::blue, 1), false}) == render(Drawer::Dense, {QPen(Qt::NoPen), false})) << "a curve is drawn";
}

TEST(DenseGraph, DrawsTheSamePixelsAsQCPGraphWithAntialiasing)
{
    const QPen pen(QColor(255, 127, 14), 2); // the smoothed line's pen
    const QImage ours = render(Drawer::Dense, {pen, true});
    const QImage theirs = render(Drawer::QCustomPlot, {pen, true});
    ASSERT_EQ(ours.size(), theirs.size());
    EXPECT_TRUE(ours == theirs) << "one drawLines call drew other pixels than a drawLine per segment";
}

namespace {

/// The largest difference of one colour channel between two images of one size.
int largestChannelDifference(const QImage &a, const QImage &b)
{
    int largest = 0;
    for (int row = 0; row < a.height(); ++row) {
        for (int column = 0; column < a.width(); ++column) {
            const QRgb p = a.pixel(column, row), q = b.pixel(column, row);
            largest = std::max({largest, std::abs(qRed(p) - qRed(q)), std::abs(qGreen(p) - qGreen(q)),
                                std::abs(qBlue(p) - qBlue(q))});
        }
    }
    return largest;
}

} // namespace

TEST(DenseGraph, OnACanvasTheCanvasDrawsItOnceOnScreenAndExportsDrawItThemselves)
{
    // A translucent level line: on screen its pixels are the pen blended once over the background (the
    // canvas' image; the graph's own draw() stays out), in an export as well (the graph alone).
    QVector<QCPGraphData> level;
    for (int i = 0; i <= 30000; i += 10)
        level.append(QCPGraphData(i, 1.0));
    const QColor pen(31, 119, 180, 70);
    QImage once(1, 1, QImage::Format_ARGB32_Premultiplied);
    once.fill(Qt::white);
    QPainter(&once).fillRect(QRect(0, 0, 1, 1), pen);
    const QRgb expected = once.pixel(0, 0);
    for (const bool exported : {false, true}) {
        const QImage image = render(Drawer::Canvas, {QPen(pen, 1), false, true, false, exported}, level);
        // In each column one pixel tinted by the pen (the grid is grey, the axes black), and that one the
        // pen blended once: drawn by both canvas and graph, it is blended twice or there are two lines.
        for (int column = 100; column < 400; ++column) {
            int tinted = 0, once = 0;
            for (int row = 0; row < image.height(); ++row) {
                const QRgb pixel = image.pixel(column, row);
                tinted += qBlue(pixel) > qRed(pixel) + 8 ? 1 : 0;
                once += pixel == expected ? 1 : 0;
            }
            ASSERT_EQ(tinted, 1) << (exported ? "export" : "screen") << ", column " << column;
            ASSERT_EQ(once, 1) << (exported ? "export" : "screen") << ", column " << column;
        }
    }
}

TEST(DenseGraph, OnACanvasAnAntialiasedLineLooksAsQCPGraphDrawsIt)
{
    // Drawn into the canvas' transparent image and then copied over the background, or straight onto
    // the background: the same pixels but for rounding in the edges' blending.
    const QPen pen(QColor(255, 127, 14), 2);
    const QImage canvas = render(Drawer::Canvas, {pen, true});
    const QImage direct = render(Drawer::QCustomPlot, {pen, true});
    ASSERT_EQ(canvas.size(), direct.size());
    EXPECT_LE(largestChannelDifference(canvas, direct), 3);
    EXPECT_FALSE(canvas == render(Drawer::QCustomPlot, {QPen(Qt::NoPen), true})) << "a curve is drawn";
}

TEST(DenseGraph, OnACanvasAnAliasedLineIsQCPGraphsLineToWithinAPixel)
{
    // Without antialiasing the canvas draws column spans: every pixel QCustomPlot lights has one of the
    // canvas' within a pixel, and the other way round; on a linear and on a log y axis.
    QVector<QCPGraphData> positive = sampleData();
    for (QCPGraphData &point : positive)
        point.value = std::exp(point.value);
    for (const bool logY : {false, true}) {
        SCOPED_TRACE(logY ? "log y" : "linear y");
        const QVector<QCPGraphData> &points = logY ? positive : sampleData();
        // A lit pixel: the pen's colour.
        const int lit = uitest::expectSameLineToWithinAPixel(
            render(Drawer::Canvas, {QPen(QColor(31, 119, 180), 1), false, true, logY}, points),
            render(Drawer::QCustomPlot, {QPen(QColor(31, 119, 180), 1), false, false, logY}, points),
            [](QRgb pixel) { return pixel == QColor(31, 119, 180).rgb(); });
        EXPECT_GT(lit, 2000);
    }
}

TEST(DenseGraph, OnACanvasItTakesNoMouseEvents)
{
    QCustomPlot plot;
    plot.resize(500, 300);
    QCPAxisRect *rect = plot.axisRect();
    auto *canvas = new ui::CurveCanvas(rect);
    auto *graph = new ui::DenseGraph(rect->axis(QCPAxis::atBottom), rect->axis(QCPAxis::atLeft));
    graph->data()->set(sampleData(), true);
    plot.xAxis->setRange(-100, 30100);
    plot.yAxis->setRange(-2.5, 5.5);
    plot.replot(QCustomPlot::rpImmediateRefresh);
    const QPointF onTheLine(plot.xAxis->coordToPixel(25000), plot.yAxis->coordToPixel(std::cos(25000 / 1000.0)));
    EXPECT_GE(graph->selectTest(onTheLine, false), 0.0) << "a graph of its own answers as QCPGraph does";
    canvas->addGraph(graph);
    EXPECT_EQ(graph->selectTest(onTheLine, false), -1.0);
}
