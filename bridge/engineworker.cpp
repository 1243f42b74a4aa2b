#include "bridge/engineworker.h"

#include "engine/store/runfolder.h"
#include "engine/train/settingschema.h"

#include <utility>

namespace bridge {
namespace {

/// Forwards the trainer's callbacks: rare events as signals, step metrics into the buffer.
class ForwardingObserver : public engine::train::TrainingObserver {
public:
    ForwardingObserver(EngineWorker &worker, MetricsBuffer &metrics) : m_worker(worker), m_metrics(metrics) {}

    void onRunCreated(int64_t runId, const std::string &storePath) override
    {
        Q_EMIT m_worker.runCreated(runId, QString::fromStdString(storePath));
    }

    void onLog(engine::LogLevel level, const std::string &text) override
    {
        Q_EMIT m_worker.logLine(level, QString::fromStdString(text));
    }

    void onStep(const engine::train::StepMetrics &metrics) override
    {
        if (m_metrics.push(metrics))
            Q_EMIT m_worker.metricsAvailable();
    }

    /// The eval loss before training goes the same way: a step-0 entry the Train page plots.
    void onInitialEvaluation(const engine::train::StepMetrics &metrics) override { onStep(metrics); }

private:
    EngineWorker &m_worker;
    MetricsBuffer &m_metrics;
};

} // namespace

EngineWorker::EngineWorker(engine::JobControl &control, MetricsBuffer &metrics, TrainingFunction train,
                           GenerateFunction generate)
    : m_control(control), m_metrics(metrics), m_train(std::move(train)), m_generate(std::move(generate))
{
    if (!m_train) {
        m_train = [this](const engine::train::TrainingParams &params, engine::JobControl &control,
                         engine::train::TrainingObserver &observer) { return jobs().train(params, control, observer); };
    }
    if (!m_generate) {
        m_generate = [this](const engine::infer::GenerateRequest &request,
                            const std::function<void(const std::string &)> &onText, const engine::JobControl *control) {
            return jobs().generate(request, onText, control);
        };
    }
}

EngineJobs &EngineWorker::jobs()
{
    try {
        EngineJobs &loaded = engineJobs();
        if (!m_announcedEngine) {
            m_announcedEngine = true;
            Q_EMIT engineLoaded(true, loaded.facts(), QString());
        }
        return loaded;
    } catch (...) {
        Q_EMIT engineLoaded(false, EngineFacts{}, QString::fromStdString(engine::currentExceptionInfo().message));
        throw;
    }
}

void EngineWorker::loadEngine()
{
    try {
        jobs();
    } catch (...) {
        // jobs() told the bridge; a job that needs the engine reports the same error again.
    }
}

void EngineWorker::runTraining(const engine::train::TrainingParams &params)
{
    // The job boundary: whatever happens inside ends here as one of the three outcomes.
    JobOutcome outcome;
    try {
        Q_EMIT jobStarted();
        ForwardingObserver observer(*this, m_metrics);
        outcome = JobOutcome::fromTraining(m_train(params, m_control, observer));
    } catch (...) {
        outcome = JobOutcome::failure(engine::currentExceptionInfo());
    }
    Q_EMIT jobFinished(outcome);
}

void EngineWorker::runResume(const ResumeRequest &request)
{
    engine::train::TrainingParams params;
    try {
        const engine::store::ResumeState state = engine::store::readResumeState(request.run.toStdString(),
                                                                                  request.storePath.toStdString());
        engine::train::readSettingsJson(state.training, engine::train::SettingScope::All, params);
        params.storePath = state.storePath.empty() ? request.storePath.toStdString() : state.storePath;
        if (request.steps > 0)
            params.steps = request.steps;
        params.resumeFrom = state.checkpoint.string();
        engine::train::validateSettings(params);
    } catch (...) {
        Q_EMIT jobStarted();
        Q_EMIT jobFinished(JobOutcome::failure(engine::currentExceptionInfo()));
        return;
    }
    Q_EMIT resumeSettings(params);
    runTraining(params);
}

void EngineWorker::runPreview(const engine::train::TrainingParams &params)
{
    Q_EMIT jobStarted();
    try {
        engine::train::TrainingObserver silent;
        const engine::train::DatasetPreview preview = jobs().preview(params, m_control, silent, 3);
        Q_EMIT previewFinished(true, QString::fromStdString(engine::train::describePreview(preview, params)));
    } catch (...) {
        Q_EMIT previewFinished(false, QString::fromStdString(engine::currentExceptionInfo().message));
    }
}

void EngineWorker::runGeneration(const engine::infer::GenerateRequest &request)
{
    Q_EMIT jobStarted();
    try {
        const auto onText = [this](const std::string &piece) { Q_EMIT generatedText(QString::fromStdString(piece)); };
        const engine::infer::GenerateResult result = m_generate(request, onText, &m_control);
        Q_EMIT generationFinished(true, QString::fromStdString(result.text), QString::fromStdString(result.stopReason));
    } catch (...) {
        Q_EMIT generationFinished(false, QString::fromStdString(engine::currentExceptionInfo().message), QString());
    }
}

void EngineWorker::runInspection(const InspectRequest &request)
{
    Q_EMIT jobStarted();
    Q_EMIT inspectionFinished(runInspectRequest(request, [this]() -> EngineJobs & { return jobs(); }));
}

} // namespace bridge
