#include "ui/pages/trainsettingsform.h"

#include "bridge/enginebridge.h"
#include "bridge/runconfig.h"
#include "engine/core/error.h"
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

using engine::train::SettingGroup;
using engine::train::SettingKind;
using engine::train::SettingSpec;
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
    m_tabs->addTab(createTab({SettingGroup::Basics}), tr("Basics"));
    m_tabs->addTab(createTab({SettingGroup::Lora}), tr("LoRA"));
    m_tabs->addTab(createTab({SettingGroup::Optimizer}), tr("Optimizer"));
    m_tabs->addTab(createTab({SettingGroup::Evaluation, SettingGroup::Checkpoints}), tr("Eval && Save"));
    m_tabs->addTab(createTab({SettingGroup::Hardware}), tr("Hardware"));
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
    m_building = false;
    setParams(TrainingParams{});
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

QWidget *TrainSettingsForm::createTab(std::initializer_list<SettingGroup> groups)
{
    auto *tab = new QWidget(this);
    QString mnemonics; // letters taken in this tab
    if (groups.size() == 1) {
        auto *form = new QFormLayout(tab);
        for (const SettingSpec &spec : engine::train::trainingSettings()) {
            if (spec.group == *groups.begin())
                addField(form, spec, mnemonics);
        }
        return tab;
    }
    // Several groups: a box each.
    auto *layout = new QVBoxLayout(tab);
    for (const SettingGroup group : groups) {
        auto *box = new QGroupBox(tr(engine::train::settingGroupTitle(group)), tab);
        auto *form = new QFormLayout(box);
        for (const SettingSpec &spec : engine::train::trainingSettings()) {
            if (spec.group == group)
                addField(form, spec, mnemonics);
        }
        layout->addWidget(box);
    }
    layout->addStretch(1);
    return tab;
}

/// The label with a keyboard mnemonic on its first letter not yet taken in the tab ("&Steps:").
static QString withMnemonic(const QString &label, QString &taken)
{
    QString text = label;
    for (int i = 0; i < text.size(); ++i) {
        const QChar c = text.at(i).toLower();
        if (c.isLetter() && !taken.contains(c)) {
            taken += c;
            text.insert(i, QLatin1Char('&'));
            break;
        }
    }
    return text;
}

void TrainSettingsForm::addField(QFormLayout *form, const SettingSpec &spec, QString &mnemonics)
{
    QWidget *parent = form->parentWidget();
    QWidget *input = createInput(spec, parent);
    input->setObjectName(QString::fromStdString(spec.key));
    input->setToolTip(QString::fromStdString(spec.help));
    const QString label = tr(spec.label.c_str());
    QWidget *shown = input;
    if (spec.key == "model")
        shown = createModelRow(static_cast<QLineEdit *>(input), parent);
    else if (spec.kind == SettingKind::Path)
        shown = createPathRow(spec, static_cast<QLineEdit *>(input), parent);
    if (auto *check = qobject_cast<QCheckBox *>(input)) {
        check->setText(withMnemonic(label, mnemonics));
        form->addRow(QString(), check);
    } else {
        auto *labelWidget = new QLabel(withMnemonic(label, mnemonics) + QLatin1Char(':'), parent);
        labelWidget->setBuddy(input);
        form->addRow(labelWidget, shown);
    }
    if (spec.key == "model") {
        m_placementLabel = new QLabel(parent);
        m_placementLabel->setObjectName(QStringLiteral("placementLabel"));
        m_placementLabel->setWordWrap(true);
        m_placementLabel->hide();
        form->addRow(m_placementLabel);
    }
    m_bindings.push_back({&spec, input, m_tabs->count()}); // the tab being built is added next
    m_fieldOf.insert(QString::fromStdString(spec.key), input);
    m_tabOf.insert(input, m_tabs->count());
    watch(input);
}

