// The main window driven like a user, with the real trainer on small settings.

#include "bridge/enginebridge.h"
#include "bridge/steprate.h"
#include "engine/core/format.h"
#include "engine/core/systeminfo.h"
#include "engine/store/runstore.h"
#include "engine/train/trainer.h"
#include "ui/mainwindow.h"
#include "ui/models/runsmodel.h"
#include "ui/pages/inspectpage.h"
#include "ui/pages/planpage.h"
#include "ui/pages/runspage.h"
#include "ui/pages/trainpage.h"
#include "ui/widgets/metricplots.h"
#include "ui/widgets/qcustomplotinclude.h"
#include "uitestsupport.h"

#include <QAction>
#include <QApplication>
#include <QDir>
#include <QDropEvent>
#include <QMessageBox>
#include <QMimeData>
#include <QThread>
#include <QUrl>
#include <QDoubleSpinBox>
#include <QFile>
#include <QInputDialog>
#include <QLabel>
#include <QLineEdit>
#include <QListWidget>
#include <QPlainTextEdit>
#include <QProgressBar>
#include <QPushButton>
#include <QSettings>
#include <QSignalSpy>
#include <QSortFilterProxyModel>
#include <QSpinBox>
#include <QStackedWidget>
#include <QTemporaryDir>
#include <QTest>
#include <QTimer>
#include <QToolButton>

#include <gtest/gtest.h>

#include <algorithm>
#include <iostream>
#include <memory>
#include <utility>
#include <vector>

namespace {

constexpr int kJobTimeoutMs = 240'000;

class MainWindowTest : public ::testing::Test {
protected:
    void SetUp() override
    {
        ASSERT_TRUE(m_storeDir.isValid());
        QSettings().remove(QStringLiteral("TrainPage")); // no test inherits the last one's form
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
        child<QLineEdit>("data")->setText(corpus);
        child<QSpinBox>("steps")->setValue(steps);
        child<QDoubleSpinBox>("learning_rate")->setValue(0.003);
        child<QSpinBox>("batch_size")->setValue(2);
        child<QSpinBox>("sequence_length")->setValue(32);
        child<QSpinBox>("threads")->setValue(2);
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
        EXPECT_TRUE(child<QSpinBox>("steps")->isEnabled());
    }

    QString logText() { return child<QPlainTextEdit>("logView")->toPlainText(); }

