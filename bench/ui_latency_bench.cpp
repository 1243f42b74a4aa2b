// The UI's timings that the tests no longer assert (a busy 2-core CI machine breaks any bound):
//   1. the main window while the real trainer runs (the demo corpus, small settings): how long a
//      posted event waits for the UI thread, sampled every 20 ms;
//   2. Stop in that window: from the click to the job's end, and the steps that arrived after it;
//   3. the engine bridge alone, with a fake job of one step per millisecond: from pause() to the
//      last step arriving, and how long destroying the bridge with a paused job takes.
// Prints medians, p99 and maxima in milliseconds.
//   build/bench/ui_latency_bench [seconds of sampling while training, default 10]
// (configure with -DTUNEBENCH_BENCH=ON; runs offscreen unless QT_QPA_PLATFORM says otherwise)

#include "bridge/enginebridge.h"
#include "engine/train/trainer.h"
#include "ui/mainwindow.h"
#include "ui/pages/trainpage.h"
#include "uitestsupport.h"

#include <QApplication>
#include <QDoubleSpinBox>
#include <QElapsedTimer>
#include <QLineEdit>
#include <QPushButton>
#include <QSignalSpy>
#include <QSpinBox>
#include <QTemporaryDir>
#include <QTest>
#include <QTimer>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <vector>

