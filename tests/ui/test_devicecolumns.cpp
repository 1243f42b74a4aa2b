// DeviceColumnsWidget, offscreen: bar proportions, the overflow mark and verdict, dragging a module
// block onto another device (signal only), tooltips with exact byte counts.

#include "widgetsamples.h"

#include "ui/widgets/devicecolumns.h"
#include "ui/widgets/widgetstyle.h"

#include <QApplication>
#include <QHelpEvent>
#include <QSignalSpy>
#include <QTest>
#include <QToolTip>

#include <gtest/gtest.h>

using uitest::kGiB;
using uitest::kMiB;

namespace {

ui::DeviceColumn device(const QString &id, const QString &title, qint64 budget)
{
    ui::DeviceColumn column;
    column.id = id;
    column.title = title;
    column.budget = budget;
    return column;
}

ui::DeviceColumnsData twoDevices()
{
    ui::DeviceColumn gpu = device(QStringLiteral("0"), QStringLiteral("GPU 0"), 10 * kGiB);
    gpu.bytes[ui::MemoryKind::Weights] = 4 * kGiB;
    gpu.bytes[ui::MemoryKind::Gradients] = 1 * kGiB;
    gpu.bytes[ui::MemoryKind::Optimizer] = 2 * kGiB;
    gpu.bytes[ui::MemoryKind::Activations] = 1 * kGiB;
    gpu.bytes[ui::MemoryKind::Overhead] = 0; // absent: no segment
    gpu.modules = {{.module = QStringLiteral("model.embed_tokens"), .label = {}, .bytes = 1 * kGiB, .detail = {}},
                   {.module = QStringLiteral("model.layers.0"), .label = QStringLiteral("model.layers.0..13"), .bytes = 3 * kGiB, .detail = {}}};
    ui::DeviceColumn cpu = device(QStringLiteral("cpu"), QStringLiteral("CPU"), 4 * kGiB);
    cpu.bytes[ui::MemoryKind::Weights] = 5 * kGiB + 300 * kMiB; // over by 1.3 GiB
    cpu.modules = {{.module = QStringLiteral("model.layers.14"), .label = QStringLiteral("model.layers.14..31"), .bytes = 5 * kGiB, .detail = {}},
                   {.module = QStringLiteral("lm_head"), .label = {}, .bytes = 300 * kMiB, .detail = {}}};
    return {.devices = {gpu, cpu}};
}

struct Shown {
    ui::DeviceColumnsWidget widget;
    explicit Shown(const ui::DeviceColumnsData &data)
    {
        widget.setData(data);
        widget.resize(widget.sizeHint());
        widget.show();
        EXPECT_TRUE(QTest::qWaitForWindowExposed(&widget));
    }
};

} // namespace

TEST(DeviceColumns, SegmentsAreProportionalAndStackedFromTheBottom)
{
    Shown shown(twoDevices());
    const auto &w = shown.widget;
    const QRect bar = w.barRect(0);
    ASSERT_GT(bar.height(), 100);
    // Budget 10 GiB fills the bar: each GiB is a tenth of it (cumulative rounding: within 1 px).
    const double perGiB = bar.height() / 10.0;
    EXPECT_NEAR(w.segmentRect(0, ui::MemoryKind::Weights).height(), 4 * perGiB, 1.0);
    EXPECT_NEAR(w.segmentRect(0, ui::MemoryKind::Gradients).height(), 1 * perGiB, 1.0);
    EXPECT_NEAR(w.segmentRect(0, ui::MemoryKind::Optimizer).height(), 2 * perGiB, 1.0);
    EXPECT_NEAR(w.segmentRect(0, ui::MemoryKind::Activations).height(), 1 * perGiB, 1.0);
    EXPECT_TRUE(w.segmentRect(0, ui::MemoryKind::Overhead).isEmpty());
    EXPECT_NEAR(w.segmentRect(0, ui::MemoryKind::Free).height(), 2 * perGiB, 1.0);
    // Stacked without gaps, weights at the bottom, free at the top.
    EXPECT_EQ(w.segmentRect(0, ui::MemoryKind::Weights).bottom(), bar.bottom());
    EXPECT_EQ(w.segmentRect(0, ui::MemoryKind::Gradients).bottom() + 1, w.segmentRect(0, ui::MemoryKind::Weights).top());
    EXPECT_EQ(w.segmentRect(0, ui::MemoryKind::Optimizer).bottom() + 1, w.segmentRect(0, ui::MemoryKind::Gradients).top());
    EXPECT_EQ(w.segmentRect(0, ui::MemoryKind::Activations).bottom() + 1, w.segmentRect(0, ui::MemoryKind::Optimizer).top());
    EXPECT_EQ(w.segmentRect(0, ui::MemoryKind::Free).bottom() + 1, w.segmentRect(0, ui::MemoryKind::Activations).top());
    EXPECT_EQ(w.segmentRect(0, ui::MemoryKind::Free).top(), bar.top());
}