QWidget *TrainSettingsForm::createInput(const SettingSpec &spec, QWidget *parent)
{
    const double low = spec.range ? (spec.special ? spec.special->value : std::min(spec.range->low, 0.0)) : 0;
    const double high = spec.range ? spec.range->high : 0;
    switch (spec.kind) {
    case SettingKind::Integer: {
        if (high > std::numeric_limits<int>::max()) { // a seed: any 64-bit number, typed as digits
            auto *edit = new QLineEdit(parent);
            edit->setValidator(new QRegularExpressionValidator(QRegularExpression(QStringLiteral("[0-9]{0,20}")), edit));
            return edit;
        }
        auto *box = new QSpinBox(parent);
        box->setRange(static_cast<int>(low), static_cast<int>(high));
        if (spec.key == "threads") // this machine's cores; more is refused by name
            box->setRange(0, 4096);
        if (spec.special)
            box->setSpecialValueText(tr(spec.special->text.c_str()));
        if (!spec.unit.empty())
            box->setSuffix(tr(spec.unit.c_str()));
        if (spec.key == "sequence_length")
            box->setSingleStep(16);
        return box;
    }
    case SettingKind::Number: {
        QDoubleSpinBox *box = spec.decimals == 0 ? new NumberSpinBox(parent) : new QDoubleSpinBox(parent);
        if (spec.decimals > 0)
            box->setDecimals(spec.decimals);
        box->setRange(low, high);
        box->setSingleStep(spec.step);
        if (spec.special)
            box->setSpecialValueText(tr(spec.special->text.c_str()));
        if (!spec.unit.empty())
            box->setSuffix(tr(spec.unit.c_str()));
        return box;
    }
    case SettingKind::Switch:
        return new QCheckBox(parent);
    case SettingKind::Choice: {
        auto *combo = new QComboBox(parent);
        for (const auto &choice : spec.choices)
            combo->addItem(tr(choice.label.c_str()), QString::fromStdString(choice.value));
        return combo;
    }
    case SettingKind::DeviceMap:
        m_deviceMapCombo = new QComboBox(parent);
        m_deviceMapCombo->addItem(tr("None: all on the device"), QStringLiteral("none"));
        m_deviceMapCombo->addItem(tr("Auto: plan on this machine"), QStringLiteral("auto"));
        return m_deviceMapCombo;
    case SettingKind::Text:
        if (!spec.choices.empty()) { // suggestions, and any other value typed
            auto *combo = new QComboBox(parent);
            combo->setEditable(true);
            for (const auto &choice : spec.choices)
                combo->addItem(QString::fromStdString(choice.value));
            return combo;
        }
        [[fallthrough]];
    case SettingKind::Path:
    case SettingKind::Names:
    case SettingKind::Modules: {
        auto *edit = new QLineEdit(parent);
        edit->setPlaceholderText(tr(spec.placeholder.c_str()));
        edit->setClearButtonEnabled(spec.kind == SettingKind::Path || spec.kind == SettingKind::Text);
        return edit;
    }
    }
    return new QWidget(parent);
}

QWidget *TrainSettingsForm::createModelRow(QLineEdit *edit, QWidget *parent)
{
    m_modelEdit = edit;
    edit->setToolTip(tr("A model folder (config.json, with weights to fine-tune) or a config.json; leave empty for the "
                        "demo model. Drop a folder on the page to use it."));
    auto *open = new QPushButton(tr("&Open…"), parent);
    open->setObjectName(QStringLiteral("modelBrowseButton"));
    open->setToolTip(tr("Choose a model folder (Ctrl+O)"));
    connect(open, &QPushButton::clicked, this, &TrainSettingsForm::browseModel);
    m_recentButton = new QToolButton(parent);
    m_recentButton->setObjectName(QStringLiteral("recentModelsButton"));
    m_recentButton->setText(tr("Recent"));
    m_recentButton->setToolTip(tr("Model folders used lately"));
    m_recentButton->setPopupMode(QToolButton::InstantPopup);
    m_recentMenu = new QMenu(m_recentButton);
    m_recentMenu->setObjectName(QStringLiteral("recentModelsMenu"));
    m_recentButton->setMenu(m_recentMenu);
    m_buttons << open << m_recentButton;
    connect(edit, &QLineEdit::textChanged, this, [this](const QString &text) {
        // A device map belongs to its model: editing the model drops it.
        if (!m_placement.empty() && text.trimmed() != m_placementModel)
            setPlacement({}, {}, {});
    });
    auto *row = new QWidget(parent);
    auto *layout = new QHBoxLayout(row);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->addWidget(edit, 1);
    layout->addWidget(open);
    layout->addWidget(m_recentButton);
    return row;
}

