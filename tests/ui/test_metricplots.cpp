// The stacked metric plots, offscreen and driven like a user: overlays, smoothing over the full data,
// decimation that keeps every extreme, x axis modes, log y, hover, exports.

#include "engine/report/series.h"
#include "ui/widgets/metricplots.h"
#include "ui/widgets/qcustomplotinclude.h"

#include <QAction>
#include <QApplication>
#include <QComboBox>
#include <QDir>
#include <QFile>
#include <QMenu>
#include <QTemporaryDir>
#include <QTest>
#include <QTimeZone>
#include <QToolButton>
#include <QWheelEvent>

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <random>
#include <set>

#include <unistd.h>

namespace {

using engine::store::MetricPoint;
using ui::MetricPlots;

const QDateTime kStarted(QDate(2026, 3, 4), QTime(5, 6, 7), QTimeZone::utc());

/// n points of one metric: step i, wall time 10 + 2.5 i seconds, value f(i).
std::vector<MetricPoint> points(int n, const std::function<double(int)> &f, int firstStep = 0)
{
    std::vector<MetricPoint> out;
    out.reserve(size_t(n));
    for (int i = 0; i < n; ++i)
        out.push_back({firstStep + i, 10 + 2.5 * (firstStep + i), f(firstStep + i)});
    return out;
}

std::vector<double> values(const std::vector<MetricPoint> &points)
{
    std::vector<double> out;
    for (const MetricPoint &p : points)
        out.push_back(p.value);
    return out;
}

/// How many pixels of `image` are exactly `color` (opaque).
int countColor(const QImage &image, const QColor &color)
{
    int count = 0;
    for (int row = 0; row < image.height(); ++row)
        for (int column = 0; column < image.width(); ++column)
            count += image.pixel(column, row) == color.rgb() ? 1 : 0;
    return count;
}

/// Noise in [1, 2) that decays a little, like a loss.
std::function<double(int)> noisyLoss(unsigned seed)
{
    auto engine = std::make_shared<std::mt19937>(seed);
    return [engine](int i) { return 1.0 + std::uniform_real_distribution<double>(0, 1)(*engine) + 1.0 / (1 + i * 1e-3); };
}

ui::RunCurves fullRun(qint64 id, const QString &label, unsigned seed, int n = 300)
{
    ui::RunCurves run;
    run.runId = id;
    run.label = label;
    run.started = kStarted;
    run.metrics["train/loss"] = points(n, noisyLoss(seed));
    run.metrics["eval/loss"] = points(n / 50, [](int i) { return 2.0 - i * 0.01; });
    run.metrics["train/learning_rate"] = points(n, [](int i) { return 3e-4 * (1 - i / 1000.0); });
    run.metrics["train/grad_norm"] = points(n, noisyLoss(seed + 1));
    run.metrics["train/tokens_per_second"] = points(n, [](int i) { return 6000.0 + (i % 7) * 10; });
    run.metrics["memory/cpu"] = points(n, [](int i) { return 1.5e9 + i * 1e5; });
    return run;
}

class MetricPlotsTest : public ::testing::Test {
protected:
    void SetUp() override
    {
        m_plots = std::make_unique<MetricPlots>();
        m_plots->resize(1000, 760);
        m_plots->show();
        ASSERT_TRUE(QTest::qWaitForWindowExposed(m_plots.get()));
    }
    void TearDown() override { m_plots.reset(); }

    /// What a repaint draws now.
    void draw() { m_plots->plot()->replot(QCustomPlot::rpImmediateRefresh); }

    static std::vector<std::pair<double, double>> data(const QCPGraph *graph)
    {
        std::vector<std::pair<double, double>> out;
        for (auto it = graph->data()->constBegin(); it != graph->data()->constEnd(); ++it)
            out.emplace_back(it->key, it->value);
        return out;
    }