namespace {

using engine::JobControl;
using engine::JobStatus;
using engine::train::StepMetrics;
using engine::train::TrainingObserver;
using engine::train::TrainingOutcome;
using engine::train::TrainingParams;

double msSince(const QElapsedTimer &timer) { return static_cast<double>(timer.nsecsElapsed()) / 1e6; }

void report(const char *what, std::vector<double> samples)
{
    if (samples.empty()) {
        std::printf("%-52s no samples\n", what);
        return;
    }
    std::sort(samples.begin(), samples.end());
    const auto at = [&](double q) { return samples[std::min(samples.size() - 1, static_cast<size_t>(q * samples.size()))]; };
    std::printf("%-52s median %8.2f ms   p99 %8.2f ms   max %8.2f ms   (%zu samples)\n", what, at(0.5), at(0.99),
                samples.back(), samples.size());
}

template<typename T>
T *child(QWidget *window, const char *name)
{
    T *widget = window->findChild<T *>(QString::fromLatin1(name));
    if (!widget) {
        std::fprintf(stderr, "ui_latency_bench: the main window has no widget named %s\n", name);
        std::exit(1);
    }
    return widget;
}

/// 1 and 2: the main window with the real trainer.
bool benchMainWindow(int seconds)
{
    QTemporaryDir storeDir;
    ui::MainWindow window(storeDir.filePath(QStringLiteral("runs.sqlite3")));
    window.resize(1200, 800);
    window.show();
    if (!QTest::qWaitForWindowExposed(&window))
        return false;
    window.showPage(ui::MainWindow::Page::Train);
    const QString corpus = uitest::smallCorpus();
    if (corpus.isEmpty()) {
        std::fprintf(stderr, "ui_latency_bench: cannot write the small corpus\n");
        return false;
    }
    // The UI tests' small settings, with steps enough to outlast the sampling.
    child<QLineEdit>(&window, "data")->setText(corpus);
    child<QSpinBox>(&window, "steps")->setValue(child<QSpinBox>(&window, "steps")->maximum());
    child<QDoubleSpinBox>(&window, "learning_rate")->setValue(0.003);
    child<QSpinBox>(&window, "batch_size")->setValue(2);
    child<QSpinBox>(&window, "sequence_length")->setValue(32);
    child<QSpinBox>(&window, "threads")->setValue(2);
    ui::TrainPage *plot = window.trainPage();

    QTest::mouseClick(child<QPushButton>(&window, "startButton"), Qt::LeftButton);
    if (!window.bridge()->isBusy()) {
        std::fprintf(stderr, "ui_latency_bench: the job did not start\n");
        return false;
    }
    if (!QTest::qWaitFor([&] { return plot->plottedSteps() >= 3 || !window.bridge()->isBusy(); }, 240'000)
        || !window.bridge()->isBusy()) {
        std::fprintf(stderr, "ui_latency_bench: no steps, or the job ended early\n");
        return false;
    }

    std::vector<double> latencies;
    QElapsedTimer total;
    total.start();
    const int firstPoints = plot->plottedSteps();
    while (total.elapsed() < seconds * 1000 && window.bridge()->isBusy()) {
        QElapsedTimer timer;
        bool answered = false;
        timer.start();
        QTimer::singleShot(0, qApp, [&] {
            latencies.push_back(msSince(timer));
            answered = true;
        });
        if (!QTest::qWaitFor([&] { return answered; }, 60'000)) {
            std::fprintf(stderr, "ui_latency_bench: a posted event waited over a minute\n");
            return false;
        }
        QTest::qWait(20);
    }
    const double stepsPerSecond = (plot->plottedSteps() - firstPoints) / (static_cast<double>(total.elapsed()) / 1000);
    report("UI: posted event latency while training", latencies);
    std::printf("%-52s %.1f steps/s drawn\n", "UI: training speed meanwhile", stepsPerSecond);

    const int pointsAtStop = plot->plottedSteps();
    QElapsedTimer stop;
    stop.start();
    QTest::mouseClick(child<QPushButton>(&window, "stopButton"), Qt::LeftButton);
    if (!QTest::qWaitFor([&] { return !window.bridge()->isBusy(); }, 240'000)) {
        std::fprintf(stderr, "ui_latency_bench: the job did not stop within 4 minutes\n");
        return false;
    }
    const double stopMs = msSince(stop);
    std::printf("%-52s %8.2f ms   (%d steps arrived after the click)\n", "UI: Stop click to the job's end", stopMs,
                plot->plottedSteps() - pointsAtStop);
    return true;
}

/// One step per millisecond until cancelled; `lastStep` is the last step it emitted.
auto fakeJob(std::atomic<int64_t> &lastStep)
{
    return [&lastStep](const TrainingParams &params, JobControl &control, TrainingObserver &observer) {
        TrainingOutcome outcome;
        for (int64_t step = 1;; ++step) {
            if (!control.waitWhilePaused() || control.cancelRequested()) {
                outcome.status = JobStatus::Cancelled;
                outcome.stepsCompleted = step - 1;
                return outcome;
            }
            StepMetrics m;
            m.step = step;
            m.totalSteps = params.steps;
            m.loss = 1.0;
            observer.onStep(m);
            lastStep = step;
            std::this_thread::sleep_for(std::chrono::milliseconds(1));
        }
    };
}

int64_t lastDelivered(const QSignalSpy &metrics)
{
    int64_t last = 0;
    for (const QList<QVariant> &args : metrics)
        for (const StepMetrics &m : args.at(0).value<QList<StepMetrics>>())
            last = std::max(last, m.step);
    return last;
}

/// 3: the bridge alone.
bool benchBridge(int rounds)
{
    TrainingParams params;
    params.steps = 10;
    params.threads = 1;
    std::vector<double> pauseToLastStep;
    std::vector<double> destructor;
    for (int round = 0; round < rounds; ++round) {
        std::atomic<int64_t> lastStep{0};
        QElapsedTimer timer;
        {
            bridge::EngineBridge bridge(nullptr, fakeJob(lastStep));
            QSignalSpy metrics(&bridge, &bridge::EngineBridge::stepMetrics);
            if (!bridge.startTraining(params) || !QTest::qWaitFor([&] { return metrics.count() > 0; }, 20'000)) {
                std::fprintf(stderr, "ui_latency_bench: the fake job did not start\n");
                return false;
            }
            QTest::qWait(20);
            timer.start();
            bridge.pause(true);
            // The last step arrives when the job has parked and the UI has drained it: the time of the
            // last change, seen by watching until nothing changed for 200 ms.
            int64_t seen = lastDelivered(metrics);
            double lastChange = 0;
            while (msSince(timer) - lastChange < 200 || seen != lastStep) {
                QTest::qWait(1);
                if (const int64_t now = lastDelivered(metrics); now != seen) {
                    seen = now;
                    lastChange = msSince(timer);
                }
            }
            pauseToLastStep.push_back(lastChange);
            timer.start();
        }
        destructor.push_back(msSince(timer));
    }
    report("bridge: pause() to the last step arriving", pauseToLastStep);
    report("bridge: destroying it with a paused job", destructor);
    return true;
}

} // namespace

int main(int argc, char **argv)
{
    const int seconds = argc > 1 ? std::max(1, std::atoi(argv[1])) : 10;
    QTemporaryDir root(QDir::tempPath() + QStringLiteral("/tunebench-ui-bench-XXXXXX"));
    if (!root.isValid())
        return 2;
    // Like the ui tests: every XDG folder in a temporary directory (no settings or runs of the user).
    for (const char *variable : {"XDG_DATA_HOME", "XDG_CONFIG_HOME", "XDG_CACHE_HOME", "XDG_STATE_HOME"}) {
        const QString dir = root.path() + QLatin1Char('/') + QString::fromLatin1(variable).toLower();
        QDir().mkpath(dir);
        qputenv(variable, dir.toLocal8Bit());
    }
    qputenv("XDG_RUNTIME_DIR", root.path().toLocal8Bit());
    if (qEnvironmentVariableIsEmpty("QT_QPA_PLATFORM"))
        qputenv("QT_QPA_PLATFORM", "offscreen");
    QApplication app(argc, argv);
    QApplication::setOrganizationName(QStringLiteral("tunebench-bench"));
    QApplication::setApplicationName(QStringLiteral("tunebench-bench"));

    std::printf("ui_latency_bench: %d s of sampling while training, on %u threads\n", seconds,
                std::thread::hardware_concurrency());
    return benchBridge(20) && benchMainWindow(seconds) ? 0 : 1;
}