QWidget *TrainSettingsForm::createPathRow(const SettingSpec &spec, QLineEdit *edit, QWidget *parent)
{
    const QString title = spec.folder ? tr("Choose the %1 Folder").arg(tr(spec.label.c_str()))
                                      : tr("Choose the %1 File").arg(tr(spec.label.c_str()));
    auto *button = new QPushButton(tr("Browse…"), parent);
    button->setObjectName(QString::fromStdString(spec.key) + QStringLiteral("Browse"));
    button->setToolTip(title);
    const bool folder = spec.folder;
    connect(button, &QPushButton::clicked, this, [this, edit, folder, title] {
        const QString current = edit->text().trimmed();
        const QString start = current.isEmpty() ? QDir::homePath() : QFileInfo(current).absolutePath();
        const QString path = folder ? QFileDialog::getExistingDirectory(this, title, start)
                                    : QFileDialog::getOpenFileName(this, title, start);
        if (!path.isEmpty())
            edit->setText(path);
    });
    m_buttons << button;
    auto *row = new QWidget(parent);
    auto *layout = new QHBoxLayout(row);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->addWidget(edit, 1);
    layout->addWidget(button);
    return row;
}

void TrainSettingsForm::watch(QWidget *field)
{
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

void TrainSettingsForm::readField(const Binding &binding, TrainingParams &p) const
{
    const SettingSpec &spec = *binding.spec;
    QWidget *w = binding.widget;
    try {
        if (spec.kind == SettingKind::DeviceMap) {
            const QString choice = m_deviceMapCombo->currentData().toString();
            p.autoDeviceMap = choice == QStringLiteral("auto");
            p.devicePlacement = choice == QStringLiteral("given") ? m_placement : decltype(m_placement){};
        } else if (auto *box = qobject_cast<QSpinBox *>(w)) {
            spec.setJson(p, nlohmann::json(static_cast<int64_t>(box->value())));
        } else if (auto *box = qobject_cast<QDoubleSpinBox *>(w)) {
            spec.setJson(p, nlohmann::json(box->value()));
        } else if (auto *check = qobject_cast<QCheckBox *>(w)) {
            spec.setJson(p, nlohmann::json(check->isChecked()));
        } else if (auto *combo = qobject_cast<QComboBox *>(w)) {
            spec.setText(p, (combo->isEditable() ? combo->currentText() : combo->currentData().toString()).trimmed().toStdString());
        } else if (auto *edit = qobject_cast<QLineEdit *>(w)) {
            const QString text = spec.key == "sample_prompt" ? edit->text() : edit->text().trimmed();
            if (spec.key == "seed" && text.isEmpty())
                return; // an empty seed keeps the default
            spec.setText(p, text.toStdString());
        }
    } catch (const engine::Error &) {
        // A field's own input rules keep its text readable; what is left (a seed beyond 2^64) keeps the
        // value it had, and validation reports the rest.
    }
}

void TrainSettingsForm::writeField(const Binding &binding, const TrainingParams &p)
{
    const SettingSpec &spec = *binding.spec;
    QWidget *w = binding.widget;
    const nlohmann::json value = spec.valueOf(p);
    if (spec.kind == SettingKind::DeviceMap) {
        if (!p.devicePlacement.empty())
            setPlacement(QString::fromStdString(p.modelPath), p.devicePlacement,
                         tr("Device map: %n entries.", nullptr, static_cast<int>(p.devicePlacement.size())));
        else
            setPlacement({}, {}, {});
        if (p.devicePlacement.empty())
            select(m_deviceMapCombo, p.autoDeviceMap ? QStringLiteral("auto") : QStringLiteral("none"));
    } else if (auto *box = qobject_cast<QSpinBox *>(w)) {
        box->setValue(clampToInt(value.get<int64_t>(), box));
    } else if (auto *box = qobject_cast<QDoubleSpinBox *>(w)) {
        box->setValue(value.get<double>());
    } else if (auto *check = qobject_cast<QCheckBox *>(w)) {
        check->setChecked(value.get<bool>());
    } else if (auto *combo = qobject_cast<QComboBox *>(w)) {
        if (combo->isEditable())
            combo->setEditText(QString::fromStdString(spec.text(p)));
        else
            select(combo, QString::fromStdString(spec.text(p)));
    } else if (auto *edit = qobject_cast<QLineEdit *>(w)) {
        edit->setText(QString::fromStdString(spec.text(p)));
    }
}

TrainingParams TrainSettingsForm::params() const
{
    TrainingParams p;
    for (const Binding &binding : m_bindings)
        readField(binding, p);
    return p;
}

void TrainSettingsForm::setParams(const TrainingParams &p)
{
    m_filling = true;
    for (const Binding &binding : m_bindings)
        writeField(binding, p);
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
        select(m_deviceMapCombo, QStringLiteral("given"));
        m_placementLabel->setText(description);
        m_placementLabel->show();
    }
    revalidate();
}

