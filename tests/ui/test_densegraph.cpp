// DenseGraph draws what QCustomPlot's own QCPGraph draws, with fewer painter calls: the same pixels,
// rendered offscreen side by side from the same data.

#include "ui/widgets/densegraph.h"
#include "ui/widgets/qcustomplotinclude.h"

#include <QImage>

#include <gtest/gtest.h>

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

// The plot drawn with a QCPGraph (dense = false) or a DenseGraph holding `data`. Without adaptive
// sampling every point reaches the line drawing (tens per pixel column), as QCustomPlot's own
// per-column reduction would otherwise hide the columns' inner points.
QImage render(bool dense, const QPen &pen, bool antialiased, bool adaptiveSampling = true)
{
    QCustomPlot plot;
    plot.resize(500, 300);
    plot.setPlottingHints(QCP::phFastPolylines | QCP::phCacheLabels); // as MetricPlots sets them
    QCPAxisRect *rect = plot.axisRect();
    QCPGraph *graph = dense ? new ui::DenseGraph(rect->axis(QCPAxis::atBottom), rect->axis(QCPAxis::atLeft))
                            : new QCPGraph(rect->axis(QCPAxis::atBottom), rect->axis(QCPAxis::atLeft));
    graph->data()->set(sampleData(), true);
    graph->setPen(pen);
    graph->setAntialiased(antialiased);
    graph->setAdaptiveSampling(adaptiveSampling);
    plot.xAxis->setRange(-100, 30100);
    plot.yAxis->setRange(-2.5, 5.5);
    // As on screen: replot into the widget's buffers and grab them (toPixmap() is an export, drawn in
    // QCustomPlot's no-caching mode, where both graphs take QCustomPlot's own slow path).
    plot.replot(QCustomPlot::rpImmediateRefresh);
    return plot.grab().toImage();
}

} // namespace

TEST(DenseGraph, DrawsTheSamePixelsAsQCPGraphWithoutAntialiasing)
{
    // Opaque, and translucent as the raw line's pen (overlapping segments blend as often as QCustomPlot's).
    for (const QColor &color : {QColor(31, 119, 180), QColor(31, 119, 180, 70)}) {
        for (const bool adaptive : {true, false}) {
            const QImage ours = render(true, QPen(color, 1), false, adaptive);
            const QImage theirs = render(false, QPen(color, 1), false, adaptive);
            ASSERT_EQ(ours.size(), theirs.size());
            EXPECT_TRUE(ours == theirs) << "alpha " << color.alpha() << ", adaptive sampling " << adaptive;
        }
    }
    EXPECT_FALSE(render(true, QPen(Qt::blue, 1), false) == render(true, QPen(Qt::NoPen), false)) << "a curve is drawn";
}

TEST(DenseGraph, DrawsTheSamePixelsAsQCPGraphWithAntialiasing)
{
    const QPen pen(QColor(255, 127, 14), 2); // the smoothed line's pen
    const QImage ours = render(true, pen, true);
    const QImage theirs = render(false, pen, true);
    ASSERT_EQ(ours.size(), theirs.size());
    EXPECT_TRUE(ours == theirs) << "one drawLines call drew other pixels than a drawLine per segment";
}
