#include "ui/pages/trainpage.h"

#include "engine/core/paths.h"

#include "app/bridge/enginebridge.h"
#include "engine/core/error.h"
#include "engine/core/settings.h"
#include "engine/core/threads.h"
#include "ui/widgets/lossplot.h"

#include <QCheckBox>
#include <QDir>
#include <QComboBox>
#include <QDoubleSpinBox>
#include <QFileDialog>
#include <QFileInfo>
#include <QFontDatabase>
#include <QFormLayout>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QLocale>
#include <QPlainTextEdit>
#include <QProgressBar>
#include <QPushButton>
#include <QSettings>
#include <QSpinBox>
#include <QSplitter>
#include <QTime>
#include <QVBoxLayout>

#include <algorithm>
#include <cmath>
#include <exception>

namespace ui {
namespace {

constexpr int kLogBlockLimit = 5000;

/// "0:42", "12:05", "1:02:03".
QString formatDuration(double seconds)
{
    if (!std::isfinite(seconds) || seconds < 0)
        return QStringLiteral("–");
    const qint64 total = static_cast<qint64>(std::llround(seconds));
    const qint64 h = total / 3600;
    const qint64 m = (total / 60) % 60;
    const qint64 s = total % 60;
    if (h > 0)
        return QStringLiteral("%1:%2:%3").arg(h).arg(m, 2, 10, QLatin1Char('0')).arg(s, 2, 10, QLatin1Char('0'));
    return QStringLiteral("%1:%2").arg(m).arg(s, 2, 10, QLatin1Char('0'));
}

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
    return label;
}

} // namespace

TrainPage::TrainPage(app::EngineBridge &bridge, const QString &storePath, QWidget *parent)
    : QWidget(parent), m_bridge(bridge), m_storePath(storePath)
{
    auto *left = new QWidget(this);
    auto *leftLayout = new QVBoxLayout(left);
    leftLayout->setContentsMargins(0, 0, 0, 0);
    leftLayout->addWidget(createSettingsBox());

    m_startButton = new QPushButton(tr("&Start"), this);
    m_startButton->setObjectName(QStringLiteral("startButton"));
    m_startButton->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_Return));
    m_startButton->setToolTip(tr("Start training with these settings (Ctrl+Return)"));
    m_startButton->setDefault(true);
    m_pauseButton = new QPushButton(tr("&Pause"), this);
    m_pauseButton->setObjectName(QStringLiteral("pauseButton"));
    m_pauseButton->setToolTip(tr("Pause after the current step, or resume"));
    m_stopButton = new QPushButton(tr("S&top"), this);
    m_stopButton->setObjectName(QStringLiteral("stopButton"));
    m_stopButton->setToolTip(tr("Stop after the current step; the run is kept as cancelled"));
    connect(m_startButton, &QPushButton::clicked, this, [this] { start(); });
    connect(m_pauseButton, &QPushButton::clicked, this, &TrainPage::togglePause);
    connect(m_stopButton, &QPushButton::clicked, this, &TrainPage::stop);
    m_previewButton = new QPushButton(tr("Pre&view Data"), this);
    m_previewButton->setObjectName(QStringLiteral("previewButton"));
    m_previewButton->setToolTip(tr("Read and tokenize the data as this run would and show the counts and first rows "
                                   "in the log (nothing is trained)"));
    connect(m_previewButton, &QPushButton::clicked, this, [this] { previewData(); });
    auto *buttons = new QHBoxLayout;
    buttons->addWidget(m_startButton);
    buttons->addWidget(m_pauseButton);
    buttons->addWidget(m_stopButton);
    buttons->addWidget(m_previewButton);
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

    m_progressBar = new QProgressBar(this);
    m_progressBar->setObjectName(QStringLiteral("progressBar"));
    m_progressBar->setRange(0, 1);
    m_progressBar->setValue(0);
    m_progressBar->setFormat(tr("Not started"));
    m_progressBar->setTextVisible(true);
    leftLayout->addWidget(m_progressBar);
    leftLayout->addWidget(createProgressBox());
    leftLayout->addStretch(1);
    left->setMinimumWidth(360);
    left->setMaximumWidth(420);

    m_plot = new LossPlot(this);
    m_plot->setObjectName(QStringLiteral("lossPlot"));

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
    splitter->setStretchFactor(0, 3);
    splitter->setStretchFactor(1, 1);
    splitter->setChildrenCollapsible(false);

    auto *layout = new QHBoxLayout(this);
    layout->addWidget(left);
    layout->addWidget(splitter, 1);

    connect(&m_bridge, &app::EngineBridge::stepMetrics, this, &TrainPage::onStepMetrics);
    connect(&m_bridge, &app::EngineBridge::jobFinished, this, &TrainPage::onJobFinished);
    connect(&m_bridge, &app::EngineBridge::logLine, this, &TrainPage::appendLog);
    connect(&m_bridge, &app::EngineBridge::previewFinished, this, [this](bool ok, const QString &text) {
        if (!m_previewing)
            return;
        m_previewing = false;
        if (ok) {
            appendLog(engine::LogLevel::Info, tr("Data preview (nothing trained):\n%1").arg(text.trimmed()));
            Q_EMIT statusMessage(tr("Data preview in the log"), 5000);
        } else {
            appendLog(engine::LogLevel::Error, tr("Cannot preview the data: %1").arg(text));
            Q_EMIT statusMessage(tr("Cannot preview the data: %1").arg(text), 15000);
        }
        updateControls();
    });
    connect(&m_bridge, &app::EngineBridge::jobStarted, this, [this] {
        if (!m_bridge.isCancelling())
            setState(m_bridge.isPaused() ? tr("Paused") : tr("Running"));
    });
    connect(&m_bridge, &app::EngineBridge::runCreated, this, [this](qint64 runId, const QString &storePath) {
        m_runValue->setText(tr("#%1").arg(runId));
        m_runValue->setToolTip(tr("Recorded in %1").arg(QDir::toNativeSeparators(storePath)));
    });
    connect(&m_bridge, &app::EngineBridge::pausedChanged, this, [this](bool paused) {
        if (m_bridge.isBusy() && !m_bridge.isCancelling())
            setState(paused ? tr("Paused") : tr("Running"));
        updateControls();
    });

    loadFields();
    m_stateText = tr("Idle");
    updateControls();
}