QString TrainSettingsForm::modelPath() const { return m_modelEdit->text().trimmed(); }

void TrainSettingsForm::setModelPath(const QString &path)
{
    m_modelEdit->setText(QDir::toNativeSeparators(path));
    if (!path.trimmed().isEmpty())
        addRecentModel(path);
}

void TrainSettingsForm::setCorpusPath(const QString &path) { static_cast<QLineEdit *>(field(QStringLiteral("data")))->setText(path); }

void TrainSettingsForm::setThreads(int threads) { static_cast<QSpinBox *>(field(QStringLiteral("threads")))->setValue(threads); }

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
            json = bridge::settingsJson(preset, engine::train::SettingScope::Preset);
    }
    for (const auto &[userName, preset] : std::as_const(m_userPresets)) {
        if (userName == name)
            json = preset;
    }
    if (json.isEmpty())
        return false;
    TrainingParams params;
    QString error;
    if (!bridge::readTrainingSettings(json, engine::train::SettingScope::Preset, this->params(), &params, &error)) {
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
    const QString json = bridge::settingsJson(params(), engine::train::SettingScope::Preset);
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
    if (m_building)
        return;
    const TrainingParams p = params();
    for (const Binding &binding : m_bindings)
        binding.widget->setEnabled(!m_locked && binding.spec->appliesTo(p));
    for (QWidget *button : std::as_const(m_buttons))
        button->setEnabled(!m_locked);
    m_presetCombo->setEnabled(!m_locked);
    m_savePresetButton->setEnabled(!m_locked);
    bool userPreset = false;
    for (const auto &preset : std::as_const(m_userPresets))
        userPreset = userPreset || preset.first == m_presetCombo->currentData().toString();
    m_deletePresetButton->setEnabled(!m_locked && userPreset);
    m_recentButton->setEnabled(!m_locked && !m_recent.isEmpty());
}

QString TrainSettingsForm::fieldLabel(QWidget *field) const
{
    for (const Binding &binding : m_bindings) {
        if (binding.widget == field)
            return tr(binding.spec->label.c_str());
    }
    return field ? field->objectName() : QString();
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
    for (const auto &[path, key] : {std::pair{p.dataPath, "data"}, std::pair{p.tokenizerPath, "tokenizer"},
                                    std::pair{p.evalDataPath, "eval_data"}}) {
        if (path.empty())
            continue;
        *field = this->field(QString::fromLatin1(key));
        if (!isFile(path))
            return tr("the file %1 does not exist").arg(native(path));
        if (!QFileInfo(QString::fromStdString(path)).isReadable())
            return tr("the file %1 cannot be read").arg(native(path));
    }
    if (!p.outputDir.empty() && exists(p.outputDir) && !QFileInfo(QString::fromStdString(p.outputDir)).isDir()) {
        *field = this->field(QStringLiteral("output_dir"));
        return tr("%1 is a file, not a folder").arg(native(p.outputDir));
    }
    *field = nullptr;
    return {};
}

void TrainSettingsForm::revalidate()
{
    if (m_filling || m_building)
        return;
    updateEnabled();
    const TrainingParams p = params();
    QWidget *field = nullptr;
    QString message;
    try {
        engine::train::validateSettings(p);
    } catch (const engine::Error &e) {
        message = QString::fromStdString(e.what());
        field = this->field(QString::fromStdString(e.field()));
    }
    if (message.isEmpty())
        message = pathProblem(p, &field);
    setProblem(message, field);
}

void TrainSettingsForm::showProblem(const QString &key, const QString &message) { setProblem(message, field(key)); }

void TrainSettingsForm::setProblem(const QString &rawMessage, QWidget *field)
{
    QString message = rawMessage;
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
    if (event->type() == QEvent::PaletteChange && !m_filling && !m_building) {
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