TEST(DeviceColumns, OverflowIsMarkedAndTheVerdictSaysByHowMuch)
{
    Shown shown(twoDevices());
    auto &w = shown.widget;
    EXPECT_FALSE(w.overflowMarked(0));
    EXPECT_TRUE(w.overflowMarked(1));
    EXPECT_EQ(ui::DeviceColumnsWidget::verdictText(w.data().devices[1]), QStringLiteral("does not fit by 1.3 GiB"));
    EXPECT_EQ(ui::DeviceColumnsWidget::verdictText(w.data().devices[0]), QStringLiteral("fits (2.0 GiB free)"));
    // Over budget, the bar is scaled to what is used: no free segment, weights fill it.
    EXPECT_TRUE(w.segmentRect(1, ui::MemoryKind::Free).isEmpty());
    EXPECT_EQ(w.segmentRect(1, ui::MemoryKind::Weights).height(), w.barRect(1).height());

    // The page re-plans: the CPU now fits and the mark goes away; an unlimited device never overflows.
    ui::DeviceColumnsData data = w.data();
    data.devices[1].budget = 8 * kGiB;
    data.devices.append(device(QStringLiteral("disk"), QStringLiteral("Disk"), 0));
    data.devices[2].bytes[ui::MemoryKind::Weights] = 100 * kGiB;
    w.setData(data);
    EXPECT_FALSE(w.overflowMarked(1));
    EXPECT_FALSE(w.overflowMarked(2));
    EXPECT_EQ(ui::DeviceColumnsWidget::verdictText(data.devices[2]), QStringLiteral("fits (no limit)"));
    EXPECT_TRUE(w.findChildren<QWidget *>().isEmpty()) << "painted, not built from child widgets";
}

TEST(DeviceColumns, DraggingABlockOntoAnotherDeviceRequestsTheMove)
{
    Shown shown(twoDevices());
    auto &w = shown.widget;
    QSignalSpy moves(&w, &ui::DeviceColumnsWidget::moduleMoveRequested);

    const QPoint start = w.blockRect(0, 1).center();
    ASSERT_FALSE(w.blockRect(0, 1).isEmpty());
    const QPoint target = w.barRect(1).center();
    QTest::mousePress(&w, Qt::LeftButton, {}, start);
    QTest::mouseMove(&w, start + QPoint(0, 10));
    QTest::mouseMove(&w, (start + target) / 2);
    QTest::mouseMove(&w, target);
    QTest::mouseRelease(&w, Qt::LeftButton, {}, target);

    ASSERT_EQ(moves.count(), 1);
    EXPECT_EQ(moves[0][0].toString(), QStringLiteral("model.layers.0")) << "the block's module, not its label";
    EXPECT_EQ(moves[0][1].toString(), QStringLiteral("cpu"));
    // The widget does not move the block itself: the page re-plans and calls setData.
    EXPECT_EQ(w.data().devices[0].modules.size(), 2);
}