TrainPage::~TrainPage() { saveFields(); }

void TrainPage::useDemoCorpus() { m_corpusEdit->clear(); }

void TrainPage::useDemo()
{
    m_modelEdit->setText(QString::fromStdString(engine::demoBaseModelPath().string()));
    m_corpusEdit->setText(QString::fromStdString(engine::demoFineTuneCorpusPath().string()));
    m_methodCombo->setCurrentIndex(m_methodCombo->findData(QStringLiteral("lora")));
    m_loraRankSpin->setValue(16);
    m_loraTargetsEdit->setText(QStringLiteral("q_proj,k_proj,v_proj,o_proj"));
    m_stepsSpin->setValue(200);
    m_lrSpin->setValue(0.003);
    m_valFractionSpin->setValue(0.05);
    m_sampleEdit->setText(QStringLiteral("A hacker is"));
}

void TrainPage::usePlan(const QString &modelPath, const engine::plan::Plan &plan)
{
    m_placementModel = modelPath.trimmed();
    m_modelEdit->setText(m_placementModel);
    m_placement = plan.placements();
    QStringList devices;
    for (const auto &usage : plan.usage) {
        if (usage.memory.weights > 0)
            devices << QString::fromStdString(usage.device.torchDevice());
    }
    m_placementLabel->setText(tr("Device map from the Plan page: %n entries over %1.", nullptr, int(m_placement.size()))
                                  .arg(devices.join(QStringLiteral(", "))));
    m_placementLabel->show();
}

