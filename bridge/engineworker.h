#pragma once
// The object that lives on the engine thread and runs jobs there. Owned by EngineBridge.

#include "bridge/enginejobs.h"
#include "bridge/inspectrequest.h"
#include "bridge/joboutcome.h"
#include "bridge/metricsbuffer.h"
#include "engine/core/jobcontrol.h"
#include "engine/core/loglevel.h"

#include <QObject>
#include <QString>

#include <functional>

namespace bridge {

/// The function that runs a training job; the engine module's (engineJobs().train) unless a test injects another.
using TrainingFunction = std::function<engine::train::TrainingOutcome(
    const engine::train::TrainingParams &, engine::JobControl &, engine::train::TrainingObserver &)>;

/// The function that generates text; the engine module's unless a test injects another. onText
/// receives the new text as it grows; control is checked between tokens.
using GenerateFunction = std::function<engine::infer::GenerateResult(
    const engine::infer::GenerateRequest &, const std::function<void(const std::string &)> &onText,
    const engine::JobControl *control)>;

/// Which stored run to continue, and what a resume may change.
struct ResumeRequest {
    QString run;         ///< a run id or its folder
    QString storePath;   ///< the database the run is recorded in
    qint64 steps = 0;    ///< the run's new total of steps (Continue Training…); 0 = as stored
};

/// Runs one job at a time on the thread it was moved to. Signals are emitted on that thread (the
/// bridge receives them queued); step metrics go into the shared buffer instead of a signal.
/// Nothing thrown by a job leaves runTraining().
class EngineWorker : public QObject {
    Q_OBJECT

public:
    /// control and metrics are owned by the bridge and outlive this worker.
    EngineWorker(engine::JobControl &control, MetricsBuffer &metrics, TrainingFunction train,
                 GenerateFunction generate = {});

public Q_SLOTS:
    /// Loads the engine module (and libtorch) now, so that the first job does not wait for it.
    void loadEngine();
    void runTraining(const engine::train::TrainingParams &params);
    void runResume(const bridge::ResumeRequest &request);
    void runInspection(const bridge::InspectRequest &request);
    void runPreview(const engine::train::TrainingParams &params);
    void runGeneration(const engine::infer::GenerateRequest &request);

Q_SIGNALS:
    /// loadEngine ended: ok with the engine's facts, or not ok with the reason in error.
    void engineLoaded(bool ok, const bridge::EngineFacts &facts, const QString &error);
    void jobStarted();
    void resumeSettings(const engine::train::TrainingParams &params);
    void runCreated(qint64 runId, const QString &storePath);
    void logLine(engine::LogLevel level, const QString &text);
    /// The metrics buffer went from drained to non-empty (at most once per drain).
    void metricsAvailable();
    void jobFinished(const bridge::JobOutcome &outcome);
    void inspectionFinished(const bridge::InspectionResult &report);
    void previewFinished(bool ok, const QString &text);
    /// A piece of generated text (in order; the pieces joined are the whole text).
    void generatedText(const QString &piece);
    /// ok: the whole new text and why it stopped ("max_tokens", "eos", ...); not ok: the error.
    void generationFinished(bool ok, const QString &textOrError, const QString &stopReason);

private:
    /// The engine's jobs (engineJobs()); the first time they are there, engineLoaded tells the bridge,
    /// whichever job loaded them.
    EngineJobs &jobs();

    engine::JobControl &m_control;
    MetricsBuffer &m_metrics;
    TrainingFunction m_train;
    GenerateFunction m_generate;
    bool m_announcedEngine = false;
};

} // namespace bridge

Q_DECLARE_METATYPE(bridge::EngineFacts)
Q_DECLARE_METATYPE(bridge::ResumeRequest)
