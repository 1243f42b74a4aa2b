// The Inspect page on the built-in kv-cache-inplace scenario: the answer (which write broke
// backward), the conflict on the version timeline, the culprit in the op list; then the fix verified.

#include "bridge/enginebridge.h"
#include "ui/pages/inspectpage.h"
#include "ui/widgets/autogradgraphview.h"
#include "ui/widgets/versiontimeline.h"

#include <QLabel>
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

// A trace of the user's Python program (tunebench record): the answer names their line, the
// timeline names the tensor written (the cache), and the write before the save is not the culprit.
TEST(InspectPage, OpensATraceOfAPythonProgramAndNamesTheLine)
{
    bridge::EngineBridge bridge;
    ui::InspectPage page(bridge);
    page.resize(1400, 900);
    page.show();
    ASSERT_TRUE(QTest::qWaitForWindowExposed(&page));
    QSignalSpy shown(&page, &ui::InspectPage::reportShown);
    const QString trace = QStringLiteral(TUNEBENCH_TEST_DATA "/inspect/traces/kv-cache.jsonl");
    ASSERT_TRUE(page.openTrace(trace));
    ASSERT_TRUE(shown.wait(kTimeoutMs));
    ASSERT_TRUE(page.report());
    EXPECT_EQ(page.report()->status, engine::inspect::InspectStatus::InplaceConflict) << page.report()->summary;
    EXPECT_TRUE(page.diagnosisText().startsWith(QStringLiteral("This write broke backward: aten::copy_ in layers.0.attention (op #4)")))
        << page.diagnosisText().toStdString();
    auto *detail = page.findChild<QLabel *>(QStringLiteral("inspectDetail"));
    ASSERT_NE(detail, nullptr);
    EXPECT_TRUE(detail->text().contains(QStringLiteral(
        "In your code: /home/user/llama/model.py:12 (forward): self.cache_k[:bsz, start_pos : start_pos + seqlen] = xk")))
        << detail->text().toStdString();
    EXPECT_EQ(page.headline()->property("severity").toString(), QStringLiteral("error"));
    const auto &tracks = page.timeline()->data().tracks;
    ASSERT_FALSE(tracks.isEmpty());
    EXPECT_EQ(tracks.front().name, QStringLiteral("layers.0.attention.cache_k")) << "the written storage, named, first";
    bool outputNamed = false;
    for (const auto &track : tracks)
        outputNamed = outputNamed || track.name == QStringLiteral("output of aten::bmm in layers.0.attention");
    EXPECT_FALSE(outputNamed) << "an output that nothing saved or wrote has no track";
    // A file that is not a trace: one clear message in the headline.
    ASSERT_TRUE(page.openTrace(QStringLiteral(TUNEBENCH_TEST_DATA "/inspect/inplace_cache_expected.json")));
    ASSERT_TRUE(shown.wait(kTimeoutMs));
    EXPECT_EQ(page.report()->status, engine::inspect::InspectStatus::Error);
    EXPECT_TRUE(page.diagnosisText().contains(QStringLiteral("is not a tunebench trace"))) << page.diagnosisText().toStdString();
}

// Findings come first, in a warning colour: backward ran, but the optimizer holds frozen weights.
TEST(InspectPage, FindingsAfterASucceededBackwardReadAsAWarning)
{
    bridge::EngineBridge bridge;
    ui::InspectPage page(bridge);
    page.show();
    QSignalSpy shown(&page, &ui::InspectPage::reportShown);
    ASSERT_TRUE(page.inspectScenario(QStringLiteral("frozen-in-optimizer")));
    ASSERT_TRUE(shown.wait(kTimeoutMs));
    ASSERT_TRUE(page.report());
    ASSERT_EQ(page.report()->status, engine::inspect::InspectStatus::Ok);
    ASSERT_FALSE(page.report()->gradientProblems.empty());
    EXPECT_TRUE(page.diagnosisText().startsWith(QStringLiteral("Backward succeeded, but "))) << page.diagnosisText().toStdString();
    EXPECT_TRUE(page.diagnosisText().contains(QStringLiteral("frozen but in the optimizer"))) << page.diagnosisText().toStdString();
    EXPECT_EQ(page.headline()->property("severity").toString(), QStringLiteral("warning"));
    const QColor colour = page.headline()->palette().color(QPalette::WindowText);
    EXPECT_GT(colour.red(), colour.blue());
    EXPECT_GT(colour.green(), colour.blue()) << "amber, not red";
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