QWidget *TrainPage::createSettingsBox()
{
    auto *box = new QGroupBox(tr("Settings"), this);
    auto *form = new QFormLayout(box);

    m_modelEdit = new QLineEdit(box);
    m_modelEdit->setObjectName(QStringLiteral("modelEdit"));
    m_modelEdit->setPlaceholderText(tr("Built-in demo model (LLaMA, 2 M parameters)"));
    m_modelEdit->setClearButtonEnabled(true);
    m_modelEdit->setToolTip(tr("A model folder (config.json, with weights to fine-tune) or a config.json; "
                               "leave empty for the demo model"));
    auto *modelLabel = new QLabel(tr("&Model:"), box);
    modelLabel->setBuddy(m_modelEdit);
    form->addRow(modelLabel);
    form->addRow(m_modelEdit);
    m_placementLabel = new QLabel(box);
    m_placementLabel->setObjectName(QStringLiteral("placementLabel"));
    m_placementLabel->setWordWrap(true);
    m_placementLabel->hide();
    form->addRow(m_placementLabel);
    connect(m_modelEdit, &QLineEdit::textChanged, this, [this](const QString &text) {
        // A plan belongs to its model: editing the model drops it.
        if (!m_placement.empty() && text.trimmed() != m_placementModel) {
            m_placement.clear();
            m_placementLabel->hide();
        }
    });

    m_corpusEdit = new QLineEdit(box);
    m_corpusEdit->setObjectName(QStringLiteral("corpusEdit"));
    m_corpusEdit->setPlaceholderText(tr("Bundled demo corpus (Moby-Dick)"));
    m_corpusEdit->setClearButtonEnabled(true);
    m_corpusEdit->setToolTip(tr("A UTF-8 text file to train on; leave empty for the bundled demo corpus"));
    m_browseButton = new QPushButton(tr("&Browse…"), box);
    m_browseButton->setObjectName(QStringLiteral("browseButton"));
    connect(m_browseButton, &QPushButton::clicked, this, &TrainPage::browseCorpus);
    auto *corpusRow = new QHBoxLayout;
    corpusRow->addWidget(m_corpusEdit, 1);
    corpusRow->addWidget(m_browseButton);
    auto *corpusLabel = new QLabel(tr("&Corpus:"), box);
    corpusLabel->setBuddy(m_corpusEdit);
    // The corpus gets the whole width: paths are long.
    form->addRow(corpusLabel);
    form->addRow(corpusRow);

    m_stepsSpin = new QSpinBox(box);
    m_stepsSpin->setObjectName(QStringLiteral("stepsSpin"));
    m_stepsSpin->setRange(1, 1'000'000);
    m_stepsSpin->setValue(300);
    m_stepsSpin->setToolTip(tr("Optimizer steps to run"));
    form->addRow(tr("S&teps:"), m_stepsSpin);

    m_lrSpin = new QDoubleSpinBox(box);
    m_lrSpin->setObjectName(QStringLiteral("lrSpin"));
    m_lrSpin->setDecimals(5);
    m_lrSpin->setRange(0, 1);
    m_lrSpin->setSingleStep(0.0005);
    m_lrSpin->setValue(0.003);
    m_lrSpin->setToolTip(tr("Peak learning rate of AdamW (warmup, then cosine decay)"));
    form->addRow(tr("&Learning rate:"), m_lrSpin);

    m_batchSpin = new QSpinBox(box);
    m_batchSpin->setObjectName(QStringLiteral("batchSpin"));
    m_batchSpin->setRange(1, 4096);
    m_batchSpin->setValue(8);
    m_batchSpin->setToolTip(tr("Sequences per optimizer step"));
    form->addRow(tr("&Batch size:"), m_batchSpin);

    m_seqLenSpin = new QSpinBox(box);
    m_seqLenSpin->setObjectName(QStringLiteral("seqLenSpin"));
    m_seqLenSpin->setRange(2, 65536);
    m_seqLenSpin->setSingleStep(16);
    m_seqLenSpin->setValue(128);
    m_seqLenSpin->setSuffix(tr(" tokens"));
    m_seqLenSpin->setToolTip(tr("Tokens per training sequence"));
    form->addRow(tr("Se&quence length:"), m_seqLenSpin);

    m_threadsSpin = new QSpinBox(box);
    m_threadsSpin->setObjectName(QStringLiteral("threadsSpin"));
    m_threadsSpin->setRange(1, engine::hardwareThreads());
    m_threadsSpin->setValue(std::min(defaultThreads(), engine::hardwareThreads()));
    m_threadsSpin->setToolTip(tr("CPU threads for the math (this machine has %1)").arg(engine::hardwareThreads()));
    form->addRow(tr("T&hreads:"), m_threadsSpin);

    m_methodCombo = new QComboBox(box);
    m_methodCombo->setObjectName(QStringLiteral("methodCombo"));
    m_methodCombo->addItem(tr("Full fine-tuning"), QStringLiteral("full"));
    m_methodCombo->addItem(tr("LoRA (adapters on a frozen base)"), QStringLiteral("lora"));
    m_methodCombo->setToolTip(tr("LoRA trains small adapters and needs a model folder with weights"));
    form->addRow(tr("M&ethod:"), m_methodCombo);
    m_loraRankSpin = new QSpinBox(box);
    m_loraRankSpin->setObjectName(QStringLiteral("loraRankSpin"));
    m_loraRankSpin->setRange(1, 1024);
    m_loraRankSpin->setValue(8);
    m_loraRankSpin->setToolTip(tr("LoRA rank r; alpha is 2 r (scale 2)"));
    form->addRow(tr("LoRA &rank:"), m_loraRankSpin);
    m_loraTargetsEdit = new QLineEdit(QStringLiteral("q_proj,v_proj"), box);
    m_loraTargetsEdit->setObjectName(QStringLiteral("loraTargetsEdit"));
    m_loraTargetsEdit->setToolTip(tr("Modules to adapt: names as PEFT matches them (q_proj,v_proj) or a regex over the full "
                                     "module name"));
    form->addRow(tr("LoRA tar&gets:"), m_loraTargetsEdit);
    connect(m_methodCombo, &QComboBox::currentIndexChanged, this, [this] { updateControls(); });

    m_valFractionSpin = new QDoubleSpinBox(box);
    m_valFractionSpin->setObjectName(QStringLiteral("valFractionSpin"));
    m_valFractionSpin->setRange(0, 0.5);
    m_valFractionSpin->setSingleStep(0.05);
    m_valFractionSpin->setDecimals(2);
    m_valFractionSpin->setValue(0.05);
    m_valFractionSpin->setToolTip(tr("Fraction of the data held out for eval loss and perplexity (0 = none); evaluated "
                                     "ten times per run"));
    form->addRow(tr("&Validation:"), m_valFractionSpin);
    m_saveEverySpin = new QSpinBox(box);
    m_saveEverySpin->setObjectName(QStringLiteral("saveEverySpin"));
    m_saveEverySpin->setRange(0, 1'000'000);
    m_saveEverySpin->setValue(0);
    m_saveEverySpin->setSpecialValueText(tr("at stop only"));
    m_saveEverySpin->setToolTip(tr("A checkpoint every N steps (one is always written when the run stops); "
                                   "continue with tunebench train --resume RUN"));
    form->addRow(tr("Check&points:"), m_saveEverySpin);
    m_sampleEdit = new QLineEdit(box);
    m_sampleEdit->setObjectName(QStringLiteral("sampleEdit"));
    m_sampleEdit->setPlaceholderText(tr("No sample"));
    m_sampleEdit->setToolTip(tr("A prompt: the log shows its greedy continuation before and after training"));
    form->addRow(tr("Sam&ple prompt:"), m_sampleEdit);
    m_precisionCombo = new QComboBox(box);
    m_precisionCombo->setObjectName(QStringLiteral("precisionCombo"));
    m_precisionCombo->addItem(tr("fp32"), QStringLiteral("fp32"));
    m_precisionCombo->addItem(tr("bf16 (autocast)"), QStringLiteral("bf16"));
    m_precisionCombo->addItem(tr("fp16 (autocast, loss scaling; CUDA)"), QStringLiteral("fp16"));
    m_precisionCombo->setToolTip(tr("The arithmetic of forward and backward; weights and optimizer state stay fp32"));
    form->addRow(tr("Prec&ision:"), m_precisionCombo);
    m_checkpointingCheck = new QCheckBox(tr("Gradient checkpointing"), box);
    m_checkpointingCheck->setObjectName(QStringLiteral("checkpointingCheck"));
    m_checkpointingCheck->setToolTip(tr("Recompute each decoder layer in backward instead of keeping its activations: "
                                        "less memory, about a third more compute"));
    form->addRow(QString(), m_checkpointingCheck);
    return box;
}