TEST(DeviceColumns, ClicksDropsOnTheSameColumnAndEscapeRequestNothing)
{
    Shown shown(twoDevices());
    auto &w = shown.widget;
    QSignalSpy moves(&w, &ui::DeviceColumnsWidget::moduleMoveRequested);

    const QPoint block = w.blockRect(1, 0).center();
    QTest::mouseClick(&w, Qt::LeftButton, {}, block); // a click is not a drag
    // Dragged within its own column.
    QTest::mousePress(&w, Qt::LeftButton, {}, block);
    QTest::mouseMove(&w, block + QPoint(0, -40));
    QTest::mouseRelease(&w, Qt::LeftButton, {}, block + QPoint(0, -40));
    // Escape during a drag cancels it.
    QTest::mousePress(&w, Qt::LeftButton, {}, block);
    QTest::mouseMove(&w, w.barRect(0).center());
    QTest::keyClick(&w, Qt::Key_Escape);
    QTest::mouseRelease(&w, Qt::LeftButton, {}, w.barRect(0).center());
    EXPECT_EQ(moves.count(), 0);

    // Dropped back onto the other column after all that, it still works.
    QTest::mousePress(&w, Qt::LeftButton, {}, w.blockRect(1, 1).center());
    QTest::mouseMove(&w, w.columnRect(0).center());
    QTest::mouseRelease(&w, Qt::LeftButton, {}, w.columnRect(0).center());
    ASSERT_EQ(moves.count(), 1);
    EXPECT_EQ(moves[0][0].toString(), QStringLiteral("lm_head"));
    EXPECT_EQ(moves[0][1].toString(), QStringLiteral("0"));
}

TEST(DeviceColumns, TooltipsGiveExactByteCounts)
{
    Shown shown(twoDevices());
    auto &w = shown.widget;
    const QPoint weights = w.segmentRect(0, ui::MemoryKind::Weights).center();
    QHelpEvent help(QEvent::ToolTip, weights, w.mapToGlobal(weights));
    QApplication::sendEvent(&w, &help);
    EXPECT_TRUE(QToolTip::text().contains(ui::formatExactBytes(4 * kGiB))) << QToolTip::text().toStdString();
    EXPECT_TRUE(QToolTip::text().contains(QStringLiteral("weights")));

    const QPoint block = w.blockRect(1, 1).center();
    QHelpEvent blockHelp(QEvent::ToolTip, block, w.mapToGlobal(block));
    QApplication::sendEvent(&w, &blockHelp);
    EXPECT_TRUE(QToolTip::text().contains(QStringLiteral("lm_head")));
    EXPECT_TRUE(QToolTip::text().contains(ui::formatExactBytes(300 * kMiB)));
    QToolTip::hideText();
}

TEST(DeviceColumns, LaysOutEightyLayerBlocks)
{
    Shown shown(uitest::perLayerPlan(80, 2));
    auto &w = shown.widget;
    int blocks = 0;
    for (int c = 0; c < w.data().devices.size(); ++c)
        for (int b = 0; b < w.data().devices[c].modules.size(); ++b) {
            const QRect r = w.blockRect(c, b);
            EXPECT_TRUE(w.columnRect(c).contains(r)) << c << " " << b;
            if (b > 0) {
                EXPECT_GT(r.top(), w.blockRect(c, b - 1).bottom());
            }
            ++blocks;
        }
    EXPECT_EQ(blocks, 80);
}

TEST(ByteFormat, BinaryUnitsWithOneDecimal)
{
    EXPECT_EQ(ui::formatBytes(512), QStringLiteral("512 B"));
    EXPECT_EQ(ui::formatBytes(3 * 1024), QStringLiteral("3.0 KiB"));
    EXPECT_EQ(ui::formatBytes(kGiB + 300 * kMiB), QStringLiteral("1.3 GiB"));
    EXPECT_EQ(ui::formatBytes(1023 * kMiB + 1000 * 1024), QStringLiteral("1.0 GiB")); // no "1024.0 MiB"
    EXPECT_EQ(ui::formatBytes(-2 * kGiB), QStringLiteral("-2.0 GiB"));
}
