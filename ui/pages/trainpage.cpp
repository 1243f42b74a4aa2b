#include "ui/pages/trainpage.h"

#include "bridge/enginebridge.h"
#include "bridge/runconfig.h"
#include "bridge/traincommandline.h"
#include "engine/core/error.h"
#include "engine/core/format.h"
#include "engine/core/paths.h"
#include "engine/core/settings.h"
#include "engine/core/threads.h"
#include "engine/infer/inference.h"
#include "ui/pages/trainsettingsform.h"
#include "ui/widgets/metricplots.h"

#include <QClipboard>
#include <QDateTime>
#include <QDir>
#include <QDragEnterEvent>
#include <QDropEvent>
#include <QFileInfo>
#include <QFontDatabase>
#include <QGridLayout>
#include <QGroupBox>
#include <QGuiApplication>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QLocale>
#include <QMimeData>
#include <QPlainTextEdit>
#include <QProgressBar>
#include <QPushButton>
#include <QSettings>
#include <QSpinBox>
#include <QSplitter>
#include <QTextCursor>
#include <QTime>
#include <QUrl>
#include <QVBoxLayout>

#include <algorithm>
#include <cmath>
#include <exception>
#include <map>

namespace ui {
namespace {

constexpr int kLogBlockLimit = 5000;
const QString kFormKey = QStringLiteral("TrainPage/form");

QString formatDuration(double seconds) { return QString::fromStdString(engine::formatDuration(seconds)); }

QString formatNumber(double value, int precision = 4)
{
    return std::isfinite(value) ? QLocale().toString(value, 'g', precision) : QStringLiteral("%1").arg(value);
}

int defaultThreads()
{
    try {
        return engine::loadSettings().effectiveThreads();
    } catch (const std::exception &) {
        return engine::hardwareThreads();
    }
}

QLabel *valueLabel(const QString &objectName, QWidget *parent)
{
    auto *label = new QLabel(QStringLiteral("–"), parent);
    label->setObjectName(objectName);
    label->setTextInteractionFlags(Qt::TextSelectableByMouse);
    // A long value (the eval loss with its perplexity) must not widen the page: it is cut, not the window.
    label->setSizePolicy(QSizePolicy::Ignored, QSizePolicy::Preferred);
    label->setMinimumWidth(label->fontMetrics().horizontalAdvance(QStringLiteral("0,000 tokens/s")));
    return label;
}

} // namespace

TrainPage::TrainPage(bridge::EngineBridge &bridge, const QString &storePath, QWidget *parent)
    : QWidget(parent), m_bridge(bridge), m_storePath(storePath)
{
    setAcceptDrops(true);

    auto *left = new QWidget(this);
    auto *leftLayout = new QVBoxLayout(left);
    leftLayout->setContentsMargins(0, 0, 0, 0);
    m_form = new TrainSettingsForm(left);
    m_form->setObjectName(QStringLiteral("trainSettingsForm"));
    leftLayout->addWidget(m_form);

    m_startButton = new QPushButton(tr("&Start"), this);
    m_startButton->setObjectName(QStringLiteral("startButton"));
    m_startButton->setToolTip(tr("Start training with these settings (Ctrl+Return)"));
    m_startButton->setDefault(true);
    m_pauseButton = new QPushButton(tr("&Pause"), this);
    m_pauseButton->setObjectName(QStringLiteral("pauseButton"));
    m_pauseButton->setToolTip(tr("Pause after the current step, or resume"));
    m_stopButton = new QPushButton(tr("S&top"), this);
    m_stopButton->setObjectName(QStringLiteral("stopButton"));
    m_stopButton->setToolTip(tr("Stop after the current step; the run is kept as cancelled (Esc)"));
    connect(m_startButton, &QPushButton::clicked, this, [this] { start(); });
    connect(m_pauseButton, &QPushButton::clicked, this, &TrainPage::togglePause);
    connect(m_stopButton, &QPushButton::clicked, this, &TrainPage::stop);
    m_previewButton = new QPushButton(tr("Pre&view Data"), this);
    m_previewButton->setObjectName(QStringLiteral("previewButton"));
    m_previewButton->setToolTip(tr("Read and tokenize the data as this run would and show the counts and first rows "
                                   "in the log (nothing is trained)"));
    connect(m_previewButton, &QPushButton::clicked, this, [this] { previewData(); });
    m_copyCliButton = new QPushButton(tr("&Copy as CLI Command"), this);
    m_copyCliButton->setObjectName(QStringLiteral("copyCliButton"));
    m_copyCliButton->setToolTip(tr("Put the `tunebench train` command with these settings on the clipboard, to run "
                                   "headless (Ctrl+Shift+C)"));
    connect(m_copyCliButton, &QPushButton::clicked, this, &TrainPage::copyCommandLine);
    auto *buttons = new QGridLayout;
    buttons->addWidget(m_startButton, 0, 0);
    buttons->addWidget(m_pauseButton, 0, 1);
    buttons->addWidget(m_stopButton, 0, 2);
    buttons->addWidget(m_previewButton, 1, 0);
    buttons->addWidget(m_copyCliButton, 1, 1, 1, 2);
    leftLayout->addLayout(buttons);
    m_inspectButton = new QPushButton(this);
    m_inspectButton->setObjectName(QStringLiteral("inspectStepButton"));
    m_inspectButton->setToolTip(tr("Record the failed step on the Inspect page: which op first produced NaN or Inf, "
                                   "in which module"));
    m_inspectButton->hide();
    connect(m_inspectButton, &QPushButton::clicked, this, [this] {
        Q_EMIT inspectStepRequested(m_nonFiniteStep, QDir(m_nonFiniteStep).filePath(QStringLiteral("batch.safetensors")));
    });
    leftLayout->addWidget(m_inspectButton);
    leftLayout->addStretch(1);
    left->setMinimumWidth(400);
    left->setMaximumWidth(480);

    auto *right = new QWidget(this);
    auto *rightLayout = new QVBoxLayout(right);
    rightLayout->setContentsMargins(0, 0, 0, 0);
    m_progressBar = new QProgressBar(this);
    m_progressBar->setObjectName(QStringLiteral("progressBar"));
    m_progressBar->setRange(0, 1);
    m_progressBar->setValue(0);
    m_progressBar->setFormat(tr("Not started"));
    m_progressBar->setTextVisible(true);
    rightLayout->addWidget(m_progressBar);
    rightLayout->addWidget(createProgressBox());

    m_plot = new MetricPlots; // the splitter below takes it, built whole (see RunsPage: Qt 6.8)
    m_plot->setObjectName(QStringLiteral("trainPlots"));
    m_plot->setPlaceholderTexts(tr("Start a run to see its curves here."), tr("No %1 yet"));
    // The step box beside it shows speed and memory as numbers; the Metrics menu adds their plots.
    m_plot->setShownMetrics({QStringLiteral("train/loss"), QStringLiteral("eval/loss"), QStringLiteral("train/learning_rate"),
                             QStringLiteral("train/grad_norm")});

    m_log = new QPlainTextEdit(this);
    m_log->setObjectName(QStringLiteral("logView"));
    m_log->setReadOnly(true);
    m_log->setMaximumBlockCount(kLogBlockLimit);
    m_log->setFont(QFontDatabase::systemFont(QFontDatabase::FixedFont));
    m_log->setPlaceholderText(tr("Messages of the training job appear here."));

    auto *splitter = new QSplitter(Qt::Vertical, this);
    splitter->setObjectName(QStringLiteral("trainSplitter"));
    splitter->addWidget(m_plot);
    splitter->addWidget(m_log);
    splitter->addWidget(createGenerateBox());
    splitter->setStretchFactor(0, 4);
    splitter->setStretchFactor(1, 1);
    splitter->setStretchFactor(2, 1);
    splitter->setChildrenCollapsible(false);
    rightLayout->addWidget(splitter, 1);

    auto *layout = new QHBoxLayout(this);
    layout->addWidget(left);
    layout->addWidget(right, 1);

    connect(m_form, &TrainSettingsForm::settingsChanged, this, &TrainPage::updateControls);
    connect(m_form, &TrainSettingsForm::statusMessage, this, &TrainPage::statusMessage);
    connect(&m_bridge, &bridge::EngineBridge::stepMetrics, this, &TrainPage::onStepMetrics);
    connect(&m_bridge, &bridge::EngineBridge::jobFinished, this, &TrainPage::onJobFinished);
    connect(&m_bridge, &bridge::EngineBridge::resumeSettings, this, [this](const engine::train::TrainingParams &p) {
        if (m_job != Job::Training)
            return;
        engine::train::TrainingParams shown = p;
        shown.storePath.clear();
        shown.resumeFrom.clear();
        m_form->setParams(shown); // the form shows what the run trains with (locked while it runs)
        beginTrainingView(p, tr("Resuming from %1: %2 steps in all").arg(QDir::toNativeSeparators(QString::fromStdString(p.resumeFrom))).arg(p.steps));
    });
    connect(&m_bridge, &bridge::EngineBridge::logLine, this, &TrainPage::appendLog);
    connect(&m_bridge, &bridge::EngineBridge::busyChanged, this, &TrainPage::updateControls);
    connect(&m_bridge, &bridge::EngineBridge::previewFinished, this, [this](bool ok, const QString &text) {
        if (m_job != Job::Preview)
            return;
        m_job = Job::None;
        if (ok) {
            appendLog(engine::LogLevel::Info, tr("Data preview (nothing trained):\n%1").arg(text.trimmed()));
            Q_EMIT statusMessage(tr("Data preview in the log"), 5000);
        } else {
            appendLog(engine::LogLevel::Error, tr("Cannot preview the data: %1").arg(text));
            Q_EMIT statusMessage(tr("Cannot preview the data: %1").arg(text), 15000);
        }
        updateControls();
    });
    connect(&m_bridge, &bridge::EngineBridge::generatedText, this, [this](const QString &piece) {
        if (m_job != Job::Generation)
            return;
        m_generateOutput->moveCursor(QTextCursor::End);
        m_generateOutput->insertPlainText(piece);
    });
    connect(&m_bridge, &bridge::EngineBridge::generationFinished, this, &TrainPage::onGenerationFinished);
    connect(&m_bridge, &bridge::EngineBridge::jobStarted, this, [this] {
        if (m_job == Job::Training && !m_bridge.isCancelling())
            setState(m_bridge.isPaused() ? tr("Paused") : tr("Running"));
    });
    connect(&m_bridge, &bridge::EngineBridge::runCreated, this, [this](qint64 runId, const QString &storePath) {
        m_runValue->setText(tr("#%1").arg(runId));
        m_runValue->setToolTip(tr("Recorded in %1").arg(QDir::toNativeSeparators(storePath)));
    });
    connect(&m_bridge, &bridge::EngineBridge::pausedChanged, this, [this](bool paused) {
        if (m_job == Job::Training && m_bridge.isBusy() && !m_bridge.isCancelling())
            setState(paused ? tr("Paused") : tr("Running"));
        updateControls();
    });

    m_form->setThreads(std::min(defaultThreads(), engine::hardwareThreads()));
    loadFields();
    m_stateText = tr("Idle");
    updateControls();
}

TrainPage::~TrainPage() { saveFields(); }

QWidget *TrainPage::createProgressBox()
{
    auto *box = new QGroupBox(tr("Current step"), this);
    auto *grid = new QGridLayout(box);
    m_lossValue = valueLabel(QStringLiteral("lossValue"), box);
    m_smoothedValue = valueLabel(QStringLiteral("smoothedLossValue"), box);
    m_lrValue = valueLabel(QStringLiteral("lrValue"), box);
    m_gradNormValue = valueLabel(QStringLiteral("gradNormValue"), box);
    m_speedValue = valueLabel(QStringLiteral("speedValue"), box);
    m_elapsedValue = valueLabel(QStringLiteral("elapsedValue"), box);
    m_runValue = valueLabel(QStringLiteral("runValue"), box);
    m_evalValue = valueLabel(QStringLiteral("evalValue"), box);
    m_memoryValue = valueLabel(QStringLiteral("memoryValue"), box);
    m_memoryValue->setToolTip(tr("Peak memory of the last step: the process's resident memory, and the GPUs' allocations"));
    const QList<std::pair<QString, QLabel *>> cells = {
        {tr("Loss:"), m_lossValue},         {tr("Smoothed:"), m_smoothedValue}, {tr("Learning rate:"), m_lrValue},
        {tr("Gradient norm:"), m_gradNormValue}, {tr("Speed:"), m_speedValue},  {tr("Elapsed:"), m_elapsedValue},
        {tr("Run:"), m_runValue},           {tr("Memory:"), m_memoryValue},     {tr("Eval loss:"), m_evalValue},
    };
    for (int i = 0; i < cells.size(); ++i) {
        const int row = i / 3;
        const int column = (i % 3) * 2;
        auto *label = new QLabel(cells[i].first, box);
        grid->addWidget(label, row, column, Qt::AlignRight);
        grid->addWidget(cells[i].second, row, column + 1);
    }
    for (int column : {1, 3, 5})
        grid->setColumnStretch(column, 1);
    return box;
}

QWidget *TrainPage::createGenerateBox()
{
    auto *box = new QGroupBox(tr("Try the trained model"), this);
    box->setObjectName(QStringLiteral("generateBox"));
    auto *layout = new QVBoxLayout(box);
    m_generateModelLabel = new QLabel(tr("Train a run that saves its model or adapter, then generate text with it here."), box);
    m_generateModelLabel->setObjectName(QStringLiteral("generateModelLabel"));
    m_generateModelLabel->setWordWrap(true);
    layout->addWidget(m_generateModelLabel);
    auto *row = new QHBoxLayout;
    m_promptEdit = new QLineEdit(box);
    m_promptEdit->setObjectName(QStringLiteral("generatePromptEdit"));
    m_promptEdit->setPlaceholderText(tr("Prompt"));
    m_promptEdit->setClearButtonEnabled(true);
    connect(m_promptEdit, &QLineEdit::returnPressed, this, [this] { generate(); });
    connect(m_promptEdit, &QLineEdit::textChanged, this, &TrainPage::updateControls);
    m_newTokensSpin = new QSpinBox(box);
    m_newTokensSpin->setObjectName(QStringLiteral("generateTokensSpin"));
    m_newTokensSpin->setRange(1, 4096);
    m_newTokensSpin->setValue(64);
    m_newTokensSpin->setSuffix(tr(" tokens"));
    m_newTokensSpin->setToolTip(tr("The most new tokens to generate (greedy)"));
    m_generateButton = new QPushButton(tr("&Generate"), box);
    m_generateButton->setObjectName(QStringLiteral("generateButton"));
    connect(m_generateButton, &QPushButton::clicked, this, [this] { generate(); });
    row->addWidget(m_promptEdit, 1);
    row->addWidget(m_newTokensSpin);
    row->addWidget(m_generateButton);
    layout->addLayout(row);
    m_generateOutput = new QPlainTextEdit(box);
    m_generateOutput->setObjectName(QStringLiteral("generateOutput"));
    m_generateOutput->setReadOnly(true);
    m_generateOutput->setPlaceholderText(tr("The generated text appears here."));
    layout->addWidget(m_generateOutput, 1);
    return box;
}

void TrainPage::useDemoCorpus() { m_form->setCorpusPath({}); }

void TrainPage::useDemo()
{
    engine::train::TrainingParams p = m_form->params();
    p.modelPath = engine::demoBaseModelPath().string();
    p.dataPath = engine::demoFineTuneCorpusPath().string();
    p.method = engine::train::TrainingMethod::Lora;
    p.lora.r = 16;
    p.lora.alpha = 32;
    p.lora.setTargetsFromText("q_proj,k_proj,v_proj,o_proj");
    p.steps = 200;
    p.learningRate = 0.003;
    p.valFraction = 0.05;
    p.evalDataPath.clear();
    p.evalEvery = 25;
    p.samplePrompt = "A hacker is";
    m_form->setParams(p);
}

void TrainPage::usePlan(const QString &modelPath, const engine::plan::Plan &plan)
{
    m_form->setModelPath(modelPath.trimmed());
    QStringList devices;
    for (const auto &usage : plan.usage) {
        if (usage.memory.weights > 0)
            devices << QString::fromStdString(usage.device.torchDevice());
    }
    const auto placement = plan.placements();
    m_form->setPlacement(modelPath, placement,
                         tr("Device map from the Plan page: %n entries over %1.", nullptr, int(placement.size()))
                             .arg(devices.join(QStringLiteral(", "))));
}

bool TrainPage::applyRunConfig(const QString &configJson)
{
    engine::train::TrainingParams current = m_form->params();
    engine::train::TrainingParams cloned;
    QString error;
    if (!bridge::readTrainingSettings(configJson, engine::train::SettingScope::All, current, &cloned, &error)) {
        appendLog(engine::LogLevel::Error, tr("Cannot clone the run's settings: %1").arg(error));
        Q_EMIT statusMessage(tr("Cannot clone the run's settings: %1").arg(error), 15000);
        return false;
    }
    cloned.runName = current.runName;     // a new run gets its own name
    cloned.outputDir = current.outputDir; // and never writes into the cloned run's folder
    m_form->setParams(cloned);
    Q_EMIT statusMessage(tr("Settings of the stored run; change what you like and start"), 8000);
    return true;
}

void TrainPage::setModelPath(const QString &path) { m_form->setModelPath(path); }

void TrainPage::setThreads(int threads) { m_form->setThreads(threads); }

bool TrainPage::settingsValid() const { return m_form->isValid(); }

engine::train::TrainingParams TrainPage::params() const
{
    engine::train::TrainingParams p = m_form->params();
    p.storePath = m_storePath.toStdString();
    return p;
}

int TrainPage::plottedSteps() const { return m_plot->pointCount(kLiveRun, QStringLiteral("train/loss")); }

QStringList TrainPage::commandLineWords() const
{
    const engine::train::TrainingParams p = params();
    // A given device map travels as a file (--device-map FILE); without one the command names a placeholder.
    const QString mapFile = p.devicePlacement.empty() ? QString() : bridge::writeDeviceMapFile(p.devicePlacement);
    return bridge::trainCommandLine(p, mapFile);
}

QString TrainPage::commandLine() const { return bridge::shellCommand(commandLineWords()); }

void TrainPage::copyCommandLine()
{
    const QString command = commandLine();
    QGuiApplication::clipboard()->setText(command);
    appendLog(engine::LogLevel::Info, tr("Copied to the clipboard: %1").arg(command));
    Q_EMIT statusMessage(m_form->isValid() ? tr("Command copied to the clipboard")
                                           : tr("Command copied to the clipboard; the settings are not valid yet: %1")
                                                 .arg(m_form->problem()),
                         8000);
}

QString TrainPage::modelFolderOf(const QMimeData *mime)
{
    if (!mime || !mime->hasUrls())
        return {};
    for (const QUrl &url : mime->urls()) {
        if (!url.isLocalFile())
            continue;
        const QFileInfo info(url.toLocalFile());
        if (info.isDir())
            return info.absoluteFilePath();
        if (info.isFile() && info.fileName() == QStringLiteral("config.json"))
            return info.absolutePath();
    }
    return {};
}

void TrainPage::dragEnterEvent(QDragEnterEvent *event)
{
    if (!m_bridge.isBusy() && !modelFolderOf(event->mimeData()).isEmpty())
        event->acceptProposedAction();
    else
        event->ignore();
}

void TrainPage::dropEvent(QDropEvent *event)
{
    const QString folder = modelFolderOf(event->mimeData());
    if (folder.isEmpty() || m_bridge.isBusy())
        return;
    setModelPath(folder);
    event->acceptProposedAction();
    Q_EMIT statusMessage(tr("Model: %1").arg(QDir::toNativeSeparators(folder)), 5000);
}

bool TrainPage::previewData()
{
    QString error = m_form->problem();
    if (!error.isEmpty() || !m_bridge.startPreview(params(), &error)) {
        appendLog(engine::LogLevel::Error, tr("Cannot preview the data: %1").arg(error));
        Q_EMIT statusMessage(tr("Cannot preview the data: %1").arg(error), 15000);
        return false;
    }
    m_job = Job::Preview;
    appendLog(engine::LogLevel::Info, tr("Reading and tokenizing the data…"));
    updateControls();
    return true;
}

bool TrainPage::start()
{
    const engine::train::TrainingParams p = params();
    QString error = m_form->problem();
    if (!error.isEmpty() || !m_bridge.startTraining(p, &error)) {
        appendLog(engine::LogLevel::Error, tr("Cannot start: %1").arg(error));
        Q_EMIT statusMessage(tr("Cannot start: %1").arg(error), 15000);
        return false;
    }
    m_job = Job::Training;
    saveFields();
    if (!p.modelPath.empty())
        m_form->addRecentModel(QString::fromStdString(p.modelPath));
    const QString corpus = QString::fromStdString(p.dataPath);
    beginTrainingView(p, tr("Starting: %1 steps, batch %2 × %3 tokens, learning rate %4, %5 threads, on %6")
                             .arg(p.steps)
                             .arg(p.batchSize)
                             .arg(p.sequenceLength)
                             .arg(p.learningRate)
                             .arg(p.threads)
                             .arg(corpus.isEmpty() ? tr("the bundled demo corpus") : QDir::toNativeSeparators(corpus)));
    return true;
}

bool TrainPage::resume(qint64 runId, qint64 totalSteps)
{
    bridge::ResumeRequest request;
    request.run = QString::number(runId);
    request.storePath = m_storePath;
    request.steps = totalSteps;
    QString error;
    if (!m_bridge.startResume(request, &error)) {
        appendLog(engine::LogLevel::Error, tr("Cannot resume run #%1: %2").arg(runId).arg(error));
        Q_EMIT statusMessage(tr("Cannot resume run #%1: %2").arg(runId).arg(error), 15000);
        return false;
    }
    m_job = Job::Training;
    appendLog(engine::LogLevel::Info, totalSteps > 0 ? tr("Continuing run #%1 to %2 steps…").arg(runId).arg(totalSteps)
                                                     : tr("Resuming run #%1…").arg(runId));
    setState(tr("Starting"));
    m_progressBar->setFormat(tr("Reading run #%1…").arg(runId));
    updateControls();
    return true;
}

void TrainPage::beginTrainingView(const engine::train::TrainingParams &p, const QString &what)
{
    m_runBaseModel = QString::fromStdString(p.modelPath);
    m_totalSteps = p.steps;
    m_rate.reset();
    RunCurves live;
    live.runId = kLiveRun;
    live.label = p.runName.empty() ? tr("this run") : QString::fromStdString(p.runName);
    live.started = QDateTime::currentDateTime();
    m_plot->setRuns({live});
    m_progressBar->setRange(0, static_cast<int>(p.steps));
    m_progressBar->setValue(0);
    m_progressBar->setFormat(tr("Starting…"));
    for (QLabel *label : {m_lossValue, m_smoothedValue, m_lrValue, m_gradNormValue, m_speedValue, m_elapsedValue, m_runValue,
                          m_evalValue, m_memoryValue})
        label->setText(QStringLiteral("–"));
    m_nonFiniteStep.clear();
    m_inspectButton->hide();
    appendLog(engine::LogLevel::Info, what);
    setState(tr("Starting"));
    Q_EMIT progressChanged(0, m_totalSteps, 0, -1);
    updateControls();
}

void TrainPage::togglePause()
{
    if (!m_bridge.isBusy() || m_job != Job::Training)
        return;
    const bool pause = !m_bridge.isPaused();
    m_bridge.pause(pause);
    appendLog(engine::LogLevel::Info, pause ? tr("Paused after the current step.") : tr("Resumed."));
}

void TrainPage::stop()
{
    if (!m_bridge.isBusy() || m_bridge.isCancelling() || m_job == Job::None)
        return;
    m_bridge.cancel();
    if (m_job == Job::Training) {
        appendLog(engine::LogLevel::Info, tr("Stopping after the current step…"));
        setState(tr("Stopping"));
    }
    updateControls();
}

bool TrainPage::generate()
{
    engine::infer::GenerateRequest request;
    request.modelPath = m_trainedModel.toStdString();
    request.adapterPath = m_trainedAdapter.toStdString();
    request.prompt = m_promptEdit->text().toStdString();
    request.maxNewTokens = m_newTokensSpin->value();
    request.threads = m_form->params().threads;
    QString error;
    if (!m_bridge.startGeneration(request, &error)) {
        m_generateOutput->setPlainText(error);
        Q_EMIT statusMessage(error, 10000);
        return false;
    }
    m_job = Job::Generation;
    m_generateOutput->setPlainText(m_promptEdit->text());
    updateControls();
    return true;
}

void TrainPage::onGenerationFinished(bool ok, const QString &textOrError, const QString &stopReason)
{
    if (m_job != Job::Generation)
        return;
    m_job = Job::None;
    if (ok) {
        // The streamed pieces are the text; set it whole once more in case a piece was missed.
        m_generateOutput->setPlainText(m_promptEdit->text() + textOrError);
        Q_EMIT statusMessage(tr("Generated (%1)").arg(stopReason), 5000);
    } else {
        m_generateOutput->setPlainText(tr("Cannot generate: %1").arg(textOrError));
        Q_EMIT statusMessage(tr("Cannot generate: %1").arg(textOrError), 15000);
    }
    updateControls();
}

void TrainPage::appendLog(engine::LogLevel level, const QString &text)
{
    QString line = QTime::currentTime().toString(QStringLiteral("hh:mm:ss")) + QStringLiteral("  ");
    if (level != engine::LogLevel::Info)
        line += QString::fromLatin1(engine::logLevelName(level)) + QStringLiteral(": ");
    m_log->appendPlainText(line + text);
}

void TrainPage::onStepMetrics(const QList<engine::train::StepMetrics> &batch)
{
    if (batch.isEmpty() || m_job != Job::Training)
        return;
    // The curves the run store gets, from the same step metrics (the Runs page shows them the same way).
    std::map<std::string, std::vector<engine::store::MetricPoint>> points;
    for (const engine::train::StepMetrics &m : batch) {
        if (m.step > 0) { // step 0 carries only the eval loss before training
            points["train/loss"].push_back({m.step, m.wallSeconds, m.loss});
            points["train/learning_rate"].push_back({m.step, m.wallSeconds, m.learningRate});
            points["train/grad_norm"].push_back({m.step, m.wallSeconds, m.gradNorm});
            points["train/tokens_per_second"].push_back({m.step, m.wallSeconds, m.tokensPerSecond});
            if (m.cpuPeakBytes > 0)
                points["memory/cpu"].push_back({m.step, m.wallSeconds, double(m.cpuPeakBytes)});
            if (m.gpuPeakBytes > 0)
                points["memory/gpu"].push_back({m.step, m.wallSeconds, double(m.gpuPeakBytes)});
            m_rate.add(m.step, m.wallSeconds);
        }
        if (m.evaluated)
            points["eval/loss"].push_back({m.step, m.wallSeconds, m.evalLoss});
    }
    for (const auto &[key, values] : points)
        m_plot->appendPoints(kLiveRun, key, values);

    const engine::train::StepMetrics &last = batch.back();
    if (last.totalSteps > 0 && last.totalSteps != m_totalSteps)
        m_totalSteps = last.totalSteps;
    const double eta = m_rate.etaSeconds(m_totalSteps);
    m_progressBar->setRange(0, static_cast<int>(std::max<qint64>(m_totalSteps, 1)));
    m_progressBar->setValue(static_cast<int>(std::min<qint64>(last.step, m_totalSteps)));
    m_progressBar->setFormat(tr("Step %1 of %2 · %3 left").arg(last.step).arg(m_totalSteps).arg(formatDuration(eta)));

    if (last.step > 0) { // step 0 (the eval loss before training) has no training values
        m_lossValue->setText(formatNumber(last.loss));
        m_smoothedValue->setText(formatNumber(m_plot->lastSmoothedValue(kLiveRun, QStringLiteral("train/loss"))));
        m_lrValue->setText(formatNumber(last.learningRate, 3));
        m_gradNormValue->setText(formatNumber(last.gradNorm, 3));
        m_speedValue->setText(tr("%1 tokens/s").arg(QLocale().toString(last.tokensPerSecond, 'f', 0)));
        m_elapsedValue->setText(formatDuration(last.wallSeconds));
    }
    if (last.cpuPeakBytes > 0 || last.gpuPeakBytes > 0) {
        QStringList parts;
        if (last.cpuPeakBytes > 0)
            parts << tr("%1 CPU").arg(QLocale().formattedDataSize(last.cpuPeakBytes, 1, QLocale::DataSizeTraditionalFormat));
        if (last.gpuPeakBytes > 0)
            parts << tr("%1 GPU").arg(QLocale().formattedDataSize(last.gpuPeakBytes, 1, QLocale::DataSizeTraditionalFormat));
        m_memoryValue->setText(parts.join(QStringLiteral(" · ")));
    }
    for (const engine::train::StepMetrics &m : batch) {
        if (m.evaluated)
        {
            m_evalValue->setText(tr("%1 (ppl %2)").arg(formatNumber(m.evalLoss), formatNumber(m.evalPerplexity, 4)));
            m_evalValue->setToolTip(tr("Eval loss %1, perplexity %2, at step %3")
                                        .arg(formatNumber(m.evalLoss), formatNumber(m.evalPerplexity, 4))
                                        .arg(m.step));
        }
    }
    Q_EMIT progressChanged(last.step, m_totalSteps, last.tokensPerSecond, eta);
}

void TrainPage::onJobFinished(const bridge::JobOutcome &outcome)
{
    if (m_job != Job::Training)
        return;
    m_job = Job::None;
    const QString run = outcome.runId > 0 ? tr(" (run #%1)").arg(outcome.runId) : QString();
    switch (outcome.status) {
    case engine::JobStatus::Succeeded:
        m_progressBar->setValue(m_progressBar->maximum());
        m_progressBar->setFormat(tr("Done: %1 steps").arg(outcome.stepsCompleted));
        appendLog(engine::LogLevel::Info, tr("Finished %1 steps, loss %2 → %3%4")
                                              .arg(outcome.stepsCompleted)
                                              .arg(formatNumber(outcome.firstLoss))
                                              .arg(formatNumber(outcome.lastLoss))
                                              .arg(run));
        if (!outcome.lossPlotPath.isEmpty())
            appendLog(engine::LogLevel::Info, tr("Loss plot saved to %1").arg(QDir::toNativeSeparators(outcome.lossPlotPath)));
        setState(tr("Succeeded"));
        Q_EMIT statusMessage(tr("Training finished: loss %1 → %2").arg(formatNumber(outcome.firstLoss), formatNumber(outcome.lastLoss)), 0);
        break;
    case engine::JobStatus::Cancelled:
        m_progressBar->setFormat(tr("Stopped at step %1 of %2").arg(outcome.stepsCompleted).arg(m_totalSteps));
        appendLog(engine::LogLevel::Info, tr("Stopped after %1 steps%2").arg(outcome.stepsCompleted).arg(run));
        setState(tr("Cancelled"));
        Q_EMIT statusMessage(tr("Training stopped after %1 steps").arg(outcome.stepsCompleted), 0);
        break;
    case engine::JobStatus::Failed:
        m_progressBar->setFormat(tr("Failed at step %1").arg(outcome.stepsCompleted));
        {
            const std::string_view kind = engine::errorKindName(outcome.errorKind);
            appendLog(engine::LogLevel::Error, tr("Training failed (%1)%2: %3")
                                                   .arg(QString::fromUtf8(kind.data(), static_cast<qsizetype>(kind.size())), run,
                                                        outcome.errorMessage));
        }
        setState(tr("Failed"));
        Q_EMIT statusMessage(tr("Training failed: %1").arg(outcome.errorMessage), 0);
        if (!outcome.errorField.isEmpty()) // the setting to change, marked as a refused value is
            m_form->showProblem(outcome.errorField, outcome.errorMessage);
        if (!outcome.nonFiniteStepPath.isEmpty()) {
            // The NaN guard kept the step: one click records it on the Inspect page.
            m_nonFiniteStep = outcome.nonFiniteStepPath;
            const QString step = QFileInfo(m_nonFiniteStep).fileName().section(QLatin1Char('-'), -1); // nonfinite-step-<N>
            m_inspectButton->setText(tr("&Inspect Step %1: Where Did NaN First Appear?").arg(step));
            m_inspectButton->show();
        }
        break;
    }

    // What the run saved is what the generate box uses.
    if (!outcome.modelPath.isEmpty()) {
        m_trainedModel = outcome.modelPath;
        m_trainedAdapter.clear();
        m_generateModelLabel->setText(tr("With the model of run #%1 (%2)").arg(outcome.runId).arg(QDir::toNativeSeparators(m_trainedModel)));
    } else if (!outcome.adapterPath.isEmpty() && !m_runBaseModel.isEmpty()) {
        m_trainedModel = m_runBaseModel;
        m_trainedAdapter = outcome.adapterPath;
        m_generateModelLabel->setText(tr("With the adapter of run #%1 on %2").arg(outcome.runId).arg(QDir::toNativeSeparators(m_trainedModel)));
    }
    if (!m_trainedModel.isEmpty() && m_promptEdit->text().isEmpty())
        m_promptEdit->setText(QString::fromStdString(m_form->params().samplePrompt));
    updateControls();
}

void TrainPage::updateControls()
{
    const bool busy = m_bridge.isBusy();
    const bool cancelling = m_bridge.isCancelling();
    const bool training = busy && m_job == Job::Training;
    const bool valid = m_form->isValid();
    m_startButton->setEnabled(!busy && valid);
    m_startButton->setToolTip(valid ? tr("Start training with these settings (Ctrl+Return)") : m_form->problem());
    m_previewButton->setEnabled(!busy && valid);
    m_pauseButton->setEnabled(training && !cancelling);
    m_stopButton->setEnabled(busy && !cancelling && m_job != Job::None);
    m_pauseButton->setText(m_bridge.isPaused() ? tr("&Resume") : tr("&Pause"));
    m_form->setLocked(busy);
    const bool canGenerate = !m_trainedModel.isEmpty();
    m_promptEdit->setEnabled(canGenerate);
    m_newTokensSpin->setEnabled(canGenerate && !busy);
    m_generateButton->setEnabled(canGenerate && !busy && !m_promptEdit->text().isEmpty());
}

void TrainPage::setState(const QString &state)
{
    if (state == m_stateText)
        return;
    m_stateText = state;
    Q_EMIT stateChanged(state);
}

void TrainPage::loadFields()
{
    QSettings settings;
    engine::train::TrainingParams p = m_form->params();
    const QString form = settings.value(kFormKey).toString();
    QString error;
    if (!form.isEmpty() && bridge::readTrainingSettings(form, engine::train::SettingScope::Form, p, &p, &error)) {
        p.threads = m_form->params().threads; // threads come from the preferences, not the last run
        m_form->setParams(p);
        return;
    }
    if (!error.isEmpty())
        appendLog(engine::LogLevel::Warning, tr("The last session's settings are ignored: %1").arg(error));
}

void TrainPage::saveFields() const
{
    const QString form = bridge::settingsJson(m_form->params(), engine::train::SettingScope::Form);
    if (!form.isEmpty())
        QSettings().setValue(kFormKey, form);
}

} // namespace ui