QWidget *TrainPage::createProgressBox()
{
    auto *box = new QGroupBox(tr("Current step"), this);
    auto *form = new QFormLayout(box);
    m_lossValue = valueLabel(QStringLiteral("lossValue"), box);
    m_smoothedValue = valueLabel(QStringLiteral("smoothedLossValue"), box);
    m_lrValue = valueLabel(QStringLiteral("lrValue"), box);
    m_gradNormValue = valueLabel(QStringLiteral("gradNormValue"), box);
    m_speedValue = valueLabel(QStringLiteral("speedValue"), box);
    m_elapsedValue = valueLabel(QStringLiteral("elapsedValue"), box);
    m_runValue = valueLabel(QStringLiteral("runValue"), box);
    form->addRow(tr("Loss:"), m_lossValue);
    form->addRow(tr("Smoothed loss:"), m_smoothedValue);
    form->addRow(tr("Learning rate:"), m_lrValue);
    form->addRow(tr("Gradient norm:"), m_gradNormValue);
    form->addRow(tr("Speed:"), m_speedValue);
    form->addRow(tr("Elapsed:"), m_elapsedValue);
    form->addRow(tr("Run:"), m_runValue);
    m_evalValue = valueLabel(QStringLiteral("evalValue"), box);
    form->addRow(tr("Eval loss:"), m_evalValue);
    m_memoryValue = valueLabel(QStringLiteral("memoryValue"), box);
    m_memoryValue->setToolTip(tr("Peak memory of the last step: the process's resident memory, and the GPUs' allocations"));
    form->addRow(tr("Memory:"), m_memoryValue);
    return box;
}

