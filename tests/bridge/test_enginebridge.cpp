// The bridge alone, with fake training functions: threading, the three outcomes, refusals and
// the coalescing of step metrics; and loading the real engine module in the background.

#include "bridge/enginebridge.h"
#include "engine/core/error.h"
#include "engine/train/trainer.h"

#include <QSignalSpy>
#include <QTest>
#include <QThread>

#include <gtest/gtest.h>

#include <sys/resource.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <iostream>
#include <stdexcept>
#include <thread>

namespace {

using engine::JobControl;
using engine::JobStatus;
using engine::train::StepMetrics;
using engine::train::TrainingObserver;
using engine::train::TrainingOutcome;
using engine::train::TrainingParams;

TrainingParams smallParams()
{
    TrainingParams params;
    params.steps = 10;
    params.threads = 1;
    return params;
}

bridge::JobOutcome waitForOutcome(QSignalSpy &finished, int timeoutMs = 20000)
{
    EXPECT_TRUE(QTest::qWaitFor([&] { return finished.count() > 0; }, timeoutMs));
    if (finished.isEmpty())
        return {};
    return finished.takeFirst().at(0).value<bridge::JobOutcome>();
}

/// Runs until cancelled, honouring pause; one "step" per millisecond.
TrainingOutcome runUntilCancelled(const TrainingParams &params, JobControl &control, TrainingObserver &observer)
{
    TrainingOutcome outcome;
    observer.onRunCreated(7, "/tmp/fake.sqlite3");
    for (int64_t step = 1;; ++step) {
        if (!control.waitWhilePaused() || control.cancelRequested()) {
            outcome.status = JobStatus::Cancelled;
            outcome.runId = 7;
            outcome.stepsCompleted = step - 1;
            return outcome;
        }
        StepMetrics m;
        m.step = step;
        m.totalSteps = params.steps;
        m.loss = 5.0 / static_cast<double>(step);
        observer.onStep(m);
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
}

/// What a fake job did, seen from the test thread.
struct JobProbe {
    std::atomic<int64_t> lastStep{0};  ///< the last step it emitted
    std::atomic<bool> returned{false}; ///< it returned (cancelled)
    std::atomic<JobControl *> control{nullptr}; ///< the control the job was given, once it runs
};

/// runUntilCancelled, reporting to `probe`.
auto probedRunUntilCancelled(JobProbe &probe)
{
    return [&probe](const TrainingParams &params, JobControl &control, TrainingObserver &observer) {
        TrainingOutcome outcome;
        probe.control = &control;
        for (int64_t step = 1;; ++step) {
            if (!control.waitWhilePaused() || control.cancelRequested()) {
                outcome.status = JobStatus::Cancelled;
                outcome.stepsCompleted = step - 1;
                probe.returned = true;
                return outcome;
            }
            StepMetrics m;
            m.step = step;
            m.totalSteps = params.steps;
            m.loss = 1.0;
            observer.onStep(m);
            probe.lastStep = step;
            std::this_thread::sleep_for(std::chrono::milliseconds(1));
        }
    };
}

/// The highest step among the metrics batches `metrics` received; 0 for none.
int64_t lastDeliveredStep(const QSignalSpy &metrics)
{
    int64_t last = 0;
    for (const QList<QVariant> &args : metrics)
        for (const StepMetrics &m : args.at(0).value<QList<StepMetrics>>())
            last = std::max(last, m.step);
    return last;
}

TEST(EngineBridge, RunsTheJobOnAnotherThreadAndSucceeds)
{
    std::atomic<QThread *> jobThread{nullptr};
    bridge::EngineBridge bridge(nullptr, [&](const TrainingParams &params, JobControl &, TrainingObserver &observer) {
        jobThread = QThread::currentThread();
        observer.onLog(engine::LogLevel::Info, "hello from the engine");
        TrainingOutcome outcome;
        for (int64_t step = 1; step <= params.steps; ++step) {
            StepMetrics m;
            m.step = step;
            m.totalSteps = params.steps;
            m.loss = 1.0;
            observer.onStep(m);
        }
        outcome.status = JobStatus::Succeeded;
        outcome.stepsCompleted = params.steps;
        return outcome;
    });
    QSignalSpy started(&bridge, &bridge::EngineBridge::jobStarted);
    QSignalSpy logs(&bridge, &bridge::EngineBridge::logLine);
    QSignalSpy metrics(&bridge, &bridge::EngineBridge::stepMetrics);
    QSignalSpy finished(&bridge, &bridge::EngineBridge::jobFinished);

    QString error;
    ASSERT_TRUE(bridge.startTraining(smallParams(), &error)) << error.toStdString();
    EXPECT_TRUE(bridge.isBusy());
    const bridge::JobOutcome outcome = waitForOutcome(finished);
    EXPECT_TRUE(outcome.succeeded());
    EXPECT_EQ(outcome.stepsCompleted, 10);
    EXPECT_FALSE(bridge.isBusy());
    EXPECT_EQ(started.count(), 1);
    ASSERT_EQ(logs.count(), 1);
    EXPECT_EQ(logs.at(0).at(1).toString(), QStringLiteral("hello from the engine"));
    EXPECT_NE(jobThread.load(), nullptr);
    EXPECT_NE(jobThread.load(), QThread::currentThread());

    // Every step arrived, in order, before jobFinished.
    int64_t next = 1;
    for (const QList<QVariant> &args : metrics)
        for (const StepMetrics &m : args.at(0).value<QList<StepMetrics>>())
            EXPECT_EQ(m.step, next++);
    EXPECT_EQ(next, 11);
}

// Training runs nicer than the window: the engine thread, and the threads a job starts from it (as
// libtorch's intra-op threads are), get less of a busy CPU than the UI thread, so redraws come first.
TEST(EngineBridge, JobsRunAtALowerCpuPriorityThanTheWindow)
{
    errno = 0;
    const int window = getpriority(PRIO_PROCESS, 0);
    ASSERT_FALSE(window == -1 && errno != 0);
    std::atomic<int> job{-100}, started{-100};
    bridge::EngineBridge bridge(nullptr, [&](const TrainingParams &params, JobControl &, TrainingObserver &) {
        job = getpriority(PRIO_PROCESS, 0);
        std::thread([&] { started = getpriority(PRIO_PROCESS, 0); }).join();
        TrainingOutcome outcome;
        outcome.status = JobStatus::Succeeded;
        outcome.stepsCompleted = params.steps;
        return outcome;
    });
    QSignalSpy finished(&bridge, &bridge::EngineBridge::jobFinished);
    QString error;
    ASSERT_TRUE(bridge.startTraining(smallParams(), &error)) << error.toStdString();
    EXPECT_TRUE(waitForOutcome(finished).succeeded());
    const int expected = std::min(window + bridge::EngineBridge::kEngineNiceness, 19);
    EXPECT_EQ(job.load(), expected);
    EXPECT_EQ(started.load(), expected) << "a thread the job starts inherits it";
    EXPECT_EQ(getpriority(PRIO_PROCESS, 0), window) << "the window's thread keeps its own";
}

TEST(EngineBridge, RefusesASecondJobAndCancels)
{
    bridge::EngineBridge bridge(nullptr, runUntilCancelled);
    QSignalSpy finished(&bridge, &bridge::EngineBridge::jobFinished);
    QSignalSpy runs(&bridge, &bridge::EngineBridge::runCreated);
    ASSERT_TRUE(bridge.startTraining(smallParams()));

    QString error;
    EXPECT_FALSE(bridge.startTraining(smallParams(), &error));
    EXPECT_TRUE(error.contains(QStringLiteral("already running"))) << error.toStdString();

    ASSERT_TRUE(QTest::qWaitFor([&] { return runs.count() == 1; }, 5000));
    EXPECT_EQ(runs.at(0).at(0).toLongLong(), 7);
    bridge.cancel();
    EXPECT_TRUE(bridge.isCancelling());
    const bridge::JobOutcome outcome = waitForOutcome(finished);
    EXPECT_TRUE(outcome.cancelled());
    EXPECT_FALSE(outcome.hasError);
    EXPECT_EQ(outcome.runId, 7);

    // Idle again: the next job is accepted.
    EXPECT_TRUE(bridge.startTraining(smallParams(), &error)) << error.toStdString();
    bridge.cancel();
    EXPECT_TRUE(waitForOutcome(finished).cancelled());
}

TEST(EngineBridge, PausesAndResumes)
{
    // Facts, not clocks (how fast a pause takes effect: bench/ui_latency_bench): a paused job finishes
    // at most the step it was in, is then held (JobControl::waitUntilHeld), and every step it emitted
    // reaches the UI.
    JobProbe probe;
    bridge::EngineBridge bridge(nullptr, probedRunUntilCancelled(probe));
    QSignalSpy paused(&bridge, &bridge::EngineBridge::pausedChanged);
    QSignalSpy metrics(&bridge, &bridge::EngineBridge::stepMetrics);
    QSignalSpy finished(&bridge, &bridge::EngineBridge::jobFinished);
    ASSERT_TRUE(bridge.startTraining(smallParams()));
    ASSERT_TRUE(QTest::qWaitFor([&] { return metrics.count() > 0; }, 20000));

    bridge.pause(true);
    const int64_t inFlight = probe.lastStep + 1; // the job may be inside this step
    EXPECT_TRUE(bridge.isPaused());
    ASSERT_EQ(paused.count(), 1);
    // Held: the job waits in the control the bridge paused, so no step can follow until the resume (a job
    // that never saw the pause would never be held).
    ASSERT_NE(probe.control.load(), nullptr);
    EXPECT_TRUE(probe.control.load()->waitUntilHeld(std::chrono::seconds(20))) << "the job was never held";
    ASSERT_TRUE(QTest::qWaitFor([&] { return lastDeliveredStep(metrics) == probe.lastStep; }, 20000));
    EXPECT_LE(probe.lastStep, inFlight) << "steps ran while paused";
    EXPECT_LE(lastDeliveredStep(metrics), inFlight) << "steps arrived while paused";

    bridge.pause(false);
    EXPECT_FALSE(bridge.isPaused());
    EXPECT_TRUE(QTest::qWaitFor([&] { return lastDeliveredStep(metrics) > inFlight; }, 20000)) << "no step after resuming";

    // Cancel wakes a paused job.
    bridge.pause(true);
    bridge.cancel();
    EXPECT_TRUE(waitForOutcome(finished).cancelled());
    EXPECT_FALSE(bridge.isPaused());
}

TEST(EngineBridge, TurnsExceptionsIntoTypedFailures)
{
    int calls = 0;
    bridge::EngineBridge bridge(nullptr, [&](const TrainingParams &, JobControl &, TrainingObserver &) -> TrainingOutcome {
        if (++calls == 1)
            throw engine::ioError("cannot read /nowhere/corpus.txt");
        throw std::runtime_error("boom");
    });
    QSignalSpy finished(&bridge, &bridge::EngineBridge::jobFinished);

    ASSERT_TRUE(bridge.startTraining(smallParams()));
    bridge::JobOutcome outcome = waitForOutcome(finished);
    EXPECT_TRUE(outcome.failed());
    EXPECT_TRUE(outcome.hasError);
    EXPECT_EQ(outcome.errorKind, engine::ErrorKind::Io);
    EXPECT_EQ(outcome.errorMessage, QStringLiteral("cannot read /nowhere/corpus.txt"));

    ASSERT_TRUE(bridge.startTraining(smallParams()));
    outcome = waitForOutcome(finished);
    EXPECT_TRUE(outcome.failed());
    EXPECT_EQ(outcome.errorKind, engine::ErrorKind::Internal);
    EXPECT_TRUE(outcome.errorMessage.contains(QStringLiteral("boom")));
}

TEST(EngineBridge, RefusesInvalidSettingsWithoutStartingAJob)
{
    std::atomic<int> calls{0};
    bridge::EngineBridge bridge(nullptr, [&](const TrainingParams &, JobControl &, TrainingObserver &) {
        ++calls;
        return TrainingOutcome{};
    });
    QSignalSpy started(&bridge, &bridge::EngineBridge::jobStarted);
    TrainingParams params = smallParams();
    params.steps = 0;
    QString error;
    EXPECT_FALSE(bridge.startTraining(params, &error));
    EXPECT_TRUE(error.contains(QStringLiteral("steps"))) << error.toStdString();
    EXPECT_FALSE(bridge.isBusy());
    EXPECT_EQ(started.count(), 0);
    EXPECT_EQ(calls.load(), 0);
    // Jobs run one at a time, in order, on the one engine thread: once a valid job has finished, a refused
    // one that had been queued anyway would have run before it. So: one start and one call, not two
    // (instead of waiting 100 ms for something that should not happen).
    QSignalSpy finished(&bridge, &bridge::EngineBridge::jobFinished);
    ASSERT_TRUE(bridge.startTraining(smallParams()));
    waitForOutcome(finished); // (the fake job's default outcome: Failed, which does not matter here)
    EXPECT_EQ(started.count(), 1);
    EXPECT_EQ(calls.load(), 1);
}

TEST(EngineBridge, CoalescesAFloodOfStepsIntoFewBatches)
{
    constexpr int64_t kSteps = 3000;
    bridge::EngineBridge bridge(nullptr, [&](const TrainingParams &, JobControl &, TrainingObserver &observer) {
        // About 3000 steps in ~0.3 s: far faster than any real trainer.
        for (int64_t step = 1; step <= kSteps; ++step) {
            StepMetrics m;
            m.step = step;
            m.totalSteps = kSteps;
            observer.onStep(m);
            if (step % 10 == 0)
                std::this_thread::sleep_for(std::chrono::milliseconds(1));
        }
        TrainingOutcome outcome;
        outcome.status = JobStatus::Succeeded;
        outcome.stepsCompleted = kSteps;
        return outcome;
    });
    QSignalSpy metrics(&bridge, &bridge::EngineBridge::stepMetrics);
    QSignalSpy finished(&bridge, &bridge::EngineBridge::jobFinished);
    ASSERT_TRUE(bridge.startTraining(smallParams()));
    EXPECT_TRUE(waitForOutcome(finished).succeeded());

    int64_t received = 0;
    int64_t next = 1;
    for (const QList<QVariant> &args : metrics) {
        for (const StepMetrics &m : args.at(0).value<QList<StepMetrics>>()) {
            EXPECT_EQ(m.step, next++);
            ++received;
        }
    }
    EXPECT_EQ(received + static_cast<int64_t>(bridge.metricsBuffer().dropped()), kSteps);
    EXPECT_EQ(received, kSteps) << "nothing should be dropped below the buffer's capacity";
    EXPECT_LT(metrics.count(), kSteps / 20) << "the UI was woken " << metrics.count() << " times for " << kSteps << " steps";
    std::cout << "[          ] " << kSteps << " steps arrived in " << metrics.count() << " batches\n";
}

TEST(EngineBridge, DestructorStopsARunningJob)
{
    // The job never ends by itself and is paused: the destructor returns only once it has woken and
    // cancelled the job and the job has returned (how long that takes: bench/ui_latency_bench).
    JobProbe probe;
    {
        bridge::EngineBridge bridge(nullptr, probedRunUntilCancelled(probe));
        QSignalSpy metrics(&bridge, &bridge::EngineBridge::stepMetrics);
        ASSERT_TRUE(bridge.startTraining(smallParams()));
        ASSERT_TRUE(QTest::qWaitFor([&] { return metrics.count() > 0; }, 20000));
        bridge.pause(true);
    }
    EXPECT_TRUE(probe.returned) << "the bridge was destroyed with its job still running";
}

TEST(EngineBridge, LoadsTheEngineModuleInTheBackgroundAndTellsItsFacts)
{
    bridge::EngineBridge bridge;
    QSignalSpy loaded(&bridge, &bridge::EngineBridge::engineLoaded);
    EXPECT_FALSE(bridge.engineReady());
    bridge.loadEngine();
    ASSERT_TRUE(loaded.wait(60000)) << "the engine module did not load within a minute";
    ASSERT_EQ(loaded.count(), 1);
    EXPECT_TRUE(loaded.front().front().toBool()) << bridge.engineError().toStdString();
    EXPECT_TRUE(bridge.engineReady());
    EXPECT_TRUE(bridge.engineError().isEmpty());
    // The facts come from the module's libtorch: its version line and thread count, as `tunebench doctor` prints.
    EXPECT_NE(bridge.engineFacts().system.find("libtorch"), std::string::npos) << bridge.engineFacts().system;
    EXPECT_NE(bridge.engineFacts().system.find("threads"), std::string::npos) << bridge.engineFacts().system;
}

TEST(EngineBridge, AFileThatIsNotTheEngineModuleIsOneClearError)
{
    try {
        bridge::loadEngineModule("/nonexistent/libtunebench_engine.so");
        ADD_FAILURE() << "a missing file loaded";
    } catch (const engine::Error &e) {
        EXPECT_EQ(e.kind(), engine::ErrorKind::Internal);
        EXPECT_NE(std::string(e.what()).find("cannot load the engine (/nonexistent/libtunebench_engine.so)"), std::string::npos)
            << e.what();
    }
    try {
        bridge::loadEngineModule("libm.so.6"); // a shared object, but not ours
        ADD_FAILURE() << "libm passed for the engine module";
    } catch (const engine::Error &e) {
        EXPECT_NE(std::string(e.what()).find("libm.so.6 is not tunebench's engine module"), std::string::npos) << e.what();
    }
}

} // namespace
