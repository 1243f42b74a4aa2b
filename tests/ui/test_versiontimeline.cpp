// VersionTimelineWidget, offscreen: clicking a mark selects its op, Ctrl+wheel zooms around the
// cursor, panning, and the conflict marks.

#include "widgetsamples.h"

#include "ui/widgets/versiontimeline.h"

#include <QApplication>
#include <QHelpEvent>
#include <QSignalSpy>
#include <QTest>
#include <QToolTip>
#include <QWheelEvent>

#include <gtest/gtest.h>

namespace {

struct Shown {
    ui::VersionTimelineWidget widget;
    Shown()
    {
        widget.setData(uitest::kvCacheTimeline());
        widget.resize(1000, widget.sizeHint().height());
        widget.show();
        EXPECT_TRUE(QTest::qWaitForWindowExposed(&widget));
    }
};

void sendWheel(QWidget &w, QPoint pos, int dy, Qt::KeyboardModifiers modifiers)
{
    QWheelEvent wheel(QPointF(pos), QPointF(w.mapToGlobal(pos)), QPoint(), QPoint(0, dy), Qt::NoButton, modifiers, Qt::NoScrollPhase, false);
    QApplication::sendEvent(&w, &wheel);
}

} // namespace

TEST(VersionTimeline, ClickingAMarkSelectsItsOp)
{
    Shown shown;
    auto &w = shown.widget;
    QSignalSpy selected(&w, &ui::VersionTimelineWidget::opSelected);
    // k_cache's conflicting write (aten::copy_ at op 41) is mark 2 of track 0.
    const QPointF write = w.markCenter(0, 2);
    ASSERT_TRUE(w.tracksArea().contains(write.toPoint()));
    QTest::mouseClick(&w, Qt::LeftButton, {}, write.toPoint());
    ASSERT_EQ(selected.count(), 1);
    EXPECT_EQ(selected[0][0].toInt(), 41);
    EXPECT_EQ(w.selectedOp(), 41);

    // The failing backward use (op 74) of the same track.
    QTest::mouseClick(&w, Qt::LeftButton, {}, w.markCenter(0, 5).toPoint());
    ASSERT_EQ(selected.count(), 2);
    EXPECT_EQ(selected[1][0].toInt(), 74);

    // Clicking empty track space selects nothing.
    const QPoint empty(int(w.xForOp(30)), w.trackRect(2).top() + 4);
    QTest::mouseClick(&w, Qt::LeftButton, {}, empty);
    EXPECT_EQ(selected.count(), 2);
}

TEST(VersionTimeline, CtrlWheelZoomsAroundTheCursorAndDraggingPans)
{
    Shown shown;
    auto &w = shown.widget;
    const double fullSpan = w.visibleLast() - w.visibleFirst();
    EXPECT_NEAR(fullSpan, 80.0, 0.01) << "fits the 80-op trace";

    const QPoint anchor(int(w.xForOp(41)), w.trackRect(0).center().y());
    const double opUnderCursor = w.opAt(anchor.x());
    sendWheel(w, anchor, 480, Qt::ControlModifier);
    const double zoomedSpan = w.visibleLast() - w.visibleFirst();
    EXPECT_LT(zoomedSpan, fullSpan / 1.5);
    EXPECT_NEAR(w.opAt(anchor.x()), opUnderCursor, 0.05) << "the op under the cursor stays put";

    // Drag the tracks to the right: earlier ops come into view, the zoom stays.
    const double firstBefore = w.visibleFirst();
    const QPoint start(w.tracksArea().center().x(), w.trackRect(2).top() + 4);
    QTest::mousePress(&w, Qt::LeftButton, {}, start);
    QTest::mouseMove(&w, start + QPoint(100, 0));
    QTest::mouseRelease(&w, Qt::LeftButton, {}, start + QPoint(100, 0));
    EXPECT_LT(w.visibleFirst(), firstBefore);
    EXPECT_NEAR(w.visibleLast() - w.visibleFirst(), zoomedSpan, 1e-6);

    // Zooming out past the whole trace stops at the whole trace; Home fits again.
    sendWheel(w, anchor, -4000, Qt::ControlModifier);
    EXPECT_NEAR(w.visibleLast() - w.visibleFirst(), fullSpan, 0.01);
    w.setVisibleRange(10, 20);
    EXPECT_NEAR(w.visibleFirst(), 10, 1e-6);
    QTest::keyClick(&w, Qt::Key_Home);
    EXPECT_NEAR(w.visibleFirst(), -0.5, 1e-6);
}

TEST(VersionTimeline, MarksFollowTheZoomAndTooltipsNameTheOp)
{
    Shown shown;
    auto &w = shown.widget;
    w.setVisibleRange(30, 50);
    // Op 41 is inside the range, op 18 left of it.
    EXPECT_TRUE(w.tracksArea().contains(w.markCenter(0, 2).toPoint()));
    EXPECT_LT(w.markCenter(0, 1).x(), w.tracksArea().left());
    QSignalSpy selected(&w, &ui::VersionTimelineWidget::opSelected);
    QTest::mouseClick(&w, Qt::LeftButton, {}, w.markCenter(0, 2).toPoint());
    ASSERT_EQ(selected.count(), 1);
    EXPECT_EQ(selected[0][0].toInt(), 41);

    const QPoint pos = w.markCenter(0, 2).toPoint();
    QHelpEvent help(QEvent::ToolTip, pos, w.mapToGlobal(pos));
    QApplication::sendEvent(&w, &help);
    const QString tip = QToolTip::text();
    EXPECT_TRUE(tip.contains(QStringLiteral("aten::copy_"))) << tip.toStdString();
    EXPECT_TRUE(tip.contains(QStringLiteral("model.layers.0.self_attn")));
    EXPECT_TRUE(tip.contains(QStringLiteral("version 2")));
    QToolTip::hideText();
}

TEST(VersionTimeline, ConflictMarksAreRed)
{
    Shown shown;
    auto &w = shown.widget;
    QImage image(w.size(), QImage::Format_ARGB32);
    w.render(&image);
    // The centre of the conflicting save (op 18) is painted in a red, the clean save of step 2 (op 45) is not.
    const QColor conflict = image.pixelColor(w.markCenter(0, 1).toPoint());
    const QColor clean = image.pixelColor(w.markCenter(0, 3).toPoint());
    EXPECT_GT(conflict.red(), conflict.blue() + 60) << conflict.name().toStdString();
    EXPECT_LT(clean.red(), clean.blue()) << clean.name().toStdString();
}
