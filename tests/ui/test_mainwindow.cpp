// The main window driven like a user, with the real trainer on small settings.

#include "app/bridge/enginebridge.h"
#include "ui/mainwindow.h"
#include "ui/models/runsmodel.h"
#include "ui/pages/inspectpage.h"
#include "ui/pages/planpage.h"
#include "ui/pages/runspage.h"
#include "ui/pages/trainpage.h"
#include "ui/widgets/lossplot.h"
#include "uitestsupport.h"

#include <QApplication>
#include <QDoubleSpinBox>
#include <QElapsedTimer>
#include <QFile>
#include <QLabel>
#include <QLineEdit>
#include <QListWidget>
#include <QPlainTextEdit>
#include <QProgressBar>
#include <QPushButton>
#include <QSortFilterProxyModel>
#include <QSpinBox>
#include <QStackedWidget>
#include <QTemporaryDir>
#include <QTest>
#include <QTimer>

#include <gtest/gtest.h>

#include <algorithm>
#include <iostream>
#include <memory>

namespace {

constexpr int kJobTimeoutMs = 240'000;

class MainWindowTest : public ::testing::Test {
protected:
    void SetUp() override
    {
        ASSERT_TRUE(m_storeDir.isValid());
        m_window = std::make_unique<ui::MainWindow>(m_storeDir.filePath(QStringLiteral("runs.sqlite3")));
        m_window->resize(1200, 800);
        m_window->show();
        ASSERT_TRUE(QTest::qWaitForWindowExposed(m_window.get()));
        m_window->showPage(ui::MainWindow::Page::Train);
    }

    void TearDown() override { m_window.reset(); }

    template<typename T>
    T *child(const char *name)
    {
        T *widget = m_window->findChild<T *>(QString::fromLatin1(name));
        EXPECT_NE(widget, nullptr) << "no widget named " << name;
        return widget;
    }

    /// Small settings that train in seconds on two cores.
    void setSmallSettings(int steps)
    {
        const QString corpus = uitest::smallCorpus();
        ASSERT_FALSE(corpus.isEmpty());
        child<QLineEdit>("corpusEdit")->setText(corpus);
        child<QSpinBox>("stepsSpin")->setValue(steps);
        child<QDoubleSpinBox>("lrSpin")->setValue(0.003);
        child<QSpinBox>("batchSpin")->setValue(2);
        child<QSpinBox>("seqLenSpin")->setValue(32);
        child<QSpinBox>("threadsSpin")->setValue(2);
    }

    void click(const char *button)
    {
        auto *b = child<QPushButton>(button);
        ASSERT_NE(b, nullptr);
        ASSERT_TRUE(b->isEnabled()) << button << " is disabled";
        QTest::mouseClick(b, Qt::LeftButton);
    }

    bool waitForIdle(int timeoutMs = kJobTimeoutMs)
    {
        return QTest::qWaitFor([this] { return !m_window->bridge()->isBusy(); }, timeoutMs);
    }

    void expectIdleControls()
    {
        EXPECT_TRUE(child<QPushButton>("startButton")->isEnabled());
        EXPECT_FALSE(child<QPushButton>("pauseButton")->isEnabled());
        EXPECT_FALSE(child<QPushButton>("stopButton")->isEnabled());
        EXPECT_TRUE(child<QSpinBox>("stepsSpin")->isEnabled());
    }

    QString logText() { return child<QPlainTextEdit>("logView")->toPlainText(); }

    /// The status texts of the Runs page's rows, in the view's order.
    QStringList runStatuses()
    {
        QSortFilterProxyModel *proxy = m_window->runsPage()->proxyModel();
        QStringList statuses;
        for (int row = 0; row < proxy->rowCount(); ++row)
            statuses << proxy->index(row, ui::RunsModel::StatusColumn).data().toString();
        return statuses;
    }

