#include "bridge/joboutcome.h"

#include "bridge/engineworker.h"
#include "bridge/inspectrequest.h"

#include "engine/train/trainer.h"

namespace bridge {

JobOutcome JobOutcome::fromTraining(const engine::train::TrainingOutcome &outcome)
{
    JobOutcome result;
    result.status = outcome.status;
    if (outcome.error) {
        result.hasError = true;
        result.errorKind = outcome.error->kind;
        result.errorMessage = QString::fromStdString(outcome.error->message);
        result.errorField = QString::fromStdString(outcome.error->field);
    } else if (outcome.status == engine::JobStatus::Failed) {
        result.hasError = true;
        result.errorMessage = QStringLiteral("the job failed without saying why");
    }
    result.runId = outcome.runId;
    result.storePath = QString::fromStdString(outcome.storePath);
    result.stepsCompleted = outcome.stepsCompleted;
    result.firstLoss = outcome.firstLoss;
    result.lastLoss = outcome.lastLoss;
    result.lossPlotPath = QString::fromStdString(outcome.lossPlotPath);
    result.nonFiniteStepPath = QString::fromStdString(outcome.nonFiniteStepPath);
    result.modelPath = QString::fromStdString(outcome.modelPath);
    result.adapterPath = QString::fromStdString(outcome.adapterPath);
    result.outputDir = QString::fromStdString(outcome.outputDir);
    return result;
}

JobOutcome JobOutcome::failure(const engine::ErrorInfo &error)
{
    JobOutcome result;
    result.status = engine::JobStatus::Failed;
    result.hasError = true;
    result.errorKind = error.kind;
    result.errorMessage = QString::fromStdString(error.message);
    result.errorField = QString::fromStdString(error.field);
    return result;
}

QString JobOutcome::summary() const
{
    const QString status = QString::fromLatin1(engine::jobStatusName(this->status));
    if (failed()) {
        const auto kind = engine::errorKindName(errorKind);
        return QStringLiteral("%1 (%2): %3")
            .arg(status, QString::fromUtf8(kind.data(), static_cast<qsizetype>(kind.size())), errorMessage);
    }
    return QStringLiteral("%1 after %2 steps").arg(status).arg(stepsCompleted);
}

void registerMetaTypes()
{
    qRegisterMetaType<bridge::JobOutcome>();
    qRegisterMetaType<engine::train::TrainingParams>();
    qRegisterMetaType<engine::train::StepMetrics>();
    qRegisterMetaType<engine::LogLevel>();
    qRegisterMetaType<bridge::InspectRequest>();
    qRegisterMetaType<bridge::ResumeRequest>();
    qRegisterMetaType<bridge::InspectionResult>();
    qRegisterMetaType<bridge::EngineFacts>();
}

} // namespace bridge
