#include "ui/pages/trainsettingsform.h"

#include "app/bridge/enginebridge.h"
#include "app/bridge/runconfig.h"
#include "engine/core/threads.h"

#include <QCheckBox>
#include <QComboBox>
#include <QDir>
#include <QDoubleSpinBox>
#include <QEvent>
#include <QFileDialog>
#include <QFileInfo>
#include <QFormLayout>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QInputDialog>
#include <QLabel>
#include <QLineEdit>
#include <QMenu>
#include <QPushButton>
#include <QRegularExpression>
#include <QRegularExpressionValidator>
#include <QSettings>
#include <QSpinBox>
#include <QTabBar>
#include <QTabWidget>
#include <QToolButton>
#include <QVBoxLayout>

#include <algorithm>
#include <cmath>
#include <limits>

namespace ui {
namespace {

using engine::train::TrainingParams;

const QString kRecentKey = QStringLiteral("TrainPage/recentModels");
const QString kPresetsKey = QStringLiteral("TrainPage/presets");

/// A spin box for values across many orders of magnitude (learning rates): shows "0.003", "2e-05"
/// and takes what the locale reads as a number.
class NumberSpinBox : public QDoubleSpinBox {
public:
    explicit NumberSpinBox(QWidget *parent) : QDoubleSpinBox(parent) { setDecimals(15); }

    QString textFromValue(double value) const override { return locale().toString(value, 'g', 6); }

    double valueFromText(const QString &text) const override
    {
        bool ok = false;
        const double value = locale().toDouble(text.trimmed(), &ok);
        return ok ? value : this->value();
    }

