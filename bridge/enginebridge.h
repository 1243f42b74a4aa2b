#pragma once
// The UI's only door to the engine. Lives on the UI thread and owns the engine thread.
//
// How to use (UI thread):
//   bridge::EngineBridge bridge;
//   connect(&bridge, &bridge::EngineBridge::stepMetrics, plot, ...);    // batches, about 25 per second
//   connect(&bridge, &bridge::EngineBridge::jobFinished, page, ...);     // Succeeded, Failed or Cancelled
//   QString error;
//   if (!bridge.startTraining(params, &error)) show(error);           // busy or invalid settings
//   bridge.pause(true); bridge.cancel();                               // take effect at the next step
//
// Threads: every signal of this class is emitted on the UI thread. Rare events (job started, run
// created, log lines, job finished) arrive as queued signals from the engine thread; step metrics
// go through a bounded MetricsBuffer that a 40 ms single-shot timer drains, so a fast training loop
// cannot flood the event loop.

#include "bridge/engineworker.h"
#include "bridge/inspectrequest.h"
#include "bridge/joboutcome.h"
#include "bridge/metricsbuffer.h"
#include "engine/core/jobcontrol.h"
#include "engine/core/loglevel.h"
#include "engine/train/stepmetrics.h"
#include "engine/train/trainingparams.h"

#include <QList>
#include <QObject>
#include <QString>
#include <QThread>
#include <QTimer>

#include <functional>

namespace bridge {

class EngineBridge : public QObject {
    Q_OBJECT

public:
    /// train: the function that runs training jobs; empty means engine::train::runTraining.
    /// generate: the function that generates text; empty means engine::infer::generate.
    explicit EngineBridge(QObject *parent = nullptr, TrainingFunction train = {}, GenerateFunction generate = {});
    /// How much nicer (lower CPU priority) than the UI thread the engine thread runs: a run's threads
    /// (libtorch's intra-op threads are started from it and inherit it) give way when the window needs a
    /// core to redraw, and take every core while it does not.
    static constexpr int kEngineNiceness = 5;
    /// Cancels a running job and waits for the engine thread to end.
    ~EngineBridge() override;

    /// Queues a training job on the engine thread. Refused (false, with one clear message in
    /// *error) while another job runs or when the settings are invalid; no job starts then.
    bool startTraining(const engine::train::TrainingParams &params, QString *error = nullptr);
    /// Queues the continuation of a stored run (`tunebench train --resume`): on the engine thread, its
    /// newest checkpoint's settings are read, `request`'s changes applied, resumeSettings is emitted with
    /// them, and the run trains on as a training job (jobFinished). Refused while another job runs.
    bool startResume(const ResumeRequest &request, QString *error = nullptr);
    /// Queues an inspection (one recorded step, torch work) on the engine thread; its report arrives
    /// in inspectionFinished. Refused (false, with a message) while another job runs.
    bool startInspection(const InspectRequest &request, QString *error = nullptr);
    /// Queues a dataset preview (the data read and tokenized as training would, nothing trained) on the
    /// engine thread; it arrives in previewFinished. Refused (false, with a message) while a job runs.
    bool startPreview(const engine::train::TrainingParams &params, QString *error = nullptr);
    /// Queues text generation with a saved model (a full fine-tune's model folder, or a base model with a
    /// LoRA adapter) on the engine thread; the text arrives piece by piece in generatedText and whole in
    /// generationFinished. Refused (false, with a message) while a job runs, without a model or prompt,
    /// or with a token count outside 1..4096. cancel() stops it after the current token.
    bool startGeneration(const engine::infer::GenerateRequest &request, QString *error = nullptr);
    /// Loads the engine module (libtorch) on the engine thread now, in the background; engineLoaded
    /// tells when it is done. Without this call the first job loads it. Jobs queued meanwhile wait.
    void loadEngine();
    /// Whether the engine is loaded (engineLoaded came with ok) and its facts (valid when loaded).
    bool engineReady() const { return m_engineReady; }
    const EngineFacts &engineFacts() const { return m_engineFacts; }
    /// Why loading failed; empty when it did not (yet).
    const QString &engineError() const { return m_engineError; }

    /// Pauses or resumes the running job at its next step boundary. No effect when idle.
    void pause(bool paused);
    /// Asks the running job to stop at its next step boundary; it then ends Cancelled.
    void cancel();

    bool isBusy() const { return m_busy; }
    bool isPaused() const { return m_busy && m_control.paused(); }
    bool isCancelling() const { return m_busy && m_control.cancelRequested(); }

    /// The settings' problem in one sentence, or an empty string when they are valid. Torch-free.
    static QString validationError(const engine::train::TrainingParams &params);

    /// Milliseconds between the first new step metric and the drain that delivers it (default 40).
    void setDrainInterval(int milliseconds) { m_drainTimer.setInterval(milliseconds); }
    int drainInterval() const { return m_drainTimer.interval(); }
    /// The buffer between the engine thread and the UI thread (for diagnostics and tests).
    MetricsBuffer &metricsBuffer() { return m_metrics; }

Q_SIGNALS:
    /// A resume's settings, read from the run's checkpoint, before it trains (startResume).
    void resumeSettings(const engine::train::TrainingParams &params);
    /// loadEngine (or the first job) finished loading the engine: ok, or not ok with engineError().
    void engineLoaded(bool ok);
    void busyChanged(bool busy);
    void pausedChanged(bool paused);
    void jobStarted();
    void runCreated(qint64 runId, const QString &storePath);
    void logLine(engine::LogLevel level, const QString &text);
    /// Step metrics in step order, delivered in batches (at most one batch per drain interval).
    void stepMetrics(const QList<engine::train::StepMetrics> &batch);
    /// After the last stepMetrics batch of the job.
    void jobFinished(const bridge::JobOutcome &outcome);
    /// An inspection ended (its report says how; status Error when it could not run).
    void inspectionFinished(const bridge::InspectionResult &report);
    /// A preview ended: ok with the preview's text (describePreview), or not ok with the error.
    void previewFinished(bool ok, const QString &text);
    /// A piece of the text being generated, in order.
    void generatedText(const QString &piece);
    /// Generation ended: ok with the whole new text and the stop reason, or not ok with the error.
    void generationFinished(bool ok, const QString &textOrError, const QString &stopReason);

private:
    void onMetricsAvailable();
    void drainMetrics();
    void onWorkerFinished(const bridge::JobOutcome &outcome);
    void onInspectionFinished(const bridge::InspectionResult &report);
    void onPreviewFinished(bool ok, const QString &text);
    void onGenerationFinished(bool ok, const QString &textOrError, const QString &stopReason);
    /// Runs `job` on the engine thread (it calls one of the worker's jobs); refused with `busyMessage`
    /// while a job runs.
    bool queueJob(std::function<void()> job, const QString &busyMessage, QString *error);

    engine::JobControl m_control;
    MetricsBuffer m_metrics;
    QThread m_thread;
    EngineWorker *m_worker = nullptr; ///< lives on m_thread; deleted when the thread finishes
    QTimer m_drainTimer;
    bool m_busy = false;
    bool m_engineReady = false;
    EngineFacts m_engineFacts;
    QString m_engineError;
};

} // namespace bridge
