#pragma once
// How a job ended, as a Qt value type that travels through queued signals.

#include "engine/core/error.h"
#include "engine/core/jobcontrol.h"
#include "engine/core/loglevel.h"
#include "engine/train/stepmetrics.h"
#include "engine/train/trainingparams.h"

#include <QMetaType>
#include <QString>

namespace engine::train {
struct TrainingOutcome;
}

namespace bridge {

/// The three outcomes of a job, plus the typed error of a failure.
struct JobOutcome {
    engine::JobStatus status = engine::JobStatus::Failed;
    bool hasError = false;                                   ///< true when status is Failed
    engine::ErrorKind errorKind = engine::ErrorKind::Internal;
    QString errorMessage;
    QString errorField; ///< the training setting the error is about (engine::Error::field()), or empty
    qint64 runId = 0;                                        ///< 0 when no run was created
    QString storePath;
    qint64 stepsCompleted = 0;
    double firstLoss = 0;
    double lastLoss = 0;
    QString lossPlotPath;
    QString nonFiniteStepPath; ///< a non-finite loss stopped the run: that step, kept for the inspector
    QString modelPath;         ///< the saved model folder (full fine-tuning); empty when none was saved
    QString adapterPath;       ///< the saved PEFT adapter folder (LoRA); empty when none was saved
    QString outputDir;         ///< the run's folder

    static JobOutcome fromTraining(const engine::train::TrainingOutcome &outcome);
    static JobOutcome failure(const engine::ErrorInfo &error);

    bool succeeded() const { return status == engine::JobStatus::Succeeded; }
    bool failed() const { return status == engine::JobStatus::Failed; }
    bool cancelled() const { return status == engine::JobStatus::Cancelled; }
    /// One line for a log or status bar, e.g. "failed (invalid input): steps must be ≥ 1".
    QString summary() const;
};

/// Registers the bridge's value types with Qt's meta-type system (idempotent).
void registerMetaTypes();

} // namespace bridge

Q_DECLARE_METATYPE(bridge::JobOutcome)
Q_DECLARE_METATYPE(engine::train::TrainingParams)
Q_DECLARE_METATYPE(engine::train::StepMetrics)
Q_DECLARE_METATYPE(engine::LogLevel)