engine::train::TrainingParams TrainPage::params() const
{
    engine::train::TrainingParams params;
    params.modelPath = m_modelEdit->text().trimmed().toStdString();
    params.devicePlacement = m_placement;
    params.dataPath = m_corpusEdit->text().trimmed().toStdString();
    params.storePath = m_storePath.toStdString();
    params.steps = m_stepsSpin->value();
    params.learningRate = m_lrSpin->value();
    params.batchSize = m_batchSpin->value();
    params.sequenceLength = m_seqLenSpin->value();
    params.threads = m_threadsSpin->value();
    if (m_methodCombo->currentData().toString() == QStringLiteral("lora")) {
        params.method = engine::train::TrainingMethod::Lora;
        params.lora.r = m_loraRankSpin->value();
        params.lora.alpha = 2.0 * m_loraRankSpin->value();
        params.lora.setTargetsFromText(m_loraTargetsEdit->text().trimmed().toStdString());
    }
    params.valFraction = m_valFractionSpin->value();
    params.evalEvery = params.valFraction > 0 ? std::max<int64_t>(1, params.steps / 10) : 0;
    params.evalBatches = 16; // a held-out slice of a large corpus would otherwise cost more than the training
    params.saveEvery = m_saveEverySpin->value();
    params.samplePrompt = m_sampleEdit->text().toStdString();
    const QString precision = m_precisionCombo->currentData().toString();
    params.precision = precision == QStringLiteral("bf16")   ? engine::train::Precision::Bf16
                       : precision == QStringLiteral("fp16") ? engine::train::Precision::Fp16
                                                             : engine::train::Precision::Fp32;
    params.gradientCheckpointing = m_checkpointingCheck->isChecked();
    return params;
}

bool TrainPage::previewData()
{
    QString error;
    if (!m_bridge.startPreview(params(), &error)) {
        appendLog(engine::LogLevel::Error, tr("Cannot preview the data: %1").arg(error));
        Q_EMIT statusMessage(tr("Cannot preview the data: %1").arg(error), 15000);
        return false;
    }
    m_previewing = true;
    appendLog(engine::LogLevel::Info, tr("Reading and tokenizing the data…"));
    updateControls();
    return true;
}