    bool waitForRunsPage()
    {
        return QTest::qWaitFor([&] { return !m_window->runsPage()->isWaitingForStore(); }, 10'000);
    }

    /// The status texts of the Runs page's rows, in the view's order, once the page has what it asked
    /// the store for (it reads on a thread of its own).
    QStringList runStatuses()
    {
        EXPECT_TRUE(waitForRunsPage());
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

// Regression: the plots' toolbar made the Train and Runs pages, and so the window, at least 1385 px wide:
// more than a 1366x768 laptop screen. The window fits a 1280x720 one (less a taskbar's height).
TEST_F(MainWindowTest, TheWindowFitsALaptopScreen)
{
    const QSize smallest = m_window->minimumSizeHint();
    EXPECT_LE(smallest.width(), 1280) << smallest.width() << "x" << smallest.height();
    EXPECT_LE(smallest.height(), 720) << smallest.width() << "x" << smallest.height();
}

TEST_F(MainWindowTest, InvalidSettingsShowOneMessageAndStartNoJob)
{
    setSmallSettings(40);
    child<QDoubleSpinBox>("learning_rate")->setValue(0);
    EXPECT_FALSE(child<QPushButton>("startButton")->isEnabled());
    EXPECT_TRUE(child<QLabel>("validationLabel")->text().contains(QStringLiteral("learning rate")))
        << child<QLabel>("validationLabel")->text().toStdString();
    // Ctrl+Return (Train > Start) refuses too, and says why.
    m_window->activateWindow();
    ASSERT_TRUE(QTest::qWaitForWindowActive(m_window.get()));
    QTest::keyClick(m_window.get(), Qt::Key_Return, Qt::ControlModifier);
    EXPECT_FALSE(m_window->bridge()->isBusy());
    EXPECT_TRUE(logText().contains(QStringLiteral("Cannot start: Learning rate: "))) << logText().toStdString();
    EXPECT_EQ(m_window->trainPage()->stateText(), QStringLiteral("Idle"));

    child<QDoubleSpinBox>("learning_rate")->setValue(0.003);
    child<QLineEdit>("data")->setText(m_storeDir.filePath(QStringLiteral("no-such-corpus.txt")));
    EXPECT_FALSE(child<QPushButton>("startButton")->isEnabled());
    EXPECT_FALSE(m_window->trainPage()->start());
    EXPECT_FALSE(m_window->bridge()->isBusy());
    EXPECT_TRUE(logText().contains(QStringLiteral("does not exist"))) << logText().toStdString();
    QTest::qWait(200);
    EXPECT_EQ(m_window->trainPage()->plottedSteps(), 0);
    child<QLineEdit>("data")->setText(uitest::smallCorpus());
    expectIdleControls();
}

TEST_F(MainWindowTest, TrainsWithoutBlockingTheUiAndStops)
{
    setSmallSettings(2000);
    click("startButton");
    ASSERT_TRUE(m_window->bridge()->isBusy()) << logText().toStdString();
    EXPECT_FALSE(child<QPushButton>("startButton")->isEnabled());
    EXPECT_TRUE(child<QPushButton>("stopButton")->isEnabled());
    EXPECT_FALSE(child<QSpinBox>("steps")->isEnabled());

    ui::TrainPage *plot = m_window->trainPage();
    ASSERT_TRUE(QTest::qWaitFor([&] { return plot->plottedSteps() >= 3 || !m_window->bridge()->isBusy(); }, kJobTimeoutMs))
        << logText().toStdString();
    ASSERT_TRUE(m_window->bridge()->isBusy()) << "the job ended early:\n" << logText().toStdString();
    EXPECT_EQ(m_window->trainPage()->stateText(), QStringLiteral("Running"));
    EXPECT_TRUE(child<QLabel>("stepLabel")->text().startsWith(QStringLiteral("Step ")));
    EXPECT_TRUE(child<QLabel>("speedLabel")->text().contains(QStringLiteral("tokens/s")));
    EXPECT_GT(child<QProgressBar>("progressBar")->value(), 0);

    // While training runs, the UI thread answers posted events and the plot grows (how quickly:
    // bench/ui_latency_bench; a test on a busy machine asserts facts, not clocks).
    bool answered = false;
    bool busyWhenAnswered = false;
    QTimer::singleShot(0, qApp, [&] {
        answered = true;
        busyWhenAnswered = m_window->bridge()->isBusy();
    });
    ASSERT_TRUE(QTest::qWaitFor([&] { return answered; }, kJobTimeoutMs));
    EXPECT_TRUE(busyWhenAnswered) << "the UI answered only once the job had ended";
    const int points = plot->plottedSteps();
    ASSERT_TRUE(QTest::qWaitFor([&] { return plot->plottedSteps() > points || !m_window->bridge()->isBusy(); }, kJobTimeoutMs));
    EXPECT_GT(plot->plottedSteps(), points);
    EXPECT_TRUE(m_window->bridge()->isBusy()) << "the job ended early:\n" << logText().toStdString();

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

    // The Runs page lists the cancelled run; the plot holds every stored step and none beyond.
    m_window->showPage(ui::MainWindow::Page::Runs);
    EXPECT_EQ(runStatuses(), QStringList{QStringLiteral("Cancelled")});
    QSortFilterProxyModel *proxy = m_window->runsPage()->proxyModel();
    ASSERT_EQ(proxy->rowCount(), 1);
    const QVariant storedSteps = proxy->index(0, ui::RunsModel::StepsColumn).data(ui::RunsModel::RawValueRole);
    ASSERT_TRUE(storedSteps.isValid()) << "the cancelled run stored no step";
    EXPECT_EQ(plot->plottedSteps(), storedSteps.toLongLong());
}

TEST_F(MainWindowTest, AFinishedRunShowsOnTheRunsPage)
{
    setSmallSettings(6);
    for (int run = 0; run < 2; ++run) {
        click("startButton");
        ASSERT_TRUE(m_window->bridge()->isBusy()) << logText().toStdString();
        ASSERT_TRUE(waitForIdle());
        EXPECT_EQ(m_window->trainPage()->stateText(), QStringLiteral("Succeeded")) << logText().toStdString();
        EXPECT_EQ(m_window->trainPage()->plottedSteps(), 6);
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

// A run stopped from the Train page resumes from the Runs page's Resume button with its stored
// settings, on the engine thread like a new run, and trains to the same curve it would have without
// the stop (bit for bit, as `tunebench train --resume` does); then Continue Training… takes it further.
TEST_F(MainWindowTest, AStoppedRunResumesFromTheRunsPageAndContinues)
{
    // The uninterrupted curve first, as a reference.
    setSmallSettings(40);
    child<QSpinBox>("threads")->setValue(1);
    click("startButton");
    ASSERT_TRUE(waitForIdle());
    ASSERT_EQ(m_window->trainPage()->stateText(), QStringLiteral("Succeeded")) << logText().toStdString();
    const QString store = m_storeDir.filePath(QStringLiteral("runs.sqlite3"));
    std::vector<engine::store::MetricPoint> expected;
    {
        auto reader = engine::store::RunStore::open(store.toStdString());
        expected = reader.metric(reader.listRuns().front().id, "train/loss");
    }
    ASSERT_EQ(expected.size(), 40u);

    // The same run again, stopped part way.
    click("startButton");
    ui::TrainPage *page = m_window->trainPage();
    ASSERT_TRUE(QTest::qWaitFor([&] { return page->plottedSteps() >= 5 || !m_window->bridge()->isBusy(); }, kJobTimeoutMs));
    click("stopButton");
    ASSERT_TRUE(waitForIdle(60'000));
    ASSERT_EQ(page->stateText(), QStringLiteral("Cancelled")) << logText().toStdString();

    // Change the form: a resume trains with the run's stored settings, not the form's.
    child<QSpinBox>("batch_size")->setValue(3);
    m_window->showPage(ui::MainWindow::Page::Runs);
    const QStringList statuses = runStatuses();
    ASSERT_EQ(statuses.size(), 2);
    const int row = static_cast<int>(statuses.indexOf(QStringLiteral("Cancelled")));
    ASSERT_GE(row, 0) << statuses.join(QLatin1Char(',')).toStdString();
    QSortFilterProxyModel *proxy = m_window->runsPage()->proxyModel();
    const qint64 stopped = proxy->index(row, ui::RunsModel::IdColumn).data(ui::RunsModel::RawValueRole).toLongLong();
    m_window->runsPage()->selectRuns({stopped});
    ASSERT_TRUE(QTest::qWaitFor([&] { return m_window->runsPage()->resumeAction()->isEnabled(); }, 10'000))
        << m_window->runsPage()->resumeAction()->toolTip().toStdString();
    auto *resume = child<QToolButton>("resumeButton");
    ASSERT_NE(resume, nullptr);
    QTest::mouseClick(resume, Qt::LeftButton);
    EXPECT_EQ(m_window->currentPage(), ui::MainWindow::Page::Train);
    ASSERT_TRUE(waitForIdle());
    EXPECT_EQ(page->stateText(), QStringLiteral("Succeeded")) << logText().toStdString();
    EXPECT_EQ(child<QSpinBox>("batch_size")->value(), 2) << "the form shows what the resumed run trained with";
    {
        auto reader = engine::store::RunStore::open(store.toStdString());
        const auto resumed = reader.metric(stopped, "train/loss");
        ASSERT_EQ(resumed.size(), expected.size());
        for (size_t i = 0; i < expected.size(); ++i)
            EXPECT_EQ(resumed[i].value, expected[i].value) << "step " << expected[i].step;
        EXPECT_EQ(reader.run(stopped)->status, engine::store::RunStatus::Succeeded);
    }

    // Continue Training… asks for the new total and trains on to it.
    m_window->showPage(ui::MainWindow::Page::Runs);
    ASSERT_TRUE(waitForRunsPage());
    m_window->runsPage()->selectRuns({stopped});
    ASSERT_TRUE(QTest::qWaitFor([&] { return m_window->runsPage()->continueAction()->isEnabled(); }, 10'000))
        << m_window->runsPage()->continueAction()->toolTip().toStdString();
    QTimer::singleShot(0, [] {
        auto *dialog = qobject_cast<QInputDialog *>(QApplication::activeModalWidget());
        ASSERT_NE(dialog, nullptr);
        dialog->setIntValue(50);
        dialog->accept();
    });
    auto *more = child<QToolButton>("continueButton");
    ASSERT_NE(more, nullptr);
    QTest::mouseClick(more, Qt::LeftButton);
    ASSERT_TRUE(waitForIdle());
    EXPECT_EQ(page->stateText(), QStringLiteral("Succeeded")) << logText().toStdString();
    auto reader = engine::store::RunStore::open(store.toStdString());
    EXPECT_EQ(reader.metric(stopped, "train/loss").size(), 50u);
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
    child<QLineEdit>("data")->setText(tiny);
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
    EXPECT_EQ(m_window->trainPage()->plottedSteps(), 0);
    m_window->showPage(ui::MainWindow::Page::Runs);
    EXPECT_TRUE(runStatuses().isEmpty()) << "a preview records no run";
}

TEST_F(MainWindowTest, EvalLossAndMemoryShowWhileTraining)
{
    setSmallSettings(8);
    child<QDoubleSpinBox>("val_fraction")->setValue(0.1);
    child<QSpinBox>("eval_every")->setValue(4);
    click("startButton");
    ASSERT_TRUE(waitForIdle());
    EXPECT_EQ(m_window->trainPage()->stateText(), QStringLiteral("Succeeded")) << logText().toStdString();
    EXPECT_EQ(m_window->trainPage()->plottedSteps(), 8);
    ui::MetricPlots *plots = m_window->trainPage()->plots();
    // Before training (step 0: the live plot had no point there), at step 4 and at the end.
    EXPECT_EQ(plots->pointCount(ui::TrainPage::kLiveRun, QStringLiteral("eval/loss")), 3);
    const QCPGraph *evalGraph = plots->rawGraph(ui::TrainPage::kLiveRun, QStringLiteral("eval/loss"));
    ASSERT_NE(evalGraph, nullptr);
    ASSERT_FALSE(evalGraph->data()->isEmpty());
    EXPECT_EQ(evalGraph->data()->constBegin()->key, 0.0);
    EXPECT_EQ(plots->pointCount(ui::TrainPage::kLiveRun, QStringLiteral("train/learning_rate")), 8);
    EXPECT_EQ(plots->pointCount(ui::TrainPage::kLiveRun, QStringLiteral("memory/cpu")), 8);
    EXPECT_EQ(plots->plotIndexOf(QStringLiteral("eval/loss")), plots->plotIndexOf(QStringLiteral("train/loss")));
    // The last evaluation (at step 8): loss and perplexity shown, the step in the tooltip.
    auto *eval = child<QLabel>("evalValue");
    EXPECT_TRUE(eval->text().contains(QStringLiteral("ppl"))) << eval->text().toStdString();
    EXPECT_TRUE(eval->toolTip().endsWith(QStringLiteral("at step 8"))) << eval->toolTip().toStdString();
    EXPECT_TRUE(child<QLabel>("memoryValue")->text().contains(QStringLiteral("CPU")))
        << child<QLabel>("memoryValue")->text().toStdString();
}

TEST_F(MainWindowTest, ANanLossOffersItsStepOnTheInspectPage)
{
    const QString folder = uitest::nanModelFolder();
    ASSERT_FALSE(folder.isEmpty());
    setSmallSettings(5);
    child<QLineEdit>("model")->setText(folder);
    child<QLineEdit>("data")->setText(folder + QStringLiteral("/ids.jsonl"));
    child<QSpinBox>("sequence_length")->setValue(16);
    child<QDoubleSpinBox>("val_fraction")->setValue(0);
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

TEST_F(MainWindowTest, ShortcutsSwitchPages)
{
    m_window->activateWindow();
    ASSERT_TRUE(QTest::qWaitForWindowActive(m_window.get()));
    const QList<std::pair<Qt::Key, ui::MainWindow::Page>> keys = {{Qt::Key_4, ui::MainWindow::Page::Runs},
                                                                  {Qt::Key_1, ui::MainWindow::Page::Plan},
                                                                  {Qt::Key_3, ui::MainWindow::Page::Inspect},
                                                                  {Qt::Key_2, ui::MainWindow::Page::Train}};
    for (const auto &[key, page] : keys) {
        QTest::keyClick(m_window.get(), key, Qt::ControlModifier);
        EXPECT_EQ(m_window->currentPage(), page) << "Ctrl+" << QKeySequence(key).toString().toStdString();
    }
    for (const char *name : {"openModelAction", "quitAction", "startAction", "stopAction", "refreshAction", "copyCliAction"}) {
        auto *action = m_window->findChild<QAction *>(QString::fromLatin1(name));
        ASSERT_NE(action, nullptr) << name;
        EXPECT_FALSE(action->shortcut().isEmpty()) << name << " has no shortcut";
    }
    EXPECT_FALSE(m_window->findChild<QAction *>(QStringLiteral("stopAction"))->isEnabled()) << "nothing to stop";
}

TEST_F(MainWindowTest, AboutShowsTheVersionsOfQtLibtorchAndTheBlas)
{
    auto *about = m_window->findChild<QAction *>(QStringLiteral("aboutAction"));
    ASSERT_NE(about, nullptr);
    const auto aboutText = [&] {
        about->trigger();
        auto *box = m_window->findChild<QMessageBox *>(QStringLiteral("aboutDialog"));
        EXPECT_NE(box, nullptr);
        if (!box)
            return QString();
        EXPECT_TRUE(QTest::qWaitForWindowExposed(box));
        const QString text = box->text();
        box->accept();
        QCoreApplication::sendPostedEvents(nullptr, QEvent::DeferredDelete); // WA_DeleteOnClose
        return text;
    };

    // Before the engine module is loaded (the GUI loads it after its first paint): Qt, and a word on libtorch.
    ASSERT_FALSE(m_window->bridge()->engineReady());
    QString text = aboutText();
    EXPECT_TRUE(text.contains(QStringLiteral("Qt        %1").arg(QString::fromLatin1(qVersion())))) << text.toStdString();
    EXPECT_TRUE(text.contains(QStringLiteral("libtorch  still loading"))) << text.toStdString();

    QSignalSpy loaded(m_window->bridge(), &bridge::EngineBridge::engineLoaded);
    m_window->bridge()->loadEngine();
    ASSERT_TRUE(loaded.wait(60000));
    text = aboutText();
    const engine::SystemInfo info = engine::systemInfo();
    EXPECT_TRUE(text.contains(QStringLiteral("Qt        %1").arg(QString::fromLatin1(qVersion())))) << text.toStdString();
    EXPECT_TRUE(text.contains(QStringLiteral("libtorch  %1").arg(QString::fromStdString(info.torchVersion)))) << text.toStdString();
    EXPECT_TRUE(text.contains(QStringLiteral("BLAS ") + QString::fromStdString(info.blas.empty() ? "unknown" : info.blas).toHtmlEscaped()))
        << text.toStdString();
}

TEST_F(MainWindowTest, AFolderDroppedOnTheWindowOpensOnTheTrainPage)
{
    QTemporaryDir model;
    ASSERT_TRUE(model.isValid());
    m_window->showPage(ui::MainWindow::Page::Runs);
    QMimeData mime;
    mime.setUrls({QUrl::fromLocalFile(model.path())});
    const QPoint where(5, m_window->height() - 5); // the status bar
    QDragEnterEvent enter(where, Qt::CopyAction, &mime, Qt::LeftButton, Qt::NoModifier);
    QApplication::sendEvent(m_window.get(), &enter);
    EXPECT_TRUE(enter.isAccepted());
    QDropEvent drop(QPointF(where), Qt::CopyAction, &mime, Qt::LeftButton, Qt::NoModifier);
    QApplication::sendEvent(m_window.get(), &drop);
    EXPECT_EQ(m_window->currentPage(), ui::MainWindow::Page::Train);
    EXPECT_EQ(QDir::fromNativeSeparators(child<QLineEdit>("model")->text()), model.path());
}

/// Steps at 2 per second of job time (StepMetrics::wallSeconds) until cancelled or done.
engine::train::TrainingOutcome stepSlowly(const engine::train::TrainingParams &params, engine::JobControl &control,
                                          engine::train::TrainingObserver &observer)
{
    engine::train::TrainingOutcome outcome;
    outcome.runId = 1;
    for (int64_t step = 1; step <= params.steps; ++step) {
        if (!control.waitWhilePaused() || control.cancelRequested()) {
            outcome.status = engine::JobStatus::Cancelled;
            outcome.stepsCompleted = step - 1;
            return outcome;
        }
        engine::train::StepMetrics m;
        m.step = step;
        m.totalSteps = params.steps;
        m.loss = 3.0 / static_cast<double>(step);
        m.tokensPerSecond = 1000;
        m.wallSeconds = 0.5 * static_cast<double>(step);
        observer.onStep(m);
        QThread::msleep(5);
    }
    outcome.status = engine::JobStatus::Succeeded;
    outcome.stepsCompleted = params.steps;
    return outcome;
}

TEST(MainWindowStatusBar, ShowsTheJobsProgressAndTimeLeftAndEscStops)
{
    QSettings().remove(QStringLiteral("TrainPage"));
    QTemporaryDir dir;
    ASSERT_TRUE(dir.isValid());
    ui::MainWindow window(dir.filePath(QStringLiteral("runs.sqlite3")), new bridge::EngineBridge(nullptr, stepSlowly));
    window.show();
    ASSERT_TRUE(QTest::qWaitForWindowExposed(&window));
    window.activateWindow();
    ASSERT_TRUE(QTest::qWaitForWindowActive(&window));
    window.showPage(ui::MainWindow::Page::Runs); // Ctrl+Return starts from any page, and shows Train
    auto *steps = window.findChild<QSpinBox *>(QStringLiteral("steps"));
    ASSERT_NE(steps, nullptr);
    steps->setValue(100'000);
    auto *progress = window.findChild<QProgressBar *>(QStringLiteral("jobProgress"));
    auto *eta = window.findChild<QLabel *>(QStringLiteral("etaLabel"));
    ASSERT_TRUE(progress && eta);
    EXPECT_FALSE(progress->isVisible()) << "no job, no progress bar";

    QTest::keyClick(&window, Qt::Key_Return, Qt::ControlModifier);
    ASSERT_TRUE(window.bridge()->isBusy());
    EXPECT_EQ(window.currentPage(), ui::MainWindow::Page::Train);
    ASSERT_TRUE(QTest::qWaitFor([&] { return progress->value() >= 20 && !eta->text().isEmpty(); }, 20'000));
    EXPECT_TRUE(progress->isVisible());
    EXPECT_EQ(progress->maximum(), 100'000);
    // The time left at the recent rate: 2 steps per second of the job's clock.
    window.bridge()->pause(true); // hold the numbers still while they are read
    QTest::qWait(100);
    const int step = progress->value();
    EXPECT_EQ(eta->text(), QStringLiteral("%1 left").arg(QString::fromStdString(engine::formatDuration((100'000 - step) / 2.0))));
    EXPECT_TRUE(window.findChild<QLabel *>(QStringLiteral("stepLabel"))->text().startsWith(QStringLiteral("Step %1 /").arg(step)));
    window.bridge()->pause(false);

    QTest::keyClick(&window, Qt::Key_Escape);
    ASSERT_TRUE(QTest::qWaitFor([&] { return !window.bridge()->isBusy(); }, 20'000));
    EXPECT_EQ(window.trainPage()->stateText(), QStringLiteral("Cancelled"));
    EXPECT_FALSE(progress->isVisible());
    EXPECT_TRUE(eta->text().isEmpty());
}

// Saves the README's picture of the Train page when TUNEBENCH_SCREENSHOT names a PNG path.
TEST_F(MainWindowTest, Screenshot)
{
    const QString path = qEnvironmentVariable("TUNEBENCH_SCREENSHOT");
    if (path.isEmpty())
        GTEST_SKIP() << "set TUNEBENCH_SCREENSHOT=path.png to save a screenshot of the Train page";
    constexpr int kSteps = 100;
    m_window->trainPage()->useDemo(); // the README's main job: LoRA of the bundled base model
    child<QSpinBox>("steps")->setValue(kSteps);
    child<QSpinBox>("batch_size")->setValue(8);
    child<QSpinBox>("sequence_length")->setValue(64);
    child<QSpinBox>("threads")->setValue(2);
    click("startButton");
    ASSERT_TRUE(m_window->bridge()->isBusy()) << logText().toStdString();
    ui::TrainPage *plot = m_window->trainPage();
    ASSERT_TRUE(QTest::qWaitFor([&] { return plot->plottedSteps() >= 80 || !m_window->bridge()->isBusy(); }, 2 * kJobTimeoutMs));
    ASSERT_TRUE(m_window->bridge()->isBusy()) << logText().toStdString();
    QTest::qWait(100); // one more drain and replot
    const QImage image = m_window->grab().toImage();
    ASSERT_TRUE(image.save(path, "PNG")) << path.toStdString();
    std::cout << "[          ] saved " << path.toStdString() << " (" << image.width() << "x" << image.height()
              << "; the window's smallest size " << m_window->minimumSizeHint().width() << "x"
              << m_window->minimumSizeHint().height() << ")\n";
    click("stopButton");
    ASSERT_TRUE(waitForIdle(60'000));
}

// Saves the README's picture of the Runs page when TUNEBENCH_RUNS_SCREENSHOT names a PNG path: three
// real demo runs (LoRA of the bundled base model) at three learning rates, trained in this window, then
// selected together so that their curves overlay.
TEST_F(MainWindowTest, RunsScreenshot)
{
    const QString path = qEnvironmentVariable("TUNEBENCH_RUNS_SCREENSHOT");
    if (path.isEmpty())
        GTEST_SKIP() << "set TUNEBENCH_RUNS_SCREENSHOT=path.png to save a screenshot of the Runs page";
    m_window->resize(1400, 900);
    const std::vector<std::pair<double, const char *>> runs = {{0.01, "lora lr 1e-2"}, {0.003, "lora lr 3e-3"}, {0.001, "lora lr 1e-3"}};
    for (const auto &[lr, name] : runs) {
        m_window->trainPage()->useDemo();
        child<QSpinBox>("steps")->setValue(150);
        child<QSpinBox>("batch_size")->setValue(8);
        child<QSpinBox>("sequence_length")->setValue(64);
        child<QSpinBox>("threads")->setValue(2);
        child<QDoubleSpinBox>("learning_rate")->setValue(lr);
        child<QLineEdit>("name")->setText(QString::fromLatin1(name));
        click("startButton");
        ASSERT_TRUE(m_window->bridge()->isBusy()) << logText().toStdString();
        ASSERT_TRUE(waitForIdle(2 * kJobTimeoutMs));
        ASSERT_EQ(m_window->trainPage()->stateText(), QStringLiteral("Succeeded")) << logText().toStdString();
    }
    m_window->showPage(ui::MainWindow::Page::Runs);
    ui::RunsPage *page = m_window->runsPage();
    QSortFilterProxyModel *proxy = page->proxyModel();
    ASSERT_TRUE(waitForRunsPage());
    ASSERT_EQ(proxy->rowCount(), 3);
    QList<qint64> ids;
    for (int row = 0; row < proxy->rowCount(); ++row)
        ids << proxy->index(row, ui::RunsModel::IdColumn).data(ui::RunsModel::RawValueRole).toLongLong();
    page->selectRuns(ids);
    ASSERT_TRUE(QTest::qWaitFor([&] { return page->overlaidRunIds().size() == 3; }, 10'000));
    QTest::qWait(300); // the plots' queued replot
    const QImage image = m_window->grab().toImage();
    ASSERT_TRUE(image.save(path, "PNG")) << path.toStdString();
    std::cout << "[          ] saved " << path.toStdString() << " (" << image.width() << "x" << image.height() << ")\n";
}

} // namespace
