#include "bridge/enginebridge.h"

#include "engine/core/error.h"

#include <sys/resource.h>

#include <algorithm>
#include <cerrno>
#include <functional>
#include <utility>

namespace bridge {
namespace {

/// Makes the calling thread `by` nicer than it is (Linux keeps a nice value per thread; threads it
/// starts inherit it). Best effort: a refusal leaves the priority as it was.
void makeThisThreadNicer(int by)
{
    errno = 0;
    const int now = getpriority(PRIO_PROCESS, 0);
    if (now == -1 && errno != 0)
        return;
    setpriority(PRIO_PROCESS, 0, std::min(now + by, 19));
}

} // namespace

EngineBridge::EngineBridge(QObject *parent, TrainingFunction train, GenerateFunction generate) : QObject(parent)
{
    registerMetaTypes();

    m_drainTimer.setSingleShot(true);
    m_drainTimer.setInterval(40);
    connect(&m_drainTimer, &QTimer::timeout, this, &EngineBridge::drainMetrics);

    m_worker = new EngineWorker(m_control, m_metrics, std::move(train), std::move(generate));
    m_worker->moveToThread(&m_thread);
    connect(&m_thread, &QThread::finished, m_worker, &QObject::deleteLater);
    // The worker emits on the engine thread; these connections are queued onto the UI thread.
    connect(m_worker, &EngineWorker::engineLoaded, this, [this](bool ok, const EngineFacts &facts, const QString &error) {
        m_engineReady = ok;
        m_engineFacts = facts;
        m_engineError = error;
        Q_EMIT engineLoaded(ok);
    });
    connect(m_worker, &EngineWorker::jobStarted, this, &EngineBridge::jobStarted);
    connect(m_worker, &EngineWorker::resumeSettings, this, &EngineBridge::resumeSettings);
    connect(m_worker, &EngineWorker::runCreated, this, &EngineBridge::runCreated);
    connect(m_worker, &EngineWorker::logLine, this, &EngineBridge::logLine);
    connect(m_worker, &EngineWorker::metricsAvailable, this, &EngineBridge::onMetricsAvailable);
    connect(m_worker, &EngineWorker::jobFinished, this, &EngineBridge::onWorkerFinished);
    connect(m_worker, &EngineWorker::inspectionFinished, this, &EngineBridge::onInspectionFinished);
    connect(m_worker, &EngineWorker::previewFinished, this, &EngineBridge::onPreviewFinished);
    connect(m_worker, &EngineWorker::generatedText, this, &EngineBridge::generatedText);
    connect(m_worker, &EngineWorker::generationFinished, this, &EngineBridge::onGenerationFinished);
    m_thread.setObjectName(QStringLiteral("tunebench engine"));
    // First thing on the engine thread, before it loads libtorch or starts a job.
    connect(&m_thread, &QThread::started, m_worker, [] { makeThisThreadNicer(kEngineNiceness); }, Qt::DirectConnection);
    m_thread.start();
}

EngineBridge::~EngineBridge()
{
    m_control.requestCancel();
    m_thread.quit();
    m_thread.wait();
}

void EngineBridge::loadEngine()
{
    QMetaObject::invokeMethod(m_worker, &EngineWorker::loadEngine, Qt::QueuedConnection);
}

QString EngineBridge::validationError(const engine::train::TrainingParams &params)
{
    try {
        params.validate();
        return {};
    } catch (const engine::Error &e) {
        return QString::fromStdString(e.what());
    } catch (const std::exception &e) {
        return QString::fromStdString(e.what());
    }
}

bool EngineBridge::queueJob(std::function<void()> job, const QString &busyMessage, QString *error)
{
    auto refuse = [error](const QString &message) {
        if (error)
            *error = message;
        return false;
    };
    if (m_busy)
        return refuse(busyMessage);
    m_control.reset();
    m_busy = true;
    if (!QMetaObject::invokeMethod(m_worker, std::move(job), Qt::QueuedConnection)) {
        m_busy = false;
        return refuse(tr("Internal error: the engine thread did not accept the job."));
    }
    Q_EMIT busyChanged(true);
    return true;
}

bool EngineBridge::startTraining(const engine::train::TrainingParams &params, QString *error)
{
    if (!m_busy) {
        if (const QString problem = validationError(params); !problem.isEmpty()) {
            if (error)
                *error = problem;
            return false;
        }
        m_metrics.clear();
    }
    return queueJob([worker = m_worker, params] { worker->runTraining(params); },
                    tr("A job is already running; stop it or wait for it to finish before starting another."), error);
}

bool EngineBridge::startResume(const ResumeRequest &request, QString *error)
{
    if (!m_busy)
        m_metrics.clear();
    return queueJob([worker = m_worker, request] { worker->runResume(request); },
                    tr("A job is already running; stop it or wait for it to finish before starting another."), error);
}

bool EngineBridge::startInspection(const InspectRequest &request, QString *error)
{
    return queueJob([worker = m_worker, request] { worker->runInspection(request); },
                    tr("A job is already running; stop it or wait for it to finish before inspecting."), error);
}

bool EngineBridge::startPreview(const engine::train::TrainingParams &params, QString *error)
{
    if (!m_busy) {
        if (const QString problem = validationError(params); !problem.isEmpty()) {
            if (error)
                *error = problem;
            return false;
        }
    }
    return queueJob([worker = m_worker, params] { worker->runPreview(params); },
                    tr("A job is running; the preview can run once it has finished."), error);
}

bool EngineBridge::startGeneration(const engine::infer::GenerateRequest &request, QString *error)
{
    if (!m_busy) {
        QString problem;
        if (request.modelPath.empty())
            problem = tr("Generate: there is no model to generate with; train a run that saves its model first.");
        else if (request.prompt.empty())
            problem = tr("Generate: type a prompt first.");
        else if (request.maxNewTokens < 1 || request.maxNewTokens > 4096)
            problem = tr("Generate: new tokens = %1 is out of range: it must be between 1 and 4096.").arg(request.maxNewTokens);
        if (!problem.isEmpty()) {
            if (error)
                *error = problem;
            return false;
        }
    }
    return queueJob([worker = m_worker, request] { worker->runGeneration(request); },
                    tr("A job is running; generate once it has finished."), error);
}

void EngineBridge::onGenerationFinished(bool ok, const QString &textOrError, const QString &stopReason)
{
    m_control.reset();
    m_busy = false;
    Q_EMIT busyChanged(false);
    Q_EMIT generationFinished(ok, textOrError, stopReason);
}

void EngineBridge::onPreviewFinished(bool ok, const QString &text)
{
    m_busy = false;
    Q_EMIT busyChanged(false);
    Q_EMIT previewFinished(ok, text);
}

void EngineBridge::onInspectionFinished(const InspectionResult &report)
{
    m_busy = false;
    Q_EMIT busyChanged(false);
    Q_EMIT inspectionFinished(report);
}

void EngineBridge::pause(bool paused)
{
    if (!m_busy || m_control.paused() == paused)
        return;
    m_control.setPaused(paused);
    Q_EMIT pausedChanged(paused);
}

void EngineBridge::cancel()
{
    if (m_busy)
        m_control.requestCancel();
}

void EngineBridge::onMetricsAvailable()
{
    // PlotJuggler's pattern: the first new item starts one single-shot timer; everything that
    // arrives before it fires is delivered in the same batch.
    if (!m_drainTimer.isActive())
        m_drainTimer.start();
}

void EngineBridge::drainMetrics()
{
    const std::vector<engine::train::StepMetrics> items = m_metrics.takeAll();
    if (items.empty())
        return;
    Q_EMIT stepMetrics(QList<engine::train::StepMetrics>(items.begin(), items.end()));
}

void EngineBridge::onWorkerFinished(const JobOutcome &outcome)
{
    m_drainTimer.stop();
    drainMetrics();
    const bool wasPaused = m_control.paused();
    m_control.reset();
    m_busy = false;
    if (wasPaused)
        Q_EMIT pausedChanged(false);
    Q_EMIT busyChanged(false);
    Q_EMIT jobFinished(outcome);
}

} // namespace bridge
