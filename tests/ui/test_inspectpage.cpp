// The Inspect page on the built-in kv-cache-inplace scenario: the answer (which write broke
// backward), the conflict on the version timeline, the culprit in the op list; then the fix verified.

#include "bridge/enginebridge.h"
#include "ui/pages/inspectpage.h"
#include "ui/widgets/autogradgraphview.h"
#include "ui/widgets/versiontimeline.h"

#include <QPushButton>
#include <QSignalSpy>
#include <QTableWidget>
#include <QTest>

#include <gtest/gtest.h>

namespace {

constexpr int kTimeoutMs = 120'000;

} // namespace

TEST(InspectPage, ShowsTheInplaceWriteThatBrokeBackwardAndVerifiesTheFix)
{
    bridge::EngineBridge bridge;
    ui::InspectPage page(bridge);
    page.resize(1400, 900);
    page.show();
    ASSERT_TRUE(QTest::qWaitForWindowExposed(&page));

    QSignalSpy shown(&page, &ui::InspectPage::reportShown);
    ASSERT_TRUE(page.inspectScenario(QStringLiteral("kv-cache-inplace")));
    ASSERT_TRUE(shown.wait(kTimeoutMs));
    ASSERT_TRUE(page.report());
    const auto &report = *page.report();
    ASSERT_EQ(report.status, engine::inspect::InspectStatus::InplaceConflict) << report.summary;
    const QString headline = page.diagnosisText();
    EXPECT_TRUE(headline.contains(QString::fromStdString(report.conflict->culpritOp))) << headline.toStdString();
    EXPECT_TRUE(headline.contains(QString::fromStdString(report.conflict->backwardNode))) << headline.toStdString();
    EXPECT_FALSE(report.pytorchError.empty());

    // The timeline puts the conflicting storage first, with its save and write marked as the conflict.
    const auto &tracks = page.timeline()->data().tracks;
    ASSERT_FALSE(tracks.isEmpty());
    int conflictMarks = 0;
    for (const auto &event : tracks.front().events)
        conflictMarks += event.conflict ? 1 : 0;
    EXPECT_GE(conflictMarks, 2) << "the save and the write";
    EXPECT_FALSE(page.graphView()->data().nodes.isEmpty());

    // The culprit op is selected in the op list.
    const auto selected = page.opTable()->selectedItems();
    ASSERT_FALSE(selected.isEmpty());
    EXPECT_EQ(page.opTable()->item(selected.front()->row(), 0)->data(Qt::UserRole).toLongLong(), report.conflict->culpritIndex);

    // Verify fix: the same step with the cache cloned before writing runs backward.
    auto *fix = page.findChild<QPushButton *>(QStringLiteral("inspectVerifyFix"));
    ASSERT_NE(fix, nullptr);
    ASSERT_TRUE(fix->isEnabled());
    QTest::mouseClick(fix, Qt::LeftButton);
    ASSERT_TRUE(shown.wait(kTimeoutMs));
    EXPECT_EQ(page.report()->status, engine::inspect::InspectStatus::Ok);
    EXPECT_TRUE(page.report()->backwardSucceeded);
}

// Saves the README's picture of the kv-cache-inplace diagnosis when TUNEBENCH_INSPECT_SCREENSHOT names a PNG path.
TEST(InspectPage, Screenshot)
{
    const QString path = qEnvironmentVariable("TUNEBENCH_INSPECT_SCREENSHOT");
    if (path.isEmpty())
        GTEST_SKIP() << "set TUNEBENCH_INSPECT_SCREENSHOT=path.png to save a screenshot of the Inspect page";
    bridge::EngineBridge bridge;
    ui::InspectPage page(bridge);
    page.resize(1400, 900);
    page.show();
    ASSERT_TRUE(QTest::qWaitForWindowExposed(&page));
    QSignalSpy shown(&page, &ui::InspectPage::reportShown);
    ASSERT_TRUE(page.inspectScenario(QStringLiteral("kv-cache-inplace")));
    ASSERT_TRUE(shown.wait(kTimeoutMs));
    QTest::qWait(200);
    ASSERT_TRUE(page.grab().toImage().save(path));
}