    QValidator::State validate(QString &text, int &) const override
    {
        const QString trimmed = text.trimmed();
        if (trimmed.isEmpty())
            return QValidator::Intermediate;
        bool ok = false;
        const double value = locale().toDouble(trimmed, &ok);
        if (ok)
            return value >= minimum() && value <= maximum() ? QValidator::Acceptable : QValidator::Intermediate;
        // A number being typed: "1e", "2e-", ".".
        static const QRegularExpression partial(QStringLiteral("^[-+]?[0-9]*[.,]?[0-9]*([eE][-+]?[0-9]*)?$"));
        return partial.match(trimmed).hasMatch() ? QValidator::Intermediate : QValidator::Invalid;
    }
};

QSpinBox *spin(const char *name, int low, int high, int value, QWidget *parent)
{
    auto *box = new QSpinBox(parent);
    box->setObjectName(QString::fromLatin1(name));
    box->setRange(low, high);
    box->setValue(value);
    return box;
}

QDoubleSpinBox *doubleSpin(const char *name, double low, double high, double step, int decimals, double value, QWidget *parent)
{
    auto *box = new QDoubleSpinBox(parent);
    box->setObjectName(QString::fromLatin1(name));
    box->setDecimals(decimals);
    box->setRange(low, high);
    box->setSingleStep(step);
    box->setValue(value);
    return box;
}

QComboBox *choices(const char *name, const QList<std::pair<QString, QString>> &items, QWidget *parent)
{
    auto *combo = new QComboBox(parent);
    combo->setObjectName(QString::fromLatin1(name));
    for (const auto &[text, data] : items)
        combo->addItem(text, data);
    return combo;
}

void select(QComboBox *combo, const QString &data)
{
    const int index = combo->findData(data);
    if (index >= 0)
        combo->setCurrentIndex(index);
}

int clampToInt(int64_t value, const QSpinBox *box)
{
    return static_cast<int>(std::clamp<int64_t>(value, box->minimum(), box->maximum()));
}

QString joined(const std::vector<std::string> &names)
{
    QStringList list;
    for (const std::string &name : names)
        list << QString::fromStdString(name);
    return list.join(QLatin1Char(','));
}

/// The built-in presets: hyperparameters only (the paths, threads and device stay as they are).
QList<std::pair<QString, TrainingParams>> builtinPresets()
{
    using engine::train::TrainingMethod;
    TrainingParams quick;
    quick.method = TrainingMethod::Lora;
    quick.lora.r = 8;
    quick.lora.alpha = 16;
    quick.lora.targets = {"q_proj", "k_proj", "v_proj", "o_proj"};
    quick.steps = 20;
    quick.learningRate = 3e-3;
    quick.batchSize = 4;
    quick.sequenceLength = 64;
    quick.evalBatches = 16;

    TrainingParams full;
    full.steps = 1000;
    full.learningRate = 2e-5;
    full.batchSize = 8;
    full.sequenceLength = 512;
    full.valFraction = 0.05;
    full.evalEvery = 100;
    full.evalBatches = 16;
    full.saveEvery = 250;

    TrainingParams lora = full; // the same run, adapters on a frozen base at a higher rate
    lora.method = TrainingMethod::Lora;
    lora.lora.r = 16;
    lora.lora.alpha = 32;
    lora.lora.targets = {"q_proj", "k_proj", "v_proj", "o_proj"};
    lora.learningRate = 2e-4;

    return {{QObject::tr("Quick LoRA test"), quick}, {QObject::tr("LoRA"), lora}, {QObject::tr("Full fine-tune"), full}};
}

} // namespace

TrainSettingsForm::TrainSettingsForm(QWidget *parent) : QWidget(parent)
{
    auto *layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->addWidget(createPresetRow());

    m_tabs = new QTabWidget(this);
    m_tabs->setObjectName(QStringLiteral("settingsTabs"));
    m_tabs->setDocumentMode(false);
    m_tabs->setUsesScrollButtons(false);
    m_tabs->addTab(createBasicsTab(), tr("Basics"));
    m_tabs->addTab(createLoraTab(), tr("LoRA"));
    m_tabs->addTab(createOptimizerTab(), tr("Optimizer"));
    m_tabs->addTab(createEvalTab(), tr("Eval && Save"));
    m_tabs->addTab(createHardwareTab(), tr("Hardware"));
    layout->addWidget(m_tabs);

    m_validationLabel = new QLabel(this);
    m_validationLabel->setObjectName(QStringLiteral("validationLabel"));
    m_validationLabel->setWordWrap(true);
    m_validationLabel->setTextInteractionFlags(Qt::TextSelectableByMouse);
    m_validationLabel->hide();
    layout->addWidget(m_validationLabel);

    m_recent = QSettings().value(kRecentKey).toStringList();
    updateRecentMenu();
    loadUserPresets();
    rebuildPresetCombo();
    updateEnabled();
    revalidate();
}

QWidget *TrainSettingsForm::createPresetRow()
{
    auto *row = new QWidget(this);
    auto *layout = new QHBoxLayout(row);
    layout->setContentsMargins(0, 0, 0, 0);
    m_presetCombo = new QComboBox(row);
    m_presetCombo->setObjectName(QStringLiteral("presetCombo"));
    m_presetCombo->setToolTip(tr("Fill the settings from a preset; the model, data, threads and device stay"));
    m_presetCombo->setSizeAdjustPolicy(QComboBox::AdjustToMinimumContentsLengthWithIcon);
    m_presetCombo->setMinimumContentsLength(12);
    auto *label = new QLabel(tr("Pre&set:"), row);
    label->setBuddy(m_presetCombo);
    connect(m_presetCombo, &QComboBox::activated, this, [this](int index) {
        const QString name = m_presetCombo->itemData(index).toString();
        if (!name.isEmpty())
            applyPreset(name);
    });
    m_savePresetButton = new QPushButton(tr("Sa&ve Preset…"), row);
    m_savePresetButton->setObjectName(QStringLiteral("savePresetButton"));
    m_savePresetButton->setToolTip(tr("Keep these settings (without the paths) as a preset of your own"));
    connect(m_savePresetButton, &QPushButton::clicked, this, [this] {
        bool ok = false;
        const QString current = m_presetCombo->currentData().toString();
        const QString name = QInputDialog::getText(this, tr("Save Preset"), tr("Name of the preset:"), QLineEdit::Normal,
                                                   presetNames().mid(builtinPresets().size()).contains(current) ? current : QString(), &ok);
        if (!ok)
            return;
        QString error;
        if (!savePreset(name, &error))
            Q_EMIT statusMessage(tr("Preset not saved: %1").arg(error), 10000);
    });
    m_deletePresetButton = new QPushButton(tr("Delete"), row);
    m_deletePresetButton->setObjectName(QStringLiteral("deletePresetButton"));
    m_deletePresetButton->setToolTip(tr("Delete the chosen preset of your own"));
    connect(m_deletePresetButton, &QPushButton::clicked, this, [this] { deletePreset(m_presetCombo->currentData().toString()); });
    connect(m_presetCombo, &QComboBox::currentIndexChanged, this, [this] { updateEnabled(); });
    layout->addWidget(label);
    layout->addWidget(m_presetCombo, 1);
    layout->addWidget(m_savePresetButton);
    layout->addWidget(m_deletePresetButton);
    return row;
}

void TrainSettingsForm::addRow(QFormLayout *form, const QString &label, QWidget *field, QLayout *fieldLayout)
{
    auto *labelWidget = new QLabel(label, form->parentWidget());
    labelWidget->setBuddy(field);
    if (fieldLayout)
        form->addRow(labelWidget, fieldLayout);
    else
        form->addRow(labelWidget, field);
    QString plain = label;
    plain.remove(QLatin1Char('&'));
    if (plain.endsWith(QLatin1Char(':')))
        plain.chop(1);
    m_labels.insert(field, plain);
    m_tabOf.insert(field, m_tabs->count()); // the tab being built is added next
    watch(field);
}

void TrainSettingsForm::watch(QWidget *field)
{
    m_fields << field;
    if (auto *edit = qobject_cast<QLineEdit *>(field))
        connect(edit, &QLineEdit::textChanged, this, &TrainSettingsForm::revalidate);
    else if (auto *box = qobject_cast<QSpinBox *>(field))
        connect(box, &QSpinBox::valueChanged, this, &TrainSettingsForm::revalidate);
    else if (auto *box = qobject_cast<QDoubleSpinBox *>(field))
        connect(box, &QDoubleSpinBox::valueChanged, this, &TrainSettingsForm::revalidate);
    else if (auto *combo = qobject_cast<QComboBox *>(field)) {
        connect(combo, &QComboBox::currentIndexChanged, this, &TrainSettingsForm::revalidate);
        if (combo->isEditable())
            connect(combo, &QComboBox::editTextChanged, this, &TrainSettingsForm::revalidate);
    } else if (auto *check = qobject_cast<QCheckBox *>(field))
        connect(check, &QCheckBox::toggled, this, &TrainSettingsForm::revalidate);
}

QLineEdit *TrainSettingsForm::pathEdit(const char *name, const QString &placeholder, const QString &tip)
{
    auto *edit = new QLineEdit(this);
    edit->setObjectName(QString::fromLatin1(name));
    edit->setPlaceholderText(placeholder);
    edit->setClearButtonEnabled(true);
    edit->setToolTip(tip);
    return edit;
}

QPushButton *TrainSettingsForm::browseButton(const char *name, QLineEdit *edit, bool folder, const QString &title)
{
    auto *button = new QPushButton(tr("Browse…"), this);
    button->setObjectName(QString::fromLatin1(name));
    button->setToolTip(title);
    connect(button, &QPushButton::clicked, this, [this, edit, folder, title] {
        const QString current = edit->text().trimmed();
        const QString start = current.isEmpty() ? QDir::homePath() : QFileInfo(current).absolutePath();
        const QString path = folder ? QFileDialog::getExistingDirectory(this, title, start)
                                    : QFileDialog::getOpenFileName(this, title, start);
        if (!path.isEmpty())
            edit->setText(path);
    });
    m_fields << button;
    return button;
}

QWidget *TrainSettingsForm::createBasicsTab()
{
    auto *tab = new QWidget(this);
    auto *form = new QFormLayout(tab);

    m_runNameEdit = pathEdit("runNameEdit", tr("From the model and data names"), tr("The run's name on the Runs page"));
    addRow(form, tr("R&un name:"), m_runNameEdit);

    m_modelEdit = pathEdit("modelEdit", tr("Built-in demo model (LLaMA, 2 M parameters)"),
                           tr("A model folder (config.json, with weights to fine-tune) or a config.json; leave empty "
                              "for the demo model. Drop a folder on the page to use it."));
    m_modelBrowseButton = new QPushButton(tr("&Open…"), tab);
    m_modelBrowseButton->setObjectName(QStringLiteral("modelBrowseButton"));
    m_modelBrowseButton->setToolTip(tr("Choose a model folder (Ctrl+O)"));
    connect(m_modelBrowseButton, &QPushButton::clicked, this, &TrainSettingsForm::browseModel);
    m_recentButton = new QToolButton(tab);
    m_recentButton->setObjectName(QStringLiteral("recentModelsButton"));
    m_recentButton->setText(tr("Recent"));
    m_recentButton->setToolTip(tr("Model folders used lately"));
    m_recentButton->setPopupMode(QToolButton::InstantPopup);
    m_recentMenu = new QMenu(m_recentButton);
    m_recentMenu->setObjectName(QStringLiteral("recentModelsMenu"));
    m_recentButton->setMenu(m_recentMenu);
    auto *modelRow = new QHBoxLayout;
    modelRow->addWidget(m_modelEdit, 1);
    modelRow->addWidget(m_modelBrowseButton);
    modelRow->addWidget(m_recentButton);
    addRow(form, tr("&Model:"), m_modelEdit, modelRow);
    m_fields << m_modelBrowseButton << m_recentButton;
    m_placementLabel = new QLabel(tab);
    m_placementLabel->setObjectName(QStringLiteral("placementLabel"));
    m_placementLabel->setWordWrap(true);
    m_placementLabel->hide();
    form->addRow(m_placementLabel);
    connect(m_modelEdit, &QLineEdit::textChanged, this, [this](const QString &text) {
        // A device map belongs to its model: editing the model drops it.
        if (!m_placement.empty() && text.trimmed() != m_placementModel)
            setPlacement({}, {}, {});
    });

    m_corpusEdit = pathEdit("corpusEdit", tr("Bundled demo corpus (Moby-Dick)"),
                            tr("Training data: a UTF-8 text file, or JSONL with text, prompt/completion, messages or "
                               "input_ids; leave empty for the bundled demo corpus"));
    auto *corpusRow = new QHBoxLayout;
    corpusRow->addWidget(m_corpusEdit, 1);
    corpusRow->addWidget(browseButton("browseButton", m_corpusEdit, false, tr("Choose the Training Data")));
    addRow(form, tr("&Data:"), m_corpusEdit, corpusRow);

    m_tokenizerEdit = pathEdit("tokenizerEdit", tr("The model's, else trained on the data"),
                               tr("A tokenizer.json or SentencePiece tokenizer.model; leave empty for the model folder's "
                                  "(tokenizer.json first), or one trained on the data"));
    auto *tokenizerRow = new QHBoxLayout;
    tokenizerRow->addWidget(m_tokenizerEdit, 1);
    tokenizerRow->addWidget(browseButton("tokenizerBrowseButton", m_tokenizerEdit, false, tr("Choose a Tokenizer")));
    addRow(form, tr("To&kenizer:"), m_tokenizerEdit, tokenizerRow);

    m_methodCombo = choices("methodCombo", {{tr("Full fine-tuning"), QStringLiteral("full")},
                                            {tr("LoRA (adapters on a frozen base)"), QStringLiteral("lora")}}, tab);
    m_methodCombo->setToolTip(tr("LoRA trains small adapters (see the LoRA tab) and needs a model folder with weights"));
    addRow(form, tr("M&ethod:"), m_methodCombo);

    m_stepsSpin = spin("stepsSpin", 0, 100'000'000, 300, tab);
    m_stepsSpin->setToolTip(tr("Optimizer steps to run (unless epochs are set)"));
    addRow(form, tr("S&teps:"), m_stepsSpin);
    m_lrSpin = new NumberSpinBox(tab);
    m_lrSpin->setObjectName(QStringLiteral("lrSpin"));
    m_lrSpin->setRange(0, 10);
    m_lrSpin->setSingleStep(0.0005);
    m_lrSpin->setValue(0.003);
    m_lrSpin->setToolTip(tr("Peak learning rate (after the warmup; see the Optimizer tab for the schedule)"));
    addRow(form, tr("&Learning rate:"), m_lrSpin);
    m_batchSpin = spin("batchSpin", 0, 65536, 8, tab);
    m_batchSpin->setToolTip(tr("Sequences per micro-batch"));
    addRow(form, tr("&Batch size:"), m_batchSpin);
    m_seqLenSpin = spin("seqLenSpin", 1, 1 << 20, 128, tab);
    m_seqLenSpin->setSingleStep(16);
    m_seqLenSpin->setSuffix(tr(" tokens"));
    m_seqLenSpin->setToolTip(tr("Tokens per training sequence"));
    addRow(form, tr("Se&quence length:"), m_seqLenSpin);
    return tab;
}

QWidget *TrainSettingsForm::createLoraTab()
{
    auto *tab = new QWidget(this);
    auto *form = new QFormLayout(tab);
    m_loraRankSpin = spin("loraRankSpin", 0, 65536, 8, tab);
    m_loraRankSpin->setToolTip(tr("LoRA rank r"));
    addRow(form, tr("&Rank:"), m_loraRankSpin);
    m_loraAlphaSpin = doubleSpin("loraAlphaSpin", 0, 1e6, 1, 2, 16, tab);
    m_loraAlphaSpin->setToolTip(tr("LoRA alpha: the update is scaled by alpha / r (alpha / √r with rsLoRA)"));
    addRow(form, tr("&Alpha:"), m_loraAlphaSpin);
    m_loraDropoutSpin = doubleSpin("loraDropoutSpin", 0, 1, 0.05, 2, 0.05, tab);
    m_loraDropoutSpin->setToolTip(tr("Dropout on the adapters' input"));
    addRow(form, tr("&Dropout:"), m_loraDropoutSpin);
    m_loraTargetsEdit = new QLineEdit(QStringLiteral("q_proj,v_proj"), tab);
    m_loraTargetsEdit->setObjectName(QStringLiteral("loraTargetsEdit"));
    m_loraTargetsEdit->setToolTip(tr("Modules to adapt: names as PEFT matches them (q_proj,v_proj) or a regex over the "
                                     "full module name"));
    addRow(form, tr("Tar&gets:"), m_loraTargetsEdit);
    m_modulesToSaveEdit = new QLineEdit(tab);
    m_modulesToSaveEdit->setObjectName(QStringLiteral("modulesToSaveEdit"));
    m_modulesToSaveEdit->setPlaceholderText(tr("None"));
    m_modulesToSaveEdit->setToolTip(tr("Modules trained in full and saved in the adapter, e.g. lm_head (PEFT's "
                                       "modules_to_save)"));
    addRow(form, tr("&Modules to save:"), m_modulesToSaveEdit);
    m_rsloraCheck = new QCheckBox(tr("Rank-stabilised (rsLoRA: alpha / √r)"), tab);
    m_rsloraCheck->setObjectName(QStringLiteral("rsloraCheck"));
    m_tabOf.insert(m_rsloraCheck, m_tabs->count());
    form->addRow(QString(), m_rsloraCheck);
    watch(m_rsloraCheck);
    return tab;
}

QWidget *TrainSettingsForm::createOptimizerTab()
{
    auto *tab = new QWidget(this);
    auto *form = new QFormLayout(tab);
    m_optimizerCombo = choices("optimizerCombo", {{tr("AdamW"), QStringLiteral("adamw")},
                                                  {tr("SGD with momentum"), QStringLiteral("sgd")}}, tab);
    addRow(form, tr("O&ptimizer:"), m_optimizerCombo);
    m_momentumSpin = doubleSpin("momentumSpin", 0, 0.999, 0.01, 3, TrainingParams().momentum, tab);
    m_momentumSpin->setToolTip(tr("SGD's momentum (AdamW does not use it)"));
    addRow(form, tr("&Momentum:"), m_momentumSpin);
    connect(m_optimizerCombo, &QComboBox::currentIndexChanged, m_momentumSpin,
            [this] { m_momentumSpin->setEnabled(m_optimizerCombo->currentData().toString() == QStringLiteral("sgd")); });
    m_momentumSpin->setEnabled(false);
    m_scheduleCombo = choices("scheduleCombo", {{tr("Cosine decay"), QStringLiteral("cosine")},
                                                {tr("Linear decay"), QStringLiteral("linear")},
                                                {tr("Constant"), QStringLiteral("constant")}}, tab);
    m_scheduleCombo->setToolTip(tr("The learning rate after the warmup"));
    addRow(form, tr("&Schedule:"), m_scheduleCombo);
    m_warmupSpin = spin("warmupSpin", -1, 100'000'000, -1, tab);
    m_warmupSpin->setSpecialValueText(tr("10 % of the steps"));
    m_warmupSpin->setToolTip(tr("Steps of linear warmup to the peak learning rate"));
    addRow(form, tr("&Warmup steps:"), m_warmupSpin);
    m_minLrRatioSpin = doubleSpin("minLrRatioSpin", 0, 10, 0.05, 3, 0.1, tab);
    m_minLrRatioSpin->setToolTip(tr("The decay ends at this fraction of the peak learning rate"));
    addRow(form, tr("Mi&n learning rate:"), m_minLrRatioSpin);
    m_weightDecaySpin = doubleSpin("weightDecaySpin", 0, 100, 0.01, 4, 0.1, tab);
    m_weightDecaySpin->setToolTip(tr("AdamW's decoupled weight decay (not on norms and biases)"));
    addRow(form, tr("Weight &decay:"), m_weightDecaySpin);
    m_gradClipSpin = doubleSpin("gradClipSpin", 0, 1e9, 0.1, 3, 1.0, tab);
    m_gradClipSpin->setSpecialValueText(tr("off"));
    m_gradClipSpin->setToolTip(tr("Clip the gradient norm to this (0 = off; the norm is still measured)"));
    addRow(form, tr("&Gradient clip:"), m_gradClipSpin);
    m_gradAccumSpin = spin("gradAccumSpin", 0, 65536, 1, tab);
    m_gradAccumSpin->setToolTip(tr("Micro-batches of the batch size per optimizer step"));
    addRow(form, tr("Accu&mulation:"), m_gradAccumSpin);
    m_epochsSpin = spin("epochsSpin", 0, 1'000'000, 0, tab);
    m_epochsSpin->setSpecialValueText(tr("use the steps"));
    m_epochsSpin->setToolTip(tr("Passes over the data; sets the number of steps"));
    addRow(form, tr("&Epochs:"), m_epochsSpin);
    m_seedEdit = new QLineEdit(QStringLiteral("1234"), tab);
    m_seedEdit->setObjectName(QStringLiteral("seedEdit"));
    m_seedEdit->setValidator(new QRegularExpressionValidator(QRegularExpression(QStringLiteral("[0-9]{0,19}")), m_seedEdit));
    m_seedEdit->setToolTip(tr("Random seed (initialisation, data order, dropout)"));
    addRow(form, tr("See&d:"), m_seedEdit);
    return tab;
}

QWidget *TrainSettingsForm::createEvalTab()
{
    auto *tab = new QWidget(this);
    auto *layout = new QVBoxLayout(tab);
    auto *evalBox = new QGroupBox(tr("Evaluation"), tab);
    auto *form = new QFormLayout(evalBox);
    m_evalDataEdit = pathEdit("evalDataEdit", tr("None: hold out a fraction"), tr("A second data file for eval loss and perplexity"));
    auto *evalRow = new QHBoxLayout;
    evalRow->addWidget(m_evalDataEdit, 1);
    evalRow->addWidget(browseButton("evalDataBrowseButton", m_evalDataEdit, false, tr("Choose the Eval Data")));
    addRow(form, tr("E&val data:"), m_evalDataEdit, evalRow);
    m_valFractionSpin = doubleSpin("valFractionSpin", 0, 0.9, 0.05, 2, 0.05, evalBox);
    m_valFractionSpin->setToolTip(tr("Fraction of the data held out for eval loss and perplexity (0 = none)"));
    addRow(form, tr("&Validation:"), m_valFractionSpin);
    m_evalEverySpin = spin("evalEverySpin", 0, 100'000'000, 0, evalBox);
    m_evalEverySpin->setSpecialValueText(tr("at the end"));
    m_evalEverySpin->setPrefix(tr("every "));
    m_evalEverySpin->setSuffix(tr(" steps"));
    addRow(form, tr("Eval&uate:"), m_evalEverySpin);
    m_evalBatchesSpin = spin("evalBatchesSpin", 0, 100'000'000, 16, evalBox);
    m_evalBatchesSpin->setSpecialValueText(tr("the whole eval set"));
    m_evalBatchesSpin->setToolTip(tr("Batches per evaluation"));
    addRow(form, tr("Eval &batches:"), m_evalBatchesSpin);
    m_sampleEdit = new QLineEdit(evalBox);
    m_sampleEdit->setObjectName(QStringLiteral("sampleEdit"));
    m_sampleEdit->setPlaceholderText(tr("No sample"));
    m_sampleEdit->setToolTip(tr("A prompt: the log shows its greedy continuation before and after training"));
    addRow(form, tr("Sam&ple prompt:"), m_sampleEdit);
    m_sampleTokensSpin = spin("sampleTokensSpin", 0, 100'000, 40, evalBox);
    m_sampleTokensSpin->setSuffix(tr(" tokens"));
    addRow(form, tr("Sample &length:"), m_sampleTokensSpin);
    layout->addWidget(evalBox);

    auto *saveBox = new QGroupBox(tr("Checkpoints and output"), tab);
    auto *saveForm = new QFormLayout(saveBox);
    m_saveEverySpin = spin("saveEverySpin", 0, 100'000'000, 0, saveBox);
    m_saveEverySpin->setSpecialValueText(tr("at stop only"));
    m_saveEverySpin->setToolTip(tr("A checkpoint every N steps (one is always written when the run stops); continue "
                                   "with tunebench train --resume RUN"));
    addRow(saveForm, tr("Check&points:"), m_saveEverySpin);
    m_keepSpin = spin("keepSpin", 0, 1'000'000, 3, saveBox);
    m_keepSpin->setSpecialValueText(tr("all"));
    m_keepSpin->setToolTip(tr("Keep the last K checkpoints"));
    addRow(saveForm, tr("&Keep:"), m_keepSpin);
    m_outputEdit = pathEdit("outputEdit", tr("The run's own folder"), tr("Folder for the run's files (checkpoints, "
                                                                         "plot, model or adapter)"));
    auto *outputRow = new QHBoxLayout;
    outputRow->addWidget(m_outputEdit, 1);
    outputRow->addWidget(browseButton("outputBrowseButton", m_outputEdit, true, tr("Choose the Output Folder")));
    addRow(saveForm, tr("&Output:"), m_outputEdit, outputRow);
    m_saveModelCheck = new QCheckBox(tr("Save the trained model or adapter"), saveBox);
    m_saveModelCheck->setObjectName(QStringLiteral("saveModelCheck"));
    m_saveModelCheck->setChecked(true);
    m_tabOf.insert(m_saveModelCheck, m_tabs->count());
    saveForm->addRow(QString(), m_saveModelCheck);
    watch(m_saveModelCheck);
    m_badLinesCombo = choices("badLinesCombo", {{tr("stop the run"), QStringLiteral("stop")},
                                                {tr("skip and count"), QStringLiteral("skip")}}, saveBox);
    m_badLinesCombo->setToolTip(tr("What a malformed JSONL line does"));
    addRow(saveForm, tr("Bad &lines:"), m_badLinesCombo);
    m_nonFiniteCombo = choices("nonFiniteCombo", {{tr("stop the run"), QStringLiteral("stop")},
                                                  {tr("skip the step"), QStringLiteral("skip")}}, saveBox);
    m_nonFiniteCombo->setToolTip(tr("What a NaN or infinite loss or gradient does"));
    addRow(saveForm, tr("NaN lo&ss:"), m_nonFiniteCombo);
    m_guardCheck = new QCheckBox(tr("Guard each step for the inspector"), saveBox);
    m_guardCheck->setObjectName(QStringLiteral("guardCheck"));
    m_guardCheck->setToolTip(tr("Watch the tensors autograd saves: an in-place write that would break backward "
                                "stops the run before backward, and the step is kept for the Inspect page"));
    m_guardCheck->setChecked(true);
    m_tabOf.insert(m_guardCheck, m_tabs->count());
    saveForm->addRow(QString(), m_guardCheck);
    watch(m_guardCheck);
    layout->addWidget(saveBox);
    layout->addStretch(1);
    return tab;
}

QWidget *TrainSettingsForm::createHardwareTab()
{
    auto *tab = new QWidget(this);
    auto *form = new QFormLayout(tab);
    const int cores = engine::hardwareThreads();
    m_threadsSpin = spin("threadsSpin", 0, 4096, cores, tab);
    m_threadsSpin->setSpecialValueText(tr("all cores"));
    m_threadsSpin->setToolTip(tr("CPU threads for the math (this machine has %1); the default is in Preferences").arg(cores));
    addRow(form, tr("T&hreads:"), m_threadsSpin);
    m_deviceCombo = new QComboBox(tab);
    m_deviceCombo->setObjectName(QStringLiteral("deviceCombo"));
    m_deviceCombo->setEditable(true);
    m_deviceCombo->addItems({QStringLiteral("cpu"), QStringLiteral("cuda")});
    m_deviceCombo->setToolTip(tr("Where the model trains: cpu, cuda or cuda:N"));
    addRow(form, tr("De&vice:"), m_deviceCombo);
    m_deviceMapCombo = choices("deviceMapCombo", {{tr("None: all on the device"), QStringLiteral("none")},
                                                  {tr("Auto: plan on this machine"), QStringLiteral("auto")}}, tab);
    m_deviceMapCombo->setToolTip(tr("Split the model over GPUs, RAM and disk: planned here, or the Plan page's map"));
    addRow(form, tr("Device &map:"), m_deviceMapCombo);
    m_precisionCombo = choices("precisionCombo", {{tr("fp32"), QStringLiteral("fp32")},
                                                  {tr("bf16 (autocast)"), QStringLiteral("bf16")},
                                                  {tr("fp16 (autocast, loss scaling; CUDA)"), QStringLiteral("fp16")}}, tab);
    m_precisionCombo->setToolTip(tr("The arithmetic of forward and backward; weights and optimizer state stay fp32"));
    addRow(form, tr("Prec&ision:"), m_precisionCombo);
    m_checkpointingCheck = new QCheckBox(tr("Gradient checkpointing"), tab);
    m_checkpointingCheck->setObjectName(QStringLiteral("checkpointingCheck"));
    m_checkpointingCheck->setToolTip(tr("Recompute each decoder layer in backward instead of keeping its activations: "
                                        "less memory, about a third more compute"));
    m_tabOf.insert(m_checkpointingCheck, m_tabs->count());
    form->addRow(QString(), m_checkpointingCheck);
    watch(m_checkpointingCheck);
    connect(m_methodCombo, &QComboBox::currentIndexChanged, this, [this] { updateEnabled(); });
    return tab;
}

TrainingParams TrainSettingsForm::params() const
{
    using namespace engine::train;
    TrainingParams p;
    p.runName = m_runNameEdit->text().trimmed().toStdString();
    p.modelPath = m_modelEdit->text().trimmed().toStdString();
    p.dataPath = m_corpusEdit->text().trimmed().toStdString();
    p.tokenizerPath = m_tokenizerEdit->text().trimmed().toStdString();
    p.method = m_methodCombo->currentData().toString() == QStringLiteral("lora") ? TrainingMethod::Lora : TrainingMethod::Full;
    p.steps = m_stepsSpin->value();
    p.learningRate = m_lrSpin->value();
    p.batchSize = m_batchSpin->value();
    p.sequenceLength = m_seqLenSpin->value();

    p.lora.r = m_loraRankSpin->value();
    p.lora.alpha = m_loraAlphaSpin->value();
    p.lora.dropout = m_loraDropoutSpin->value();
    p.lora.setTargetsFromText(m_loraTargetsEdit->text().trimmed().toStdString());
    p.lora.rslora = m_rsloraCheck->isChecked();
    p.lora.modulesToSave.clear();
    if (const std::string modules = m_modulesToSaveEdit->text().trimmed().toStdString(); !modules.empty()) {
        engine::model::LoraSettings names; // the CLI reads --modules-to-save the same way
        names.setTargetsFromText(modules);
        p.lora.modulesToSave = names.targets;
    }

    p.optimizer = m_optimizerCombo->currentData().toString() == QStringLiteral("sgd") ? OptimizerKind::Sgd : OptimizerKind::AdamW;
    const QString schedule = m_scheduleCombo->currentData().toString();
    p.schedule = schedule == QStringLiteral("constant") ? ScheduleKind::Constant
                 : schedule == QStringLiteral("linear") ? ScheduleKind::Linear
                                                        : ScheduleKind::Cosine;
    p.warmupSteps = m_warmupSpin->value();
    p.minLearningRateRatio = m_minLrRatioSpin->value();
    p.weightDecay = m_weightDecaySpin->value();
    p.momentum = m_momentumSpin->value();
    p.gradClipNorm = m_gradClipSpin->value();
    p.gradAccumulation = m_gradAccumSpin->value();
    p.epochs = m_epochsSpin->value();
    p.seed = m_seedEdit->text().isEmpty() ? TrainingParams().seed : m_seedEdit->text().toULongLong();

    p.evalDataPath = m_evalDataEdit->text().trimmed().toStdString();
    p.valFraction = m_valFractionSpin->value();
    p.evalEvery = m_evalEverySpin->value();
    p.evalBatches = m_evalBatchesSpin->value();
    p.samplePrompt = m_sampleEdit->text().toStdString();
    p.sampleTokens = m_sampleTokensSpin->value();
    p.saveEvery = m_saveEverySpin->value();
    p.keepCheckpoints = m_keepSpin->value();
    p.outputDir = m_outputEdit->text().trimmed().toStdString();
    p.saveModel = m_saveModelCheck->isChecked();
    p.skipBadLines = m_badLinesCombo->currentData().toString() == QStringLiteral("skip");
    p.nonFinite = m_nonFiniteCombo->currentData().toString() == QStringLiteral("skip") ? NonFinitePolicy::Skip : NonFinitePolicy::Stop;

    p.threads = m_threadsSpin->value();
    p.device = m_deviceCombo->currentText().trimmed().toStdString();
    const QString map = m_deviceMapCombo->currentData().toString();
    p.autoDeviceMap = map == QStringLiteral("auto");
    if (map == QStringLiteral("given"))
        p.devicePlacement = m_placement;
    const QString precision = m_precisionCombo->currentData().toString();
    p.precision = precision == QStringLiteral("bf16")   ? Precision::Bf16
                  : precision == QStringLiteral("fp16") ? Precision::Fp16
                                                        : Precision::Fp32;
    p.gradientCheckpointing = m_checkpointingCheck->isChecked();
    p.inspectGuard = m_guardCheck->isChecked();
    return p;
}

void TrainSettingsForm::setParams(const TrainingParams &p)
{
    using namespace engine::train;
    m_filling = true;
    m_runNameEdit->setText(QString::fromStdString(p.runName));
    m_modelEdit->setText(QString::fromStdString(p.modelPath));
    m_corpusEdit->setText(QString::fromStdString(p.dataPath));
    m_tokenizerEdit->setText(QString::fromStdString(p.tokenizerPath));
    select(m_methodCombo, QString::fromLatin1(methodName(p.method)));
    m_stepsSpin->setValue(clampToInt(p.steps, m_stepsSpin));
    m_lrSpin->setValue(p.learningRate);
    m_batchSpin->setValue(clampToInt(p.batchSize, m_batchSpin));
    m_seqLenSpin->setValue(clampToInt(p.sequenceLength, m_seqLenSpin));

    m_loraRankSpin->setValue(clampToInt(p.lora.r, m_loraRankSpin));
    m_loraAlphaSpin->setValue(p.lora.alpha);
    m_loraDropoutSpin->setValue(p.lora.dropout);
    m_loraTargetsEdit->setText(p.lora.targetRegex.empty() ? joined(p.lora.targets) : QString::fromStdString(p.lora.targetRegex));
    m_rsloraCheck->setChecked(p.lora.rslora);
    m_modulesToSaveEdit->setText(joined(p.lora.modulesToSave));

    select(m_optimizerCombo, QString::fromLatin1(optimizerName(p.optimizer)));
    select(m_scheduleCombo, QString::fromLatin1(scheduleName(p.schedule)));
    m_warmupSpin->setValue(clampToInt(p.warmupSteps, m_warmupSpin));
    m_minLrRatioSpin->setValue(p.minLearningRateRatio);
    m_weightDecaySpin->setValue(p.weightDecay);
    m_momentumSpin->setValue(p.momentum);
    m_gradClipSpin->setValue(p.gradClipNorm);
    m_gradAccumSpin->setValue(clampToInt(p.gradAccumulation, m_gradAccumSpin));
    m_epochsSpin->setValue(clampToInt(p.epochs, m_epochsSpin));
    m_seedEdit->setText(QString::number(p.seed));

    m_evalDataEdit->setText(QString::fromStdString(p.evalDataPath));
    m_valFractionSpin->setValue(p.valFraction);
    m_evalEverySpin->setValue(clampToInt(p.evalEvery, m_evalEverySpin));
    m_evalBatchesSpin->setValue(clampToInt(p.evalBatches, m_evalBatchesSpin));
    m_sampleEdit->setText(QString::fromStdString(p.samplePrompt));
    m_sampleTokensSpin->setValue(clampToInt(p.sampleTokens, m_sampleTokensSpin));
    m_saveEverySpin->setValue(clampToInt(p.saveEvery, m_saveEverySpin));
    m_keepSpin->setValue(clampToInt(p.keepCheckpoints, m_keepSpin));
    m_outputEdit->setText(QString::fromStdString(p.outputDir));
    m_saveModelCheck->setChecked(p.saveModel);
    select(m_badLinesCombo, p.skipBadLines ? QStringLiteral("skip") : QStringLiteral("stop"));
    select(m_nonFiniteCombo, p.nonFinite == NonFinitePolicy::Skip ? QStringLiteral("skip") : QStringLiteral("stop"));

    m_threadsSpin->setValue(clampToInt(p.threads, m_threadsSpin));
    m_deviceCombo->setEditText(QString::fromStdString(p.device));
    if (!p.devicePlacement.empty())
        setPlacement(QString::fromStdString(p.modelPath), p.devicePlacement,
                     tr("Device map: %n entries.", nullptr, static_cast<int>(p.devicePlacement.size())));
    else
        setPlacement({}, {}, {});
    if (p.autoDeviceMap)
        setDeviceMapChoice(QStringLiteral("auto"));
    select(m_precisionCombo, QString::fromLatin1(precisionName(p.precision)));
    m_checkpointingCheck->setChecked(p.gradientCheckpointing);
    m_guardCheck->setChecked(p.inspectGuard);
    m_filling = false;
    updateEnabled();
    revalidate();
}

void TrainSettingsForm::setPlacement(const QString &modelPath, const std::vector<std::pair<std::string, std::string>> &placement,
                                     const QString &description)
{
    m_placementModel = modelPath.trimmed();
    m_placement = placement;
    const int given = m_deviceMapCombo->findData(QStringLiteral("given"));
    if (placement.empty()) {
        if (given >= 0)
            m_deviceMapCombo->removeItem(given); // falls back to "none" when it was chosen
        m_placementLabel->hide();
    } else {
        const QString text = tr("Given map (%n entries)", nullptr, static_cast<int>(placement.size()));
        if (given >= 0)
            m_deviceMapCombo->setItemText(given, text);
        else
            m_deviceMapCombo->addItem(text, QStringLiteral("given"));
        setDeviceMapChoice(QStringLiteral("given"));
        m_placementLabel->setText(description);
        m_placementLabel->show();
    }
    revalidate();
}

void TrainSettingsForm::setDeviceMapChoice(const QString &choice) { select(m_deviceMapCombo, choice); }

QString TrainSettingsForm::modelPath() const { return m_modelEdit->text().trimmed(); }

void TrainSettingsForm::setModelPath(const QString &path)
{
    m_modelEdit->setText(QDir::toNativeSeparators(path));
    if (!path.trimmed().isEmpty())
        addRecentModel(path);
}

void TrainSettingsForm::setCorpusPath(const QString &path) { m_corpusEdit->setText(path); }

void TrainSettingsForm::setThreads(int threads) { m_threadsSpin->setValue(threads); }

void TrainSettingsForm::browseModel()
{
    const QString current = modelPath();
    QFileDialog dialog(this, tr("Choose a Model Folder"),
                       current.isEmpty() ? QDir::homePath() : QFileInfo(current).absoluteFilePath());
    dialog.setObjectName(QStringLiteral("modelFolderDialog"));
    dialog.setFileMode(QFileDialog::Directory);
    dialog.setOption(QFileDialog::ShowDirsOnly);
    if (dialog.exec() == QDialog::Accepted && !dialog.selectedFiles().isEmpty())
        setModelPath(dialog.selectedFiles().constFirst());
}

void TrainSettingsForm::addRecentModel(const QString &path)
{
    const QString clean = QDir::cleanPath(QFileInfo(path.trimmed()).absoluteFilePath());
    m_recent.removeAll(clean);
    m_recent.prepend(clean);
    while (m_recent.size() > kRecentModels)
        m_recent.removeLast();
    QSettings().setValue(kRecentKey, m_recent);
    updateRecentMenu();
    Q_EMIT recentModelsChanged();
}

void TrainSettingsForm::clearRecentModels()
{
    m_recent.clear();
    QSettings().remove(kRecentKey);
    updateRecentMenu();
    Q_EMIT recentModelsChanged();
}

void TrainSettingsForm::updateRecentMenu()
{
    m_recentMenu->clear();
    for (const QString &path : std::as_const(m_recent)) {
        QAction *action = m_recentMenu->addAction(QDir::toNativeSeparators(path), this, [this, path] { setModelPath(path); });
        action->setToolTip(path);
    }
    if (!m_recent.isEmpty()) {
        m_recentMenu->addSeparator();
        m_recentMenu->addAction(tr("Clear the List"), this, &TrainSettingsForm::clearRecentModels);
    }
    m_recentButton->setEnabled(!m_locked && !m_recent.isEmpty());
}

QStringList TrainSettingsForm::presetNames() const
{
    QStringList names;
    for (const auto &preset : builtinPresets())
        names << preset.first;
    for (const auto &preset : m_userPresets)
        names << preset.first;
    return names;
}

bool TrainSettingsForm::applyPreset(const QString &name)
{
    QString json;
    for (const auto &[builtinName, preset] : builtinPresets()) {
        if (builtinName == name)
            json = app::settingsJson(preset, app::SettingsScope::Preset);
    }
    for (const auto &[userName, preset] : std::as_const(m_userPresets)) {
        if (userName == name)
            json = preset;
    }
    if (json.isEmpty())
        return false;
    TrainingParams params;
    QString error;
    if (!app::readTrainingSettings(json, this->params(), &params, &error)) {
        Q_EMIT statusMessage(tr("Preset %1 cannot be used: %2").arg(name, error), 10000);
        return false;
    }
    setParams(params);
    select(m_presetCombo, name);
    Q_EMIT statusMessage(tr("Settings of the preset %1").arg(name), 5000);
    return true;
}

bool TrainSettingsForm::savePreset(const QString &rawName, QString *error)
{
    auto refuse = [error](const QString &message) {
        if (error)
            *error = message;
        return false;
    };
    const QString name = rawName.simplified();
    if (name.isEmpty())
        return refuse(tr("the preset needs a name"));
    for (const auto &preset : builtinPresets()) {
        if (preset.first.compare(name, Qt::CaseInsensitive) == 0)
            return refuse(tr("%1 is a built-in preset; choose another name").arg(name));
    }
    if (!isValid())
        return refuse(m_problem);
    QString problem;
    const QString json = app::settingsJson(params(), app::SettingsScope::Preset, &problem);
    if (json.isEmpty())
        return refuse(problem);
    auto it = std::find_if(m_userPresets.begin(), m_userPresets.end(), [&](const auto &preset) { return preset.first == name; });
    if (it != m_userPresets.end())
        it->second = json;
    else
        m_userPresets.append({name, json});
    QVariantMap stored;
    for (const auto &[presetName, presetText] : std::as_const(m_userPresets))
        stored.insert(presetName, presetText);
    QSettings().setValue(kPresetsKey, stored);
    rebuildPresetCombo(name);
    Q_EMIT statusMessage(tr("Preset %1 saved").arg(name), 5000);
    return true;
}

bool TrainSettingsForm::deletePreset(const QString &name)
{
    const qsizetype before = m_userPresets.size();
    m_userPresets.removeIf([&](const auto &preset) { return preset.first == name; });
    if (m_userPresets.size() == before)
        return false;
    QVariantMap stored;
    for (const auto &[presetName, presetText] : std::as_const(m_userPresets))
        stored.insert(presetName, presetText);
    QSettings().setValue(kPresetsKey, stored);
    rebuildPresetCombo();
    return true;
}

void TrainSettingsForm::loadUserPresets()
{
    m_userPresets.clear();
    const QVariantMap stored = QSettings().value(kPresetsKey).toMap();
    for (auto it = stored.begin(); it != stored.end(); ++it)
        m_userPresets.append({it.key(), it.value().toString()});
}

void TrainSettingsForm::rebuildPresetCombo(const QString &selectName)
{
    const QSignalBlocker blocker(m_presetCombo);
    m_presetCombo->clear();
    m_presetCombo->addItem(tr("Choose a preset…"), QString());
    for (const auto &preset : builtinPresets())
        m_presetCombo->addItem(preset.first, preset.first);
    if (!m_userPresets.isEmpty()) {
        m_presetCombo->insertSeparator(m_presetCombo->count());
        for (const auto &preset : std::as_const(m_userPresets))
            m_presetCombo->addItem(preset.first, preset.first);
    }
    if (!selectName.isEmpty())
        select(m_presetCombo, selectName);
    updateEnabled();
}

void TrainSettingsForm::setLocked(bool locked)
{
    m_locked = locked;
    updateEnabled();
}

void TrainSettingsForm::updateEnabled()
{
    if (!m_deletePresetButton || !m_checkpointingCheck)
        return; // still being built
    for (QWidget *field : std::as_const(m_fields))
        field->setEnabled(!m_locked);
    m_presetCombo->setEnabled(!m_locked);
    m_savePresetButton->setEnabled(!m_locked);
    bool userPreset = false;
    for (const auto &preset : std::as_const(m_userPresets))
        userPreset = userPreset || preset.first == m_presetCombo->currentData().toString();
    m_deletePresetButton->setEnabled(!m_locked && userPreset);
    m_recentButton->setEnabled(!m_locked && !m_recent.isEmpty());
    const bool lora = m_methodCombo->currentData().toString() == QStringLiteral("lora");
    for (QWidget *field : std::initializer_list<QWidget *>{m_loraRankSpin, m_loraAlphaSpin, m_loraDropoutSpin, m_loraTargetsEdit,
                                                           m_rsloraCheck, m_modulesToSaveEdit})
        field->setEnabled(!m_locked && lora);
}

QString TrainSettingsForm::fieldLabel(QWidget *field) const { return m_labels.value(field, field ? field->objectName() : QString()); }

QWidget *TrainSettingsForm::fieldOfEngineMessage(const QString &message) const
{
    // The engine names the setting; the more specific names come first ("warmup steps" before "steps").
    const QList<std::pair<const char *, QWidget *>> needles = {
        {"setting warmup steps", m_warmupSpin},
        {"setting min learning rate ratio", m_minLrRatioSpin},
        {"setting learning rate", m_lrSpin},
        {"setting steps", m_stepsSpin},
        {"setting batch size", m_batchSpin},
        {"setting sequence length", m_seqLenSpin},
        {"setting weight decay", m_weightDecaySpin},
        {"setting momentum", m_momentumSpin},
        {"setting gradient clip norm", m_gradClipSpin},
        {"setting gradient accumulation", m_gradAccumSpin},
        {"setting device", m_deviceCombo},
        {"device map", m_deviceMapCombo},
        {"precision fp16", m_precisionCombo},
        {"setting epochs", m_epochsSpin},
        {"setting validation fraction", m_valFractionSpin},
        {"an eval data file or a validation fraction", m_valFractionSpin},
        {"setting eval every", m_evalEverySpin},
        {"setting eval batches", m_evalBatchesSpin},
        {"setting save every", m_saveEverySpin},
        {"setting keep checkpoints", m_keepSpin},
        {"setting sample tokens", m_sampleTokensSpin},
        {"setting threads", m_threadsSpin},
        {"LoRA rank", m_loraRankSpin},
        {"LoRA alpha", m_loraAlphaSpin},
        {"LoRA dropout", m_loraDropoutSpin},
        {"LoRA needs target", m_loraTargetsEdit},
        {"LoRA target", m_loraTargetsEdit},
    };
    for (const auto &[needle, field] : needles) {
        if (message.contains(QLatin1String(needle)))
            return field;
    }
    return nullptr;
}

QString TrainSettingsForm::pathProblem(const TrainingParams &p, QWidget **field) const
{
    auto exists = [](const std::string &path) { return QFileInfo::exists(QString::fromStdString(path)); };
    auto isFile = [](const std::string &path) { return QFileInfo(QString::fromStdString(path)).isFile(); };
    auto native = [](const std::string &path) { return QDir::toNativeSeparators(QString::fromStdString(path)); };
    if (!p.modelPath.empty() && !exists(p.modelPath)) {
        *field = m_modelEdit;
        return tr("the folder %1 does not exist").arg(native(p.modelPath));
    }
    for (const auto &[path, edit] : {std::pair{p.dataPath, m_corpusEdit}, std::pair{p.tokenizerPath, m_tokenizerEdit},
                                     std::pair{p.evalDataPath, m_evalDataEdit}}) {
        if (path.empty())
            continue;
        *field = edit;
        if (!isFile(path))
            return tr("the file %1 does not exist").arg(native(path));
        if (!QFileInfo(QString::fromStdString(path)).isReadable())
            return tr("the file %1 cannot be read").arg(native(path));
    }
    if (!p.outputDir.empty() && exists(p.outputDir) && !QFileInfo(QString::fromStdString(p.outputDir)).isDir()) {
        *field = m_outputEdit;
        return tr("%1 is a file, not a folder").arg(native(p.outputDir));
    }
    *field = nullptr;
    return {};
}

void TrainSettingsForm::revalidate()
{
    if (m_filling || !m_checkpointingCheck)
        return;
    const TrainingParams p = params();
    QWidget *field = nullptr;
    QString message = app::EngineBridge::validationError(p);
    if (!message.isEmpty())
        field = fieldOfEngineMessage(message);
    else
        message = pathProblem(p, &field);
    if (!message.isEmpty() && field)
        message = tr("%1: %2").arg(fieldLabel(field), message);

    const bool wasValid = m_problem.isEmpty();
    m_problem = message;
    m_problemField = message.isEmpty() ? nullptr : field;
    markInvalid(m_problemField);
    m_validationLabel->setText(message);
    m_validationLabel->setVisible(!message.isEmpty());
    if (wasValid != message.isEmpty())
        Q_EMIT validityChanged(message.isEmpty());
    Q_EMIT settingsChanged();
}

void TrainSettingsForm::markInvalid(QWidget *field)
{
    // The field's base (and a combo's button) blends towards red: readable in light and dark palettes.
    auto tinted = [](QColor color) {
        const QColor red(220, 50, 47);
        constexpr double share = 0.35;
        return QColor::fromRgbF(static_cast<float>(color.redF() * (1 - share) + red.redF() * share),
                                static_cast<float>(color.greenF() * (1 - share) + red.greenF() * share),
                                static_cast<float>(color.blueF() * (1 - share) + red.blueF() * share));
    };
    if (m_marked && m_marked != field) {
        m_marked->setPalette(QPalette());
        m_marked->setProperty("invalid", false);
    }
    for (int tab = 0; tab < m_tabs->count(); ++tab)
        m_tabs->tabBar()->setTabTextColor(tab, QColor());
    m_marked = field;
    // The message in a red that reads on the window's colour.
    QPalette labelPalette;
    const bool darkWindow = palette().color(QPalette::Window).lightness() < 128;
    labelPalette.setColor(QPalette::WindowText, darkWindow ? QColor(255, 128, 112) : QColor(176, 32, 24));
    m_validationLabel->setPalette(labelPalette);
    if (!field)
        return;
    const QPalette parentPalette = field->parentWidget() ? field->parentWidget()->palette() : palette();
    QPalette marked;
    marked.setColor(QPalette::Base, tinted(parentPalette.color(QPalette::Base)));
    marked.setColor(QPalette::Button, tinted(parentPalette.color(QPalette::Button)));
    field->setPalette(marked);
    field->setProperty("invalid", true);
    if (const auto it = m_tabOf.constFind(field); it != m_tabOf.constEnd())
        m_tabs->tabBar()->setTabTextColor(*it, tinted(palette().color(QPalette::WindowText)));
}

void TrainSettingsForm::changeEvent(QEvent *event)
{
    QWidget::changeEvent(event);
    if (event->type() == QEvent::PaletteChange && !m_filling && m_checkpointingCheck) {
        // A new theme: tint the field again from the new colours.
        QWidget *field = m_marked;
        m_marked = nullptr;
        if (field) {
            field->setPalette(QPalette());
            markInvalid(field);
        } else {
            markInvalid(nullptr);
        }
    }
}

} // namespace ui