    std::unique_ptr<MetricPlots> m_plots;
};

TEST_F(MetricPlotsTest, TwoRunsOverlayWithALegendAndOneColourPerRunInEveryPlot)
{
    m_plots->setRuns({fullRun(7, QStringLiteral("lr 3e-4"), 1), fullRun(9, QStringLiteral("lr 1e-3"), 2)});
    draw();

    EXPECT_EQ(m_plots->plotCount(), 5); // loss + eval loss, lr, grad norm, tokens/s, memory
    EXPECT_EQ(m_plots->plotIndexOf(QStringLiteral("eval/loss")), m_plots->plotIndexOf(QStringLiteral("train/loss")));
    ASSERT_NE(m_plots->legend(), nullptr);
    ASSERT_EQ(m_plots->legend()->itemCount(), 2);
    EXPECT_TRUE(m_plots->legend()->visible());
    QStringList names;
    for (int i = 0; i < m_plots->legend()->itemCount(); ++i)
        names << static_cast<QCPPlottableLegendItem *>(m_plots->legend()->item(i))->plottable()->name();
    EXPECT_EQ(names, (QStringList{QStringLiteral("lr 3e-4"), QStringLiteral("lr 1e-3")}));

    const QColor first = m_plots->runColor(7);
    const QColor second = m_plots->runColor(9);
    ASSERT_TRUE(first.isValid());
    EXPECT_NE(first.rgb(), second.rgb());
    for (const QString &key : MetricPlots::defaultMetrics()) {
        for (const auto &[run, colour] : {std::pair{qint64(7), first}, std::pair{qint64(9), second}}) {
            const QCPGraph *raw = m_plots->rawGraph(run, key);
            ASSERT_NE(raw, nullptr) << key.toStdString();
            EXPECT_EQ(raw->pen().color().rgb(), colour.rgb()) << key.toStdString();
            EXPECT_EQ(raw->keyAxis()->axisRect(), m_plots->axisRect(m_plots->plotIndexOf(key)));
            EXPECT_GT(raw->dataCount(), 0) << key.toStdString();
            if (const QCPGraph *smooth = m_plots->smoothedGraph(run, key)) {
                EXPECT_EQ(smooth->pen().color().rgb(), colour.rgb()) << key.toStdString();
            }
        }
    }
    // The raw loss is light, its moving average strong.
    EXPECT_LT(m_plots->rawGraph(7, QStringLiteral("train/loss"))->pen().color().alpha(), 255);
    EXPECT_EQ(m_plots->smoothedGraph(7, QStringLiteral("train/loss"))->pen().color().alpha(), 255);

    // A dark palette gives lighter run colours, still one per run.
    QPalette dark;
    dark.setColor(QPalette::Window, QColor(30, 30, 30));
    dark.setColor(QPalette::Base, QColor(20, 20, 20));
    dark.setColor(QPalette::WindowText, QColor(230, 230, 230));
    m_plots->setPalette(dark);
    EXPECT_NE(m_plots->runColor(7).rgb(), first.rgb());
    EXPECT_EQ(m_plots->rawGraph(7, QStringLiteral("train/grad_norm"))->pen().color().rgb(), m_plots->runColor(7).rgb());
    EXPECT_EQ(m_plots->axisRect(0)->axis(QCPAxis::atLeft)->tickLabelColor(), QColor(230, 230, 230));
}

TEST_F(MetricPlotsTest, ChosenMetricsAreStackedWithLinkedXThatTheWheelZoomsAndDoubleClickResets)
{
    m_plots->setRuns({fullRun(1, QStringLiteral("a"), 3, 1000)});
    m_plots->setShownMetrics({QStringLiteral("train/grad_norm"), QStringLiteral("train/loss")});
    draw();
    ASSERT_EQ(m_plots->plotCount(), 2);
    EXPECT_EQ(m_plots->plotIndexOf(QStringLiteral("train/grad_norm")), 0);
    EXPECT_EQ(m_plots->rawGraph(1, QStringLiteral("eval/loss")), nullptr);
    EXPECT_EQ(m_plots->legend()->itemCount(), 1);

    QCPAxisRect *bottom = m_plots->axisRect(1);
    const QCPRange before = bottom->axis(QCPAxis::atBottom)->range();
    EXPECT_DOUBLE_EQ(before.lower, 0);
    EXPECT_DOUBLE_EQ(before.upper, 999);
    const QPointF at = bottom->center();
    QWheelEvent wheel(at, m_plots->plot()->mapToGlobal(at), QPoint(), QPoint(0, 120), Qt::NoButton, Qt::NoModifier,
                      Qt::NoScrollPhase, false);
    QApplication::sendEvent(m_plots->plot(), &wheel);
    draw();
    const QCPRange zoomed = bottom->axis(QCPAxis::atBottom)->range();
    EXPECT_LT(zoomed.size(), before.size());
    EXPECT_EQ(m_plots->axisRect(0)->axis(QCPAxis::atBottom)->range(), zoomed); // the other plot follows
    EXPECT_LT(m_plots->rawGraph(1, QStringLiteral("train/loss"))->dataCount(), 1000);

    QTest::mouseDClick(m_plots->plot(), Qt::LeftButton, Qt::NoModifier, at.toPoint());
    // Qt 6.4's QTest leaves the button of a double-click down for later moves (press, release,
    // press, double-click): the user's second release.
    QTest::mouseRelease(m_plots->plot(), Qt::LeftButton, Qt::NoModifier, at.toPoint());
    draw();
    EXPECT_EQ(m_plots->axisRect(0)->axis(QCPAxis::atBottom)->range(), before);
}

TEST_F(MetricPlotsTest, CurvesDecimatedAndDrawnInParallelAreThoseOfOneThread)
{
    // Three runs of every metric, big enough for the pyramid, the view zoomed into the middle: the
    // lines, the y ranges and the evaluation marks are the same whichever way each redraw decimates.
    const QList<ui::RunCurves> runs = {fullRun(1, QStringLiteral("a"), 3, 60000), fullRun(2, QStringLiteral("b"), 4, 60000),
                                       fullRun(3, QStringLiteral("c"), 5, 3000)};
    MetricPlots serial;
    serial.setParallelRefresh(false);
    for (MetricPlots *plots : {m_plots.get(), &serial}) {
        plots->resize(1000, 760);
        plots->show();
        plots->setRuns(runs);
        plots->setShownMetrics(ui::MetricPlots::defaultMetrics());
        plots->setVisibleXRange(12000, 31000);
        plots->plot()->replot(QCustomPlot::rpImmediateRefresh);
    }
    ASSERT_EQ(m_plots->plotCount(), serial.plotCount());
    for (int p = 0; p < m_plots->plotCount(); ++p)
        EXPECT_EQ(m_plots->axisRect(p)->axis(QCPAxis::atLeft)->range(), serial.axisRect(p)->axis(QCPAxis::atLeft)->range()) << p;
    int compared = 0;
    for (const ui::RunCurves &run : runs) {
        for (const auto &[key, points] : run.metrics) {
            const QString name = QString::fromStdString(key);
            for (const auto graphOf : {&MetricPlots::rawGraph, &MetricPlots::smoothedGraph}) {
                const QCPGraph *parallel = (m_plots.get()->*graphOf)(run.runId, name);
                const QCPGraph *single = (serial.*graphOf)(run.runId, name);
                ASSERT_EQ(parallel == nullptr, single == nullptr) << key;
                if (!parallel)
                    continue;
                EXPECT_GT(parallel->dataCount(), 0) << key;
                EXPECT_EQ(data(parallel), data(single)) << key;
                EXPECT_EQ(parallel->scatterStyle().shape(), single->scatterStyle().shape()) << key;
                ++compared;
            }
        }
    }
    EXPECT_GE(compared, 3 * 7) << "every run's raw lines and their smoothed lines";
    // And each plot's curves, drawn into its image on the pool or on the UI thread, are the same pixels.
    const QImage pooled = m_plots->plot()->grab().toImage();
    const QImage alone = serial.plot()->grab().toImage();
    ASSERT_EQ(pooled.size(), alone.size());
    EXPECT_TRUE(pooled == alone);
    EXPECT_GT(countColor(pooled, m_plots->runColor(1)), 500) << "the first run's lines are on screen";
}

// While the wheel zooms the curves redraw without antialiasing (a draft, as QCustomPlot does while a
// drag pans); once the wheel has stopped they are antialiased again, and an export never waits for it.
// Evaluation points are marked while they stand apart, and drawn as a line alone when they crowd.
TEST_F(MetricPlotsTest, TheWheelDraftsAndTheRedrawAfterItIsAntialiasedAndCrowdedMarksGo)
{
    m_plots->setRuns({fullRun(1, QStringLiteral("a"), 3, 1000)});
    draw();
    QCustomPlot *plot = m_plots->plot();
    ASSERT_FALSE(plot->notAntialiasedElements().testFlag(QCP::aePlottables));
    const QPointF at = m_plots->axisRect(0)->center();
    QWheelEvent wheel(at, plot->mapToGlobal(at), QPoint(), QPoint(0, 120), Qt::NoButton, Qt::NoModifier,
                      Qt::NoScrollPhase, false);
    QApplication::sendEvent(plot, &wheel);
    EXPECT_TRUE(plot->notAntialiasedElements().testFlag(QCP::aePlottables));
    EXPECT_TRUE(QTest::qWaitFor([&] { return !plot->notAntialiasedElements().testFlag(QCP::aePlottables); }, 5000))
        << "full quality once the wheel stops";

    QApplication::sendEvent(plot, &wheel);
    ASSERT_TRUE(plot->notAntialiasedElements().testFlag(QCP::aePlottables));
    QTemporaryDir dir;
    ASSERT_TRUE(dir.isValid());
    QString error;
    ASSERT_TRUE(m_plots->exportImage(dir.filePath(QStringLiteral("plots.png")), &error)) << error.toStdString();
    EXPECT_FALSE(plot->notAntialiasedElements().testFlag(QCP::aePlottables)) << "exported at full quality";

    // 20 evaluation points over ~900 px stand apart; 1000 of them crowd.
    QCPGraph *eval = m_plots->rawGraph(1, QStringLiteral("eval/loss"));
    ASSERT_NE(eval, nullptr);
    m_plots->resetView();
    draw();
    EXPECT_EQ(eval->scatterStyle().shape(), QCPScatterStyle::ssCircle);
    ui::RunCurves crowded = fullRun(1, QStringLiteral("a"), 3, 1000);
    crowded.metrics["eval/loss"] = points(1000, [](int i) { return 2.0 - i * 0.001; });
    m_plots->setRuns({crowded});
    draw();
    eval = m_plots->rawGraph(1, QStringLiteral("eval/loss"));
    ASSERT_NE(eval, nullptr);
    EXPECT_EQ(eval->scatterStyle().shape(), QCPScatterStyle::ssNone);
    EXPECT_GT(eval->dataCount(), 500) << "the line keeps the points";
}

TEST_F(MetricPlotsTest, SmoothingIsTheDebiasedAverageOfTheFullData)
{
    ui::RunCurves run = fullRun(3, QStringLiteral("long"), 4, 20000);
    m_plots->setRuns({run});
    m_plots->findChild<QSlider *>(QStringLiteral("smoothingSlider"))->setValue(950);
    EXPECT_DOUBLE_EQ(m_plots->smoothing(), 0.95);
    m_plots->setVisibleXRange(12000, 12100); // high zoom: nothing is decimated
    draw();

    const std::vector<double> reference = engine::report::smoothDebiased(values(run.metrics["train/loss"]), 0.95);
    const auto drawn = data(m_plots->smoothedGraph(3, QStringLiteral("train/loss")));
    int inRange = 0;
    for (const auto &[key, value] : drawn) {
        ASSERT_EQ(key, std::round(key));
        EXPECT_DOUBLE_EQ(value, reference[size_t(key)]) << "step " << key;
        inRange += key >= 12000 && key <= 12100;
    }
    EXPECT_EQ(inRange, 101);
    // Smoothing only what is visible would start over at the window (and differ).
    std::vector<double> window(run.metrics["train/loss"].size() - 12000);
    for (size_t i = 0; i < window.size(); ++i)
        window[i] = run.metrics["train/loss"][12000 + i].value;
    const auto local = engine::report::smoothDebiased(window, 0.95);
    const auto first = std::find_if(drawn.begin(), drawn.end(), [](const auto &p) { return p.first == 12000; });
    ASSERT_NE(first, drawn.end());
    EXPECT_NE(first->second, local[0]);
    // The raw line is the data itself.
    for (const auto &[key, value] : data(m_plots->rawGraph(3, QStringLiteral("train/loss"))))
        EXPECT_EQ(value, run.metrics["train/loss"][size_t(key)].value);
}

TEST_F(MetricPlotsTest, AMillionPointsDrawAsFewPointsThatKeepEverySpike)
{
    constexpr int kPoints = 1'000'000;
    constexpr int kSpikeStep = 654'321;
    constexpr int kDipStep = 123'457;
    auto noise = noisyLoss(5);
    ui::RunCurves run;
    run.runId = 1;
    run.label = QStringLiteral("million");
    run.started = kStarted;
    run.metrics["train/loss"] = points(kPoints, [&](int i) { return i == kSpikeStep ? 50.0 : i == kDipStep ? -3.0 : noise(i); });
    m_plots->setRuns({run});
    draw();

    const QCPGraph *raw = m_plots->rawGraph(1, QStringLiteral("train/loss"));
    const auto drawn = data(raw);
    EXPECT_LT(drawn.size(), size_t(kPoints / 50));
    EXPECT_GT(drawn.size(), size_t(500));
    EXPECT_NE(std::find(drawn.begin(), drawn.end(), std::pair<double, double>(kSpikeStep, 50.0)), drawn.end());
    EXPECT_NE(std::find(drawn.begin(), drawn.end(), std::pair<double, double>(kDipStep, -3.0)), drawn.end());
    const auto [low, high] = std::minmax_element(drawn.begin(), drawn.end(),
                                                 [](const auto &a, const auto &b) { return a.second < b.second; });
    EXPECT_EQ(low->second, -3.0);
    EXPECT_EQ(high->second, 50.0);
    // The y axis shows them.
    const QCPRange y = m_plots->axisRect(0)->axis(QCPAxis::atLeft)->range();
    EXPECT_TRUE(y.contains(50.0) && y.contains(-3.0));

    // Every drawn point is a stored one, and each pixel column's extremes are drawn in it or beside
    // it (a bucket of the finest pyramid rung is an eighth of a pixel).
    const std::vector<MetricPoint> &stored = run.metrics["train/loss"];
    for (const auto &[key, value] : drawn)
        ASSERT_EQ(stored[size_t(key)].value, value) << "step " << key;
    m_plots->setVisibleXRange(300'000, 700'000);
    draw();
    const auto zoomed = data(raw);
    EXPECT_NE(std::find(zoomed.begin(), zoomed.end(), std::pair<double, double>(kSpikeStep, 50.0)), zoomed.end());
    QCPAxis *xAxis = m_plots->axisRect(0)->axis(QCPAxis::atBottom);
    const int left = m_plots->axisRect(0)->left();
    const int columns = m_plots->axisRect(0)->width();
    std::vector<double> drawnMax(size_t(columns), -1e300), drawnMin(size_t(columns), 1e300);
    for (const auto &[key, value] : zoomed) {
        const int column = int(std::floor(xAxis->coordToPixel(key))) - left;
        if (column >= 0 && column < columns) {
            drawnMax[size_t(column)] = std::max(drawnMax[size_t(column)], value);
            drawnMin[size_t(column)] = std::min(drawnMin[size_t(column)], value);
        }
    }
    int checked = 0;
    for (int column = 1; column + 1 < columns; ++column) {
        const int from = int(std::ceil(xAxis->pixelToCoord(left + column)));
        const int to = int(std::ceil(xAxis->pixelToCoord(left + column + 1)));
        double trueMax = -1e300, trueMin = 1e300;
        for (int i = from; i < to; ++i) {
            trueMax = std::max(trueMax, stored[size_t(i)].value);
            trueMin = std::min(trueMin, stored[size_t(i)].value);
        }
        if (from >= to)
            continue;
        const auto c = size_t(column);
        EXPECT_GE(std::max({drawnMax[c - 1], drawnMax[c], drawnMax[c + 1]}), trueMax) << "column " << column;
        EXPECT_LE(std::min({drawnMin[c - 1], drawnMin[c], drawnMin[c + 1]}), trueMin) << "column " << column;
        ++checked;
    }
    EXPECT_GT(checked, columns / 2);
}

TEST_F(MetricPlotsTest, XAxisByStepWallTimeOrRelativeTime)
{
    ui::RunCurves run = fullRun(4, QStringLiteral("timed"), 6, 2000);
    m_plots->setRuns({run});
    draw();
    auto *combo = m_plots->findChild<QComboBox *>(QStringLiteral("xAxisCombo"));
    ASSERT_NE(combo, nullptr);
    const QCPGraph *graph = m_plots->rawGraph(4, QStringLiteral("train/loss"));
    const std::vector<MetricPoint> &stored = run.metrics["train/loss"];
    auto keysMatch = [&](const std::function<double(const MetricPoint &)> &expected) {
        const auto drawn = data(graph);
        EXPECT_FALSE(drawn.empty());
        for (const auto &[key, value] : drawn) {
            const auto it = std::find_if(stored.begin(), stored.end(), [&](const MetricPoint &p) { return p.value == value; });
            EXPECT_NE(it, stored.end());
            if (it != stored.end()) {
                EXPECT_DOUBLE_EQ(key, expected(*it));
            }
        }
    };
    keysMatch([](const MetricPoint &p) { return double(p.step); });

    combo->setFocus();
    QTest::keyClick(combo, Qt::Key_Down); // wall time
    EXPECT_EQ(m_plots->xAxis(), MetricPlots::XAxis::WallTime);
    draw();
    const double epoch = double(kStarted.toSecsSinceEpoch());
    keysMatch([&](const MetricPoint &p) { return epoch + p.wallTime; });
    QCPAxis *x = m_plots->axisRect(m_plots->plotCount() - 1)->axis(QCPAxis::atBottom);
    EXPECT_FALSE(x->ticker().dynamicCast<QCPAxisTickerDateTime>().isNull());
    EXPECT_DOUBLE_EQ(x->range().lower, epoch + 10);

    QTest::keyClick(combo, Qt::Key_Down); // relative time
    EXPECT_EQ(m_plots->xAxis(), MetricPlots::XAxis::RelativeTime);
    draw();
    keysMatch([](const MetricPoint &p) { return p.wallTime; });
    EXPECT_FALSE(x->ticker().dynamicCast<QCPAxisTickerTime>().isNull());
    EXPECT_DOUBLE_EQ(x->range().upper, 10 + 2.5 * 1999);
    const QVector<QString> labels = x->tickVectorLabels();
    ASSERT_FALSE(labels.isEmpty());
    for (const QString &label : labels)
        EXPECT_TRUE(QRegularExpression(QStringLiteral("^\\d+:\\d\\d:\\d\\d$")).match(label).hasMatch()) << label.toStdString();
}

TEST_F(MetricPlotsTest, LogYPerPlotFromTheToolbar)
{
    m_plots->setRuns({fullRun(1, QStringLiteral("a"), 7)});
    draw();
    auto *button = m_plots->findChild<QToolButton *>(QStringLiteral("logYButton"));
    ASSERT_NE(button, nullptr);
    QAction *lossLog = button->menu()->findChild<QAction *>(QStringLiteral("logY:train/loss"));
    ASSERT_NE(lossLog, nullptr);
    lossLog->trigger();
    draw();
    EXPECT_EQ(m_plots->axisRect(0)->axis(QCPAxis::atLeft)->scaleType(), QCPAxis::stLogarithmic);
    EXPECT_TRUE(m_plots->logY(QStringLiteral("eval/loss")));
    EXPECT_EQ(m_plots->axisRect(1)->axis(QCPAxis::atLeft)->scaleType(), QCPAxis::stLinear);
    EXPECT_GT(m_plots->axisRect(0)->axis(QCPAxis::atLeft)->range().lower, 0);

    m_plots->setLogY(QStringLiteral("train/learning_rate"), true);
    EXPECT_EQ(m_plots->axisRect(1)->axis(QCPAxis::atLeft)->scaleType(), QCPAxis::stLogarithmic);
    m_plots->setShownMetrics({QStringLiteral("train/learning_rate"), QStringLiteral("train/loss")}); // kept
    EXPECT_TRUE(m_plots->logY(QStringLiteral("train/learning_rate")));
    EXPECT_TRUE(m_plots->logY(QStringLiteral("train/loss")));
    button->menu()->findChild<QAction *>(QStringLiteral("logY:train/loss"))->trigger();
    EXPECT_FALSE(m_plots->logY(QStringLiteral("train/loss")));
}

TEST_F(MetricPlotsTest, TheMetricsMenuOffersEveryKeyTheRunsHaveAndTogglesItsPlot)
{
    ui::RunCurves run = fullRun(1, QStringLiteral("a"), 7);
    run.metrics["system/cpu_percent"] = points(50, [](int i) { return 100.0 + i; });
    m_plots->setRuns({run});
    draw();
    const int before = m_plots->plotCount();
    EXPECT_EQ(m_plots->plotIndexOf(QStringLiteral("system/cpu_percent")), -1) << "not a default metric";
    EXPECT_TRUE(m_plots->availableMetrics().contains(QStringLiteral("system/cpu_percent")));

    auto *button = m_plots->findChild<QToolButton *>(QStringLiteral("metricsButton"));
    ASSERT_NE(button, nullptr);
    Q_EMIT button->menu()->aboutToShow(); // what opening it does
    QAction *cpu = button->menu()->findChild<QAction *>(QStringLiteral("metric:system/cpu_percent"));
    ASSERT_NE(cpu, nullptr);
    EXPECT_FALSE(cpu->isChecked());
    QAction *loss = button->menu()->findChild<QAction *>(QStringLiteral("metric:train/loss"));
    ASSERT_NE(loss, nullptr);
    EXPECT_TRUE(loss->isChecked());

    cpu->trigger();
    draw();
    EXPECT_EQ(m_plots->plotCount(), before + 1);
    const int index = m_plots->plotIndexOf(QStringLiteral("system/cpu_percent"));
    ASSERT_GE(index, 0);
    ASSERT_NE(m_plots->rawGraph(1, QStringLiteral("system/cpu_percent")), nullptr);
    EXPECT_GT(m_plots->rawGraph(1, QStringLiteral("system/cpu_percent"))->dataCount(), 0);

    Q_EMIT button->menu()->aboutToShow();
    button->menu()->findChild<QAction *>(QStringLiteral("metric:system/cpu_percent"))->trigger();
    EXPECT_EQ(m_plots->plotCount(), before);
    EXPECT_EQ(m_plots->plotIndexOf(QStringLiteral("system/cpu_percent")), -1);
}

TEST_F(MetricPlotsTest, HoverShowsTheExactStoredValueOfTheNearestPoint)
{
    constexpr int kPoints = 200'000;
    constexpr int kSpikeStep = 77'777;
    auto noise = noisyLoss(8);
    ui::RunCurves run;
    run.runId = 5;
    run.label = QStringLiteral("hover run");
    run.started = kStarted;
    run.metrics["train/loss"] = points(kPoints, [&](int i) { return i == kSpikeStep ? 9.0625 : noise(i); });
    m_plots->setRuns({run});
    draw();

    QCPAxisRect *rect = m_plots->axisRect(0);
    auto pixel = [&](double key, double value) {
        return QPointF(rect->axis(QCPAxis::atBottom)->coordToPixel(key), rect->axis(QCPAxis::atLeft)->coordToPixel(value))
            .toPoint();
    };
    QTest::mouseMove(m_plots->plot(), QPoint(1, 1)); // a move to where the cursor already is sends nothing
    QTest::mouseMove(m_plots->plot(), pixel(kSpikeStep, 9.0625));
    const MetricPlots::HoverPoint &hover = m_plots->hoverPoint();
    ASSERT_TRUE(hover.valid);
    EXPECT_EQ(hover.runId, 5);
    EXPECT_EQ(hover.step, kSpikeStep);
    EXPECT_EQ(hover.value, 9.0625);
    EXPECT_DOUBLE_EQ(hover.wallTime, 10 + 2.5 * kSpikeStep);
    EXPECT_TRUE(m_plots->hoverText().contains(QStringLiteral("hover run")));
    EXPECT_TRUE(m_plots->hoverText().contains(QStringLiteral("train/loss")));
    EXPECT_TRUE(m_plots->hoverText().contains(QStringLiteral("9.0625")));
    EXPECT_TRUE(m_plots->hoverText().contains(QStringLiteral("step 77777")));

    // Zoomed in, an ordinary point: its stored value, not the smoothed line's.
    m_plots->setVisibleXRange(1000, 1040);
    draw();
    const MetricPoint &target = run.metrics["train/loss"][1020];
    QTest::mouseMove(m_plots->plot(), pixel(1020, target.value));
    ASSERT_TRUE(m_plots->hoverPoint().valid);
    EXPECT_EQ(m_plots->hoverPoint().step, 1020);
    EXPECT_EQ(m_plots->hoverPoint().value, target.value);

    // Far from every point (zoomed so far in that they are hundreds of pixels apart): nothing.
    m_plots->setVisibleXRange(1000, 1002);
    draw();
    QTest::mouseMove(m_plots->plot(), pixel(1000.5, run.metrics["train/loss"][1000].value));
    EXPECT_FALSE(m_plots->hoverPoint().valid);
}

TEST_F(MetricPlotsTest, LivePointsAreAppendedFollowedAndSmoothedOverEverything)
{
    ui::RunCurves run = fullRun(2, QStringLiteral("live"), 9, 100);
    m_plots->setRuns({run});
    draw();
    auto more = points(50, noisyLoss(10), 100);
    m_plots->appendPoints(2, "train/loss", more);
    m_plots->appendPoints(99, "train/loss", more); // an unknown run: ignored
    draw();
    const QCPGraph *smooth = m_plots->smoothedGraph(2, QStringLiteral("train/loss"));
    const auto drawn = data(smooth);
    ASSERT_EQ(drawn.size(), size_t(150));
    EXPECT_EQ(drawn.back().first, 149);
    EXPECT_DOUBLE_EQ(m_plots->axisRect(0)->axis(QCPAxis::atBottom)->range().upper, 149);
    std::vector<double> all = values(run.metrics["train/loss"]);
    for (const MetricPoint &p : more)
        all.push_back(p.value);
    const auto reference = engine::report::smoothDebiased(all, m_plots->smoothing());
    for (size_t i = 0; i < drawn.size(); ++i)
        EXPECT_DOUBLE_EQ(drawn[i].second, reference[i]);
}

class MetricPlotsExportTest : public MetricPlotsTest {
protected:
    void SetUp() override
    {
        MetricPlotsTest::SetUp();
        ASSERT_TRUE(m_dir.isValid());
        m_runs = {fullRun(1, QStringLiteral("first, \"quoted\""), 11), fullRun(2, QStringLiteral("second"), 12)};
        m_plots->setRuns(m_runs);
        draw();
    }
    QByteArray read(const QString &path)
    {
        QFile file(path);
        return file.open(QIODevice::ReadOnly) ? file.readAll() : QByteArray();
    }
    QTemporaryDir m_dir;
    QList<ui::RunCurves> m_runs;
};

TEST_F(MetricPlotsExportTest, ImagesArePngSvgAndPdf)
{
    QString error;
    const QString png = m_dir.filePath(QStringLiteral("plots.png"));
    const QString svg = m_dir.filePath(QStringLiteral("plots.svg"));
    const QString pdf = m_dir.filePath(QStringLiteral("plots.pdf"));
    ASSERT_TRUE(m_plots->exportImage(png, &error)) << error.toStdString();
    ASSERT_TRUE(m_plots->exportImage(svg, &error)) << error.toStdString();
    ASSERT_TRUE(m_plots->exportImage(pdf, &error)) << error.toStdString();
    EXPECT_TRUE(read(png).startsWith("\x89PNG\r\n\x1a\n"));
    const QByteArray svgBytes = read(svg);
    EXPECT_TRUE(svgBytes.startsWith("<?xml"));
    EXPECT_TRUE(svgBytes.contains("<svg"));
    EXPECT_TRUE(svgBytes.contains("<path") || svgBytes.contains("<polyline"));
    EXPECT_TRUE(read(pdf).startsWith("%PDF-"));
    EXPECT_GT(read(pdf).size(), 1000);
    // Nothing else was left in the folder (no temporary files).
    EXPECT_EQ(QDir(m_dir.path()).entryList(QDir::Files | QDir::Hidden).size(), 3);

    EXPECT_FALSE(m_plots->exportImage(m_dir.filePath(QStringLiteral("plots.gif")), &error));
    EXPECT_TRUE(error.contains(QStringLiteral(".png, .svg or .pdf"))) << error.toStdString();
}

TEST_F(MetricPlotsExportTest, CsvHoldsEveryStoredPointOfTheShownMetrics)
{
    QString error;
    const QString path = m_dir.filePath(QStringLiteral("metrics.csv"));
    ASSERT_TRUE(m_plots->exportCsv(path, &error)) << error.toStdString();
    const QList<QByteArray> lines = read(path).split('\n');
    ASSERT_FALSE(lines.isEmpty());
    EXPECT_EQ(lines.front(), "run,metric,step,wall_time,value");
    size_t expected = 0;
    for (const auto &run : m_runs) {
        for (const QString &key : MetricPlots::defaultMetrics())
            expected += run.metrics.at(key.toStdString()).size();
    }
    ASSERT_EQ(size_t(lines.size()), expected + 2); // header, and the empty piece after the last newline
    EXPECT_TRUE(lines.back().isEmpty());
    // A line reads back as the stored point, exactly.
    const MetricPoint &point = m_runs[1].metrics.at("train/loss")[17];
    const QByteArray prefix = "second,train/loss,17,";
    const auto line = std::find_if(lines.begin(), lines.end(), [&](const QByteArray &l) { return l.startsWith(prefix); });
    ASSERT_NE(line, lines.end());
    const QList<QByteArray> fields = line->split(',');
    ASSERT_EQ(fields.size(), 5);
    EXPECT_EQ(fields[3].toDouble(), point.wallTime);
    EXPECT_EQ(fields[4].toDouble(), point.value);
    EXPECT_TRUE(lines[1].startsWith("\"first, \"\"quoted\"\"\",train/loss,0,")) << lines[1].toStdString();
}

TEST_F(MetricPlotsExportTest, AnUnwritablePlaceFailsWithAMessageAndLeavesNoFile)
{
    // A "folder" that is a file: nobody, root included, can create anything below it.
    const QString file = m_dir.filePath(QStringLiteral("not-a-folder"));
    {
        QFile f(file);
        ASSERT_TRUE(f.open(QIODevice::WriteOnly));
        f.write("x");
    }
    for (const QString &name : {QStringLiteral("plots.png"), QStringLiteral("plots.svg"), QStringLiteral("plots.pdf")}) {
        QString error;
        const QString path = file + QLatin1Char('/') + name;
        EXPECT_FALSE(m_plots->exportImage(path, &error));
        EXPECT_TRUE(error.contains(path)) << error.toStdString();
        EXPECT_FALSE(QFile::exists(path));
    }
    QString error;
    const QString missing = m_dir.filePath(QStringLiteral("missing/metrics.csv"));
    EXPECT_FALSE(m_plots->exportCsv(missing, &error));
    EXPECT_TRUE(error.contains(QStringLiteral("does not exist"))) << error.toStdString();
    EXPECT_FALSE(QFile::exists(missing));

    if (::geteuid() != 0) { // a read-only folder stops everyone but root
        const QString readOnly = m_dir.filePath(QStringLiteral("read-only"));
        ASSERT_TRUE(QDir().mkpath(readOnly));
        QFile::setPermissions(readOnly, QFileDevice::ReadOwner | QFileDevice::ExeOwner);
        EXPECT_FALSE(m_plots->exportImage(readOnly + QStringLiteral("/plots.png"), &error));
        EXPECT_TRUE(error.contains(QStringLiteral("not writable"))) << error.toStdString();
        EXPECT_FALSE(m_plots->exportCsv(readOnly + QStringLiteral("/metrics.csv"), &error));
        EXPECT_TRUE(QDir(readOnly).entryList(QDir::Files | QDir::Hidden).isEmpty());
        QFile::setPermissions(readOnly, QFileDevice::ReadOwner | QFileDevice::WriteOwner | QFileDevice::ExeOwner);
    }
    EXPECT_EQ(QDir(m_dir.path()).entryList(QDir::Files | QDir::Hidden), QStringList{QStringLiteral("not-a-folder")});
}

} // namespace