bool TrainPage::start()
{
    const engine::train::TrainingParams p = params();
    QString error;
    const QString corpus = m_corpusEdit->text().trimmed();
    if (!corpus.isEmpty() && !QFileInfo(corpus).isFile())
        error = tr("Corpus: the file %1 does not exist.").arg(QDir::toNativeSeparators(corpus));
    else if (!corpus.isEmpty() && !QFileInfo(corpus).isReadable())
        error = tr("Corpus: the file %1 cannot be read.").arg(QDir::toNativeSeparators(corpus));
    if (!error.isEmpty() || !m_bridge.startTraining(p, &error)) {
        appendLog(engine::LogLevel::Error, tr("Cannot start: %1").arg(error));
        Q_EMIT statusMessage(tr("Cannot start: %1").arg(error), 15000);
        return false;
    }

    saveFields();
    m_totalSteps = p.steps;
    m_plot->clear();
    m_plot->setTotalSteps(p.steps);
    m_progressBar->setRange(0, static_cast<int>(p.steps));
    m_progressBar->setValue(0);
    m_progressBar->setFormat(tr("Starting…"));
    for (QLabel *label : {m_lossValue, m_smoothedValue, m_lrValue, m_gradNormValue, m_speedValue, m_elapsedValue, m_runValue,
                          m_evalValue, m_memoryValue})
        label->setText(QStringLiteral("–"));
    m_nonFiniteStep.clear();
    m_inspectButton->hide();
    appendLog(engine::LogLevel::Info,
              tr("Starting: %1 steps, batch %2 × %3 tokens, learning rate %4, %5 threads, on %6")
                  .arg(p.steps)
                  .arg(p.batchSize)
                  .arg(p.sequenceLength)
                  .arg(p.learningRate)
                  .arg(p.threads)
                  .arg(corpus.isEmpty() ? tr("the bundled demo corpus") : QDir::toNativeSeparators(corpus)));
    setState(tr("Starting"));
    Q_EMIT progressChanged(0, m_totalSteps, 0);
    updateControls();
    return true;
}

void TrainPage::togglePause()
{
    if (!m_bridge.isBusy())
        return;
    const bool pause = !m_bridge.isPaused();
    m_bridge.pause(pause);
    appendLog(engine::LogLevel::Info, pause ? tr("Paused after the current step.") : tr("Resumed."));
}

void TrainPage::stop()
{
    if (!m_bridge.isBusy() || m_bridge.isCancelling())
        return;
    m_bridge.cancel();
    appendLog(engine::LogLevel::Info, tr("Stopping after the current step…"));
    setState(tr("Stopping"));
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
    if (batch.isEmpty())
        return;
    for (const engine::train::StepMetrics &m : batch) {
        if (m.step > 0) // step 0 carries only the eval loss before training
            m_plot->addPoint(static_cast<double>(m.step), m.loss);
        if (m.evaluated)
            m_plot->addEvalPoint(static_cast<double>(m.step), m.evalLoss);
    }
    m_plot->replot();

    const engine::train::StepMetrics &last = batch.back();
    if (last.totalSteps > 0 && last.totalSteps != m_totalSteps) {
        m_totalSteps = last.totalSteps;
        m_plot->setTotalSteps(m_totalSteps);
    }
    m_progressBar->setRange(0, static_cast<int>(std::max<qint64>(m_totalSteps, 1)));
    m_progressBar->setValue(static_cast<int>(std::min<qint64>(last.step, m_totalSteps)));
    m_progressBar->setFormat(tr("Step %1 of %2 · %3 left").arg(last.step).arg(m_totalSteps).arg(formatDuration(last.etaSeconds)));

    m_lossValue->setText(formatNumber(m_plot->lastRawLoss()));
    m_smoothedValue->setText(formatNumber(m_plot->lastSmoothedLoss()));
    m_lrValue->setText(formatNumber(last.learningRate, 3));
    m_gradNormValue->setText(formatNumber(last.gradNorm, 3));
    m_speedValue->setText(tr("%1 tokens/s").arg(QLocale().toString(last.tokensPerSecond, 'f', 0)));
    m_elapsedValue->setText(formatDuration(last.wallSeconds));
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
            m_evalValue->setText(tr("%1 (perplexity %2) at step %3").arg(formatNumber(m.evalLoss)).arg(formatNumber(m.evalPerplexity, 4)).arg(m.step));
    }
    Q_EMIT progressChanged(last.step, m_totalSteps, last.tokensPerSecond);
}