    QTemporaryDir m_storeDir;
    std::unique_ptr<ui::MainWindow> m_window;
};

TEST_F(MainWindowTest, SidebarSwitchesPagesAndThePlanAndInspectPagesStartWithWhatToDo)
{
    auto *navigation = child<QListWidget>("navigation");
    auto *pages = child<QStackedWidget>("pages");
    ASSERT_EQ(navigation->count(), 4);
    const QStringList names = {QStringLiteral("planPage"), QStringLiteral("trainPage"), QStringLiteral("inspectPage"), QStringLiteral("runsPage")};
    for (int row : {0, 2, 3, 1}) {
        QListWidgetItem *item = navigation->item(row);
        QTest::mouseClick(navigation->viewport(), Qt::LeftButton, {}, navigation->visualItemRect(item).center());
        EXPECT_EQ(pages->currentWidget()->objectName(), names[row]);
    }
    // Before anything is opened, each page says what to do first.
    auto *planVerdict = m_window->planPage()->findChild<QLabel *>(QStringLiteral("planVerdict"));
    ASSERT_NE(planVerdict, nullptr);
    EXPECT_TRUE(planVerdict->text().contains(QStringLiteral("Open a model folder"))) << planVerdict->text().toStdString();
    auto *inspectHeadline = m_window->inspectPage()->findChild<QLabel *>(QStringLiteral("inspectHeadline"));
    ASSERT_NE(inspectHeadline, nullptr);
    EXPECT_TRUE(inspectHeadline->text().contains(QStringLiteral("built-in scenario"))) << inspectHeadline->text().toStdString();
    expectIdleControls();
    EXPECT_EQ(m_window->trainPage()->stateText(), QStringLiteral("Idle"));
}

TEST_F(MainWindowTest, InvalidSettingsShowOneMessageAndStartNoJob)
{
    setSmallSettings(40);
    child<QDoubleSpinBox>("lrSpin")->setValue(0);
    click("startButton");
    EXPECT_FALSE(m_window->bridge()->isBusy());
    EXPECT_TRUE(logText().contains(QStringLiteral("learning rate"))) << logText().toStdString();
    EXPECT_EQ(m_window->trainPage()->stateText(), QStringLiteral("Idle"));
    expectIdleControls();

    child<QDoubleSpinBox>("lrSpin")->setValue(0.003);
    child<QLineEdit>("corpusEdit")->setText(m_storeDir.filePath(QStringLiteral("no-such-corpus.txt")));
    click("startButton");
    EXPECT_FALSE(m_window->bridge()->isBusy());
    EXPECT_TRUE(logText().contains(QStringLiteral("does not exist"))) << logText().toStdString();
    QTest::qWait(200);
    EXPECT_EQ(child<ui::LossPlot>("lossPlot")->pointCount(), 0);
    expectIdleControls();
}

TEST_F(MainWindowTest, TrainsWithoutBlockingTheUiAndStops)
{
    setSmallSettings(2000);
    click("startButton");
    ASSERT_TRUE(m_window->bridge()->isBusy()) << logText().toStdString();
    EXPECT_FALSE(child<QPushButton>("startButton")->isEnabled());
    EXPECT_TRUE(child<QPushButton>("stopButton")->isEnabled());
    EXPECT_FALSE(child<QSpinBox>("stepsSpin")->isEnabled());

    auto *plot = child<ui::LossPlot>("lossPlot");
    ASSERT_TRUE(QTest::qWaitFor([&] { return plot->pointCount() >= 3 || !m_window->bridge()->isBusy(); }, kJobTimeoutMs))
        << logText().toStdString();
    ASSERT_TRUE(m_window->bridge()->isBusy()) << "the job ended early:\n" << logText().toStdString();
    EXPECT_EQ(m_window->trainPage()->stateText(), QStringLiteral("Running"));
    EXPECT_TRUE(child<QLabel>("stepLabel")->text().startsWith(QStringLiteral("Step ")));
    EXPECT_TRUE(child<QLabel>("speedLabel")->text().contains(QStringLiteral("tokens/s")));
    EXPECT_GT(child<QProgressBar>("progressBar")->value(), 0);

    // While training runs, the UI thread answers a posted event quickly.
    qint64 worst = 0;
    for (int sample = 0; sample < 10; ++sample) {
        QElapsedTimer timer;
        bool answered = false;
        qint64 latency = -1;
        timer.start();
        QTimer::singleShot(0, qApp, [&] {
            latency = timer.elapsed();
            answered = true;
        });
        ASSERT_TRUE(QTest::qWaitFor([&] { return answered; }, 5000));
        worst = std::max(worst, latency);
        QTest::qWait(30);
    }
    std::cout << "[          ] worst UI latency while training: " << worst << " ms\n";
    EXPECT_LT(worst, 500);
    EXPECT_TRUE(m_window->bridge()->isBusy());

    click("pauseButton");
    EXPECT_EQ(m_window->trainPage()->stateText(), QStringLiteral("Paused"));
    EXPECT_EQ(child<QPushButton>("pauseButton")->text(), QStringLiteral("&Resume"));
    click("pauseButton");
    EXPECT_EQ(m_window->trainPage()->stateText(), QStringLiteral("Running"));

    click("stopButton");
    EXPECT_FALSE(child<QPushButton>("stopButton")->isEnabled());
    ASSERT_TRUE(waitForIdle(60'000));
    EXPECT_EQ(m_window->trainPage()->stateText(), QStringLiteral("Cancelled"));
    EXPECT_EQ(child<QLabel>("stateLabel")->text(), QStringLiteral("Cancelled"));
    expectIdleControls();
    EXPECT_TRUE(logText().contains(QStringLiteral("Stopped after"))) << logText().toStdString();

    // The Runs page lists the cancelled run.
    m_window->showPage(ui::MainWindow::Page::Runs);
    EXPECT_EQ(runStatuses(), QStringList{QStringLiteral("Cancelled")});
}

TEST_F(MainWindowTest, AFinishedRunShowsOnTheRunsPage)
{
    setSmallSettings(6);
    for (int run = 0; run < 2; ++run) {
        click("startButton");
        ASSERT_TRUE(m_window->bridge()->isBusy()) << logText().toStdString();
        ASSERT_TRUE(waitForIdle());
        EXPECT_EQ(m_window->trainPage()->stateText(), QStringLiteral("Succeeded")) << logText().toStdString();
        EXPECT_EQ(child<ui::LossPlot>("lossPlot")->pointCount(), 6);
    }
    m_window->showPage(ui::MainWindow::Page::Runs);
    EXPECT_EQ(runStatuses(), (QStringList{QStringLiteral("Succeeded"), QStringLiteral("Succeeded")}));

    QSortFilterProxyModel *proxy = m_window->runsPage()->proxyModel();
    proxy->sort(ui::RunsModel::IdColumn, Qt::AscendingOrder);
    EXPECT_LT(proxy->index(0, 0).data(ui::RunsModel::RawValueRole).toLongLong(),
              proxy->index(1, 0).data(ui::RunsModel::RawValueRole).toLongLong());
    click("refreshButton");
    EXPECT_EQ(proxy->rowCount(), 2);
}

TEST_F(MainWindowTest, AFailedJobSaysWhyAndReturnsToIdle)
{
    setSmallSettings(10);
    const QString tiny = m_storeDir.filePath(QStringLiteral("tiny.txt"));
    {
        QFile file(tiny);
        ASSERT_TRUE(file.open(QIODevice::WriteOnly));
        file.write("Call me Ishmael.\n");
    }
    child<QLineEdit>("corpusEdit")->setText(tiny);
    click("startButton");
    ASSERT_TRUE(m_window->bridge()->isBusy()) << logText().toStdString();
    ASSERT_TRUE(waitForIdle());
    EXPECT_EQ(m_window->trainPage()->stateText(), QStringLiteral("Failed")) << logText().toStdString();
    EXPECT_TRUE(logText().contains(QStringLiteral("error: Training failed"))) << logText().toStdString();
    std::cout << "[          ] " << logText().split(QLatin1Char('\n')).constLast().toStdString() << "\n";
    expectIdleControls();
}

TEST_F(MainWindowTest, PreviewDataShowsWhatARunWouldTrainOnAndTrainsNothing)
{
    setSmallSettings(10);
    click("previewButton");
    ASSERT_TRUE(m_window->bridge()->isBusy());
    EXPECT_FALSE(child<QPushButton>("startButton")->isEnabled()) << "no run while the preview reads the data";
    ASSERT_TRUE(waitForIdle());
    const QString log = logText();
    EXPECT_TRUE(log.contains(QStringLiteral("Data preview (nothing trained):"))) << log.toStdString();
    EXPECT_TRUE(log.contains(QStringLiteral("rows:"))) << log.toStdString();
    EXPECT_TRUE(log.contains(QStringLiteral("--- row 1: "))) << log.toStdString();
    EXPECT_EQ(child<ui::LossPlot>("lossPlot")->pointCount(), 0);
    m_window->showPage(ui::MainWindow::Page::Runs);
    EXPECT_TRUE(runStatuses().isEmpty()) << "a preview records no run";
}

TEST_F(MainWindowTest, EvalLossAndMemoryShowWhileTraining)
{
    setSmallSettings(8);
    child<QDoubleSpinBox>("valFractionSpin")->setValue(0.1);
    click("startButton");
    ASSERT_TRUE(waitForIdle());
    EXPECT_EQ(m_window->trainPage()->stateText(), QStringLiteral("Succeeded")) << logText().toStdString();
    auto *plot = child<ui::LossPlot>("lossPlot");
    EXPECT_EQ(plot->pointCount(), 8);
    EXPECT_GE(plot->evalPointCount(), 2) << "evaluated every steps/10 steps and at the end";
    EXPECT_TRUE(child<QLabel>("memoryValue")->text().contains(QStringLiteral("CPU")))
        << child<QLabel>("memoryValue")->text().toStdString();
}

TEST_F(MainWindowTest, ANanLossOffersItsStepOnTheInspectPage)
{
    const QString folder = uitest::nanModelFolder();
    ASSERT_FALSE(folder.isEmpty());
    setSmallSettings(5);
    child<QLineEdit>("modelEdit")->setText(folder);
    child<QLineEdit>("corpusEdit")->setText(folder + QStringLiteral("/ids.jsonl"));
    child<QSpinBox>("seqLenSpin")->setValue(16);
    child<QDoubleSpinBox>("valFractionSpin")->setValue(0);
    auto *inspectButton = child<QPushButton>("inspectStepButton");
    EXPECT_FALSE(inspectButton->isVisible());
    click("startButton");
    ASSERT_TRUE(waitForIdle());
    EXPECT_EQ(m_window->trainPage()->stateText(), QStringLiteral("Failed")) << logText().toStdString();
    EXPECT_TRUE(logText().contains(QStringLiteral("the loss is nan at step 1"))) << logText().toStdString();
    ASSERT_TRUE(inspectButton->isVisible()) << logText().toStdString();
    EXPECT_TRUE(inspectButton->text().contains(QStringLiteral("Step 1"))) << inspectButton->text().toStdString();

    click("inspectStepButton");
    EXPECT_EQ(m_window->currentPage(), ui::MainWindow::Page::Inspect);
    ASSERT_TRUE(waitForIdle());
    ASSERT_TRUE(QTest::qWaitFor([&] { return m_window->inspectPage()->report() != nullptr; }, 10'000));
    const auto &report = m_window->inspectPage()->report();
    EXPECT_EQ(report->status, engine::inspect::InspectStatus::Nan) << report->summary << report->error;
    ASSERT_TRUE(report->nan.has_value());
    EXPECT_EQ(report->nan->module, "model.norm");
    EXPECT_TRUE(m_window->inspectPage()->diagnosisText().contains(QStringLiteral("model.norm")))
        << m_window->inspectPage()->diagnosisText().toStdString();
}

// Saves the README's picture of the Train page when TUNEBENCH_SCREENSHOT names a PNG path.
TEST_F(MainWindowTest, Screenshot)
{
    const QString path = qEnvironmentVariable("TUNEBENCH_SCREENSHOT");
    if (path.isEmpty())
        GTEST_SKIP() << "set TUNEBENCH_SCREENSHOT=path.png to save a screenshot of the Train page";
    constexpr int kSteps = 100;
    m_window->trainPage()->useDemo(); // the README's main job: LoRA of the bundled base model
    child<QSpinBox>("stepsSpin")->setValue(kSteps);
    child<QSpinBox>("batchSpin")->setValue(8);
    child<QSpinBox>("seqLenSpin")->setValue(64);
    child<QSpinBox>("threadsSpin")->setValue(2);
    click("startButton");
    ASSERT_TRUE(m_window->bridge()->isBusy()) << logText().toStdString();
    auto *plot = child<ui::LossPlot>("lossPlot");
    ASSERT_TRUE(QTest::qWaitFor([&] { return plot->pointCount() >= 80 || !m_window->bridge()->isBusy(); }, 2 * kJobTimeoutMs));
    ASSERT_TRUE(m_window->bridge()->isBusy()) << logText().toStdString();
    QTest::qWait(100); // one more drain and replot
    const QImage image = m_window->grab().toImage();
    ASSERT_TRUE(image.save(path, "PNG")) << path.toStdString();
    std::cout << "[          ] saved " << path.toStdString() << " (" << image.width() << "x" << image.height() << ")\n";
    click("stopButton");
    ASSERT_TRUE(waitForIdle(60'000));
}

} // namespace