void TrainPage::onJobFinished(const app::JobOutcome &outcome)
{
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
        if (!outcome.nonFiniteStepPath.isEmpty()) {
            // The NaN guard kept the step: one click records it on the Inspect page.
            m_nonFiniteStep = outcome.nonFiniteStepPath;
            const QString step = QFileInfo(m_nonFiniteStep).fileName().section(QLatin1Char('-'), -1); // nonfinite-step-<N>
            m_inspectButton->setText(tr("&Inspect Step %1: Where Did NaN First Appear?").arg(step));
            m_inspectButton->show();
        }
        break;
    }
    updateControls();
}

void TrainPage::updateControls()
{
    const bool busy = m_bridge.isBusy();
    const bool cancelling = m_bridge.isCancelling();
    m_startButton->setEnabled(!busy);
    m_previewButton->setEnabled(!busy);
    m_pauseButton->setEnabled(busy && !cancelling);
    m_stopButton->setEnabled(busy && !cancelling);
    m_pauseButton->setText(m_bridge.isPaused() ? tr("&Resume") : tr("&Pause"));
    for (QWidget *field : std::initializer_list<QWidget *>{m_modelEdit, m_corpusEdit, m_browseButton, m_stepsSpin, m_lrSpin,
                                                           m_batchSpin, m_seqLenSpin, m_threadsSpin, m_methodCombo,
                                                           m_valFractionSpin, m_saveEverySpin, m_sampleEdit,
                                                           m_precisionCombo, m_checkpointingCheck})
        field->setEnabled(!busy);
    const bool lora = m_methodCombo->currentData().toString() == QStringLiteral("lora");
    m_loraRankSpin->setEnabled(!busy && lora);
    m_loraTargetsEdit->setEnabled(!busy && lora);
}

void TrainPage::setState(const QString &state)
{
    if (state == m_stateText)
        return;
    m_stateText = state;
    Q_EMIT stateChanged(state);
}

void TrainPage::browseCorpus()
{
    const QString start = m_corpusEdit->text().isEmpty() ? QDir::homePath() : QFileInfo(m_corpusEdit->text()).absolutePath();
    const QString file = QFileDialog::getOpenFileName(this, tr("Choose a Text Corpus"), start,
                                                      tr("Text files (*.txt);;All files (*)"));
    if (!file.isEmpty())
        m_corpusEdit->setText(file);
}

void TrainPage::loadFields()
{
    QSettings settings;
    settings.beginGroup(QStringLiteral("TrainPage"));
    m_modelEdit->setText(settings.value(QStringLiteral("model"), m_modelEdit->text()).toString());
    m_corpusEdit->setText(settings.value(QStringLiteral("corpus"), m_corpusEdit->text()).toString());
    m_stepsSpin->setValue(settings.value(QStringLiteral("steps"), m_stepsSpin->value()).toInt());
    m_lrSpin->setValue(settings.value(QStringLiteral("learningRate"), m_lrSpin->value()).toDouble());
    m_batchSpin->setValue(settings.value(QStringLiteral("batchSize"), m_batchSpin->value()).toInt());
    m_seqLenSpin->setValue(settings.value(QStringLiteral("sequenceLength"), m_seqLenSpin->value()).toInt());
    m_threadsSpin->setValue(settings.value(QStringLiteral("threads"), m_threadsSpin->value()).toInt());
}

void TrainPage::saveFields() const
{
    QSettings settings;
    settings.beginGroup(QStringLiteral("TrainPage"));
    settings.setValue(QStringLiteral("model"), m_modelEdit->text());
    settings.setValue(QStringLiteral("corpus"), m_corpusEdit->text());
    settings.setValue(QStringLiteral("steps"), m_stepsSpin->value());
    settings.setValue(QStringLiteral("learningRate"), m_lrSpin->value());
    settings.setValue(QStringLiteral("batchSize"), m_batchSpin->value());
    settings.setValue(QStringLiteral("sequenceLength"), m_seqLenSpin->value());
    settings.setValue(QStringLiteral("threads"), m_threadsSpin->value());
}

} // namespace ui
