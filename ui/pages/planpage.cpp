#include "ui/pages/planpage.h"

#include "engine/core/atomicfile.h"
#include "engine/core/byteunits.h"
#include "engine/core/error.h"
#include "engine/core/format.h"
#include "engine/model/llamaconfig.h"
#include "engine/plan/advisor.h"
#include "engine/plan/catalog.h"
#include "engine/plan/devicemapjson.h"
#include "engine/plan/planmodel.h"
#include "ui/models/moduletreemodel.h"
#include "ui/widgets/devicecolumns.h"

#include <QCheckBox>
#include <QComboBox>
#include <QDoubleSpinBox>
#include <QDragEnterEvent>
#include <QDropEvent>
#include <QFile>
#include <QFileDialog>
#include <QFileInfo>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QLineEdit>
#include <QListWidget>
#include <QListWidgetItem>
#include <QMimeData>
#include <QPushButton>
#include <QScrollArea>
#include <QScrollBar>
#include <QSettings>
#include <QSpinBox>
#include <QSignalBlocker>
#include <QSplitter>
#include <QStringList>
#include <QStyle>
#include <QStyledItemDelegate>
#include <QTabWidget>
#include <QTreeView>
#include <QUndoCommand>
#include <QUndoStack>
#include <QVBoxLayout>

#include <algorithm>
#include <exception>
#include <sstream>

namespace ui {

using engine::plan::Plan;

/// One drag of a module to another device: both plans are values, so undo simply shows the old one.
class PlanMoveCommand : public QUndoCommand {
public:
    PlanMoveCommand(PlanPage &page, Plan before, Plan after, const QString &text)
        : QUndoCommand(text), m_page(page), m_before(std::move(before)), m_after(std::move(after))
    {
    }
    void undo() override { m_page.showPlan(m_before); }
    void redo() override { m_page.showPlan(m_after); }

private:
    PlanPage &m_page;
    Plan m_before;
    Plan m_after;
};

namespace {

QString fromStd(const std::string &text) { return QString::fromStdString(text); }

/// Sizes a wrapped list item by the width its text really gets (the view's, less the icon and margins):
/// QStyledItemDelegate measures it without the icon, so the last line of a long fix was cut off.
class WrappedTextDelegate : public QStyledItemDelegate {
public:
    explicit WrappedTextDelegate(QListWidget *view) : QStyledItemDelegate(view), m_view(view) {}
    QSize sizeHint(const QStyleOptionViewItem &option, const QModelIndex &index) const override
    {
        QStyleOptionViewItem opt = option;
        initStyleOption(&opt, index);
        const int margins = 4 * (m_view->style()->pixelMetric(QStyle::PM_FocusFrameHMargin, nullptr, m_view) + 1);
        const int width = m_view->viewport()->width() - 2 * m_view->spacing();
        const int textWidth = std::max(80, width - opt.decorationSize.width() - margins);
        const QRect text = opt.fontMetrics.boundingRect(QRect(0, 0, textWidth, 1 << 20), Qt::TextWordWrap, opt.text);
        return {width, std::max(text.height(), opt.decorationSize.height()) + opt.fontMetrics.height() / 2};
    }

private:
    QListWidget *m_view;
};

/// The device columns' scroll area: as wide as every column needs (devices never hide sideways), while
/// a long list of blocks scrolls down.
class ColumnsScrollArea : public QScrollArea {
public:
    using QScrollArea::QScrollArea;
    QSize minimumSizeHint() const override
    {
        const int columns = widget() ? widget()->minimumSizeHint().width() : 0;
        return {columns + verticalScrollBar()->sizeHint().width() + 2 * frameWidth(), QScrollArea::minimumSizeHint().height()};
    }
};

QString bytesText(int64_t bytes) { return fromStd(engine::formatBytes(bytes)); }

/// The plan's blocks at layer granularity: the decoder layers (no-split classes) and the other
/// modules that hold parameters directly, in module order. A module of buffers only (the rotary
/// embedding's few hundred bytes) is no block: it stays in the map and the module tree.
void collectBlocks(const engine::model::ModuleNode &node, std::vector<const engine::model::ModuleNode *> &out)
{
    if (node.holdsOnlyBuffers())
        return;
    if (!node.name.empty() && (node.noSplit || node.children.empty() || !node.parameters.empty())) {
        out.push_back(&node);
        return;
    }
    for (const auto &child : node.children)
        collectBlocks(child, out);
}

DeviceColumnsData columnsData(const Plan &plan, const engine::model::ModuleTree &tree)
{
    DeviceColumnsData data;
    for (const engine::plan::DeviceUsage &usage : plan.usage) {
        DeviceColumn column;
        column.id = fromStd(usage.device.key());
        column.title = fromStd(engine::plan::deviceLabel(usage.device));
        column.subtitle = fromStd(usage.device.name);
        column.budget = usage.device.unbounded() ? 0 : usage.device.budget;
        const engine::plan::MemoryBreakdown &m = usage.memory;
        column.bytes[MemoryKind::Weights] = m.weights + m.lora;
        column.bytes[MemoryKind::Gradients] = m.gradients;
        column.bytes[MemoryKind::Optimizer] = m.optimizer;
        column.bytes[MemoryKind::Activations] = m.activations + m.logits;
        column.bytes[MemoryKind::Overhead] = m.overhead;
        data.devices.push_back(column);
    }
    std::vector<const engine::model::ModuleNode *> blocks;
    collectBlocks(tree.root, blocks);
    for (const engine::model::ModuleNode *node : blocks) {
        const QString device = fromStd(plan.deviceOf(node->name));
        for (DeviceColumn &column : data.devices) {
            if (column.id != device)
                continue;
            DeviceModuleBlock block;
            block.module = fromStd(node->name);
            block.bytes = node->parameterBytes(/*includeTied=*/false);
            block.detail = fromStd(node->className);
            if (const int64_t experts = ModuleTreeModel::expertCount(*node); experts > 0) // folded in the layer
                block.detail += PlanPage::tr(" with %n experts", nullptr, int(experts));
            column.modules.push_back(block);
        }
    }
    labelBlocksWithoutSharedPrefix(data);
    return data;
}

QHash<QString, QString> deviceMapHash(const Plan &plan)
{
    QHash<QString, QString> map;
    for (const auto &placement : plan.deviceMap)
        map.insert(fromStd(placement.module), fromStd(placement.device));
    return map;
}

} // namespace

PlanPage::PlanPage(QWidget *parent) : QWidget(parent)
{
    setAcceptDrops(true);
    m_undo = new QUndoStack(this);

    m_verdictLabel = new QLabel(tr("Open a model folder (or drop one here) to see whether it fits your devices."), this);
    m_verdictLabel->setObjectName(QStringLiteral("planVerdict"));
    m_verdictLabel->setWordWrap(true);
    QFont verdictFont = m_verdictLabel->font();
    verdictFont.setPointSizeF(verdictFont.pointSizeF() * 1.25);
    verdictFont.setBold(true);
    m_verdictLabel->setFont(verdictFont);

    m_columns = new DeviceColumnsWidget(this);
    m_columns->setObjectName(QStringLiteral("deviceColumns"));
    connect(m_columns, &DeviceColumnsWidget::moduleMoveRequested, this,
            [this](const QString &module, const QString &device) { moveModule(module, device); });

    auto *splitter = new QSplitter(Qt::Horizontal, this);
    // Scrolls, so that a model of many layers never makes the page taller than the screen.
    m_columnsScroll = new ColumnsScrollArea(this);
    m_columnsScroll->setWidget(m_columns);
    m_columnsScroll->setWidgetResizable(true);
    m_columnsScroll->setFrameShape(QFrame::NoFrame);
    m_columnsScroll->setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
    splitter->addWidget(m_columnsScroll);
    splitter->addWidget(createDetailTabs());
    splitter->setStretchFactor(0, 3);
    splitter->setStretchFactor(1, 2);

    auto *layout = new QVBoxLayout(this);
    layout->addWidget(createSettingsBar());
    layout->addWidget(m_verdictLabel);
    m_advice = new QListWidget(this);
    m_advice->setObjectName(QStringLiteral("planAdvice"));
    m_advice->setWordWrap(true);
    m_advice->setToolTip(tr("Click a suggestion to apply its settings"));
    m_advice->hide();
    connect(m_advice, &QListWidget::itemClicked, this,
            [this](QListWidgetItem *item) { applyAdvice(item->data(Qt::UserRole).toString()); });
    layout->addWidget(m_advice);
    layout->addWidget(createCatalogRow());
    layout->addWidget(splitter, 1);

    auto *buttons = new QHBoxLayout;
    auto *undoButton = new QPushButton(tr("Undo"), this);
    undoButton->setShortcut(QKeySequence::Undo);
    undoButton->setObjectName(QStringLiteral("planUndo"));
    connect(undoButton, &QPushButton::clicked, m_undo, &QUndoStack::undo);
    connect(m_undo, &QUndoStack::canUndoChanged, undoButton, &QWidget::setEnabled);
    undoButton->setEnabled(false);
    auto *redoButton = new QPushButton(tr("Redo"), this);
    redoButton->setShortcut(QKeySequence::Redo);
    connect(redoButton, &QPushButton::clicked, m_undo, &QUndoStack::redo);
    connect(m_undo, &QUndoStack::canRedoChanged, redoButton, &QWidget::setEnabled);
    redoButton->setEnabled(false);
    m_importButton = new QPushButton(tr("Import Map…"), this);
    m_exportButton = new QPushButton(tr("Export Map…"), this);
    m_pythonButton = new QPushButton(tr("Export Python…"), this);
    m_trainButton = new QPushButton(tr("Train with This Plan"), this);
    m_trainButton->setObjectName(QStringLiteral("trainWithPlan"));
    connect(m_importButton, &QPushButton::clicked, this, &PlanPage::importMapDialog);
    connect(m_exportButton, &QPushButton::clicked, this, &PlanPage::exportMapDialog);
    connect(m_pythonButton, &QPushButton::clicked, this, &PlanPage::exportPythonDialog);
    connect(m_trainButton, &QPushButton::clicked, this, [this] {
        if (m_plan)
            Q_EMIT trainWithPlanRequested(m_modelPath, *m_plan);
    });
    for (QPushButton *b : {m_importButton, m_exportButton, m_pythonButton, m_trainButton})
        b->setEnabled(false);
    buttons->addWidget(undoButton);
    buttons->addWidget(redoButton);
    buttons->addStretch(1);
    buttons->addWidget(m_importButton);
    buttons->addWidget(m_exportButton);
    buttons->addWidget(m_pythonButton);
    buttons->addWidget(m_trainButton);
    layout->addLayout(buttons);

    QSettings settings;
    m_memoryEdit->setText(settings.value(QStringLiteral("Plan/maxMemory"), QStringLiteral("0=15GiB,1=15GiB,cpu=13GiB")).toString());
}

PlanPage::~PlanPage()
{
    // QWidget's destructor hides the page, which moves the focus and so finishes an edit in progress
    // (editingFinished): no re-plan then, with the planner and the fields half destroyed.
    for (QObject *child : findChildren<QObject *>())
        disconnect(child, nullptr, this, nullptr);
}

QWidget *PlanPage::createSettingsBar()
{
    auto *bar = new QWidget(this);
    bar->setObjectName(QStringLiteral("planSettings"));
    auto *form = new QFormLayout(bar);
    form->setContentsMargins(0, 0, 0, 0);

    auto *modelRow = new QHBoxLayout;
    m_modelEdit = new QLineEdit(bar);
    m_modelEdit->setObjectName(QStringLiteral("planModelPath"));
    m_modelEdit->setPlaceholderText(tr("a model folder (config.json + safetensors), a config.json or a catalog name"));
    connect(m_modelEdit, &QLineEdit::returnPressed, this, [this] { openModel(m_modelEdit->text()); });
    auto *browse = new QPushButton(tr("Open…"), bar);
    browse->setShortcut(QKeySequence::Open);
    connect(browse, &QPushButton::clicked, this, &PlanPage::browseModel);
    modelRow->addWidget(m_modelEdit, 1);
    modelRow->addWidget(browse);
    form->addRow(tr("Model:"), modelRow);

    auto *memoryRow = new QHBoxLayout;
    m_memoryEdit = new QLineEdit(bar);
    m_memoryEdit->setObjectName(QStringLiteral("planMaxMemory"));
    m_memoryEdit->setToolTip(tr("Budgets in Accelerate's max_memory form: GPU index or cpu or disk = size "
                                "(GB = 10^9 bytes, GiB = 2^30, a plain number is bytes)"));
    connect(m_memoryEdit, &QLineEdit::editingFinished, this, &PlanPage::replan);
    m_presetCombo = new QComboBox(bar);
    m_presetCombo->addItem(tr("Add GPU…"));
    for (const auto &preset : engine::plan::gpuPresets())
        m_presetCombo->addItem(fromStd(preset.name + "  " + engine::formatBytes(preset.totalBytes)), fromStd(preset.name));
    connect(m_presetCombo, &QComboBox::activated, this, [this](int index) {
        if (index > 0)
            addGpuPreset();
        m_presetCombo->setCurrentIndex(0);
    });
    m_overheadSpin = new QDoubleSpinBox(bar);
    m_overheadSpin->setObjectName(QStringLiteral("planGpuOverhead"));
    m_overheadSpin->setRange(0, 64);
    m_overheadSpin->setSingleStep(0.25);
    m_overheadSpin->setDecimals(2);
    m_overheadSpin->setValue(double(engine::plan::kDefaultGpuOverheadBytes) / double(1 << 30));
    m_overheadSpin->setSuffix(tr(" GiB per GPU"));
    m_overheadSpin->setToolTip(tr("Runtime memory outside the tensors on each GPU (CUDA context, cuBLAS workspace, "
                                  "allocator), counted inside its budget when planning training"));
    connect(m_overheadSpin, &QDoubleSpinBox::editingFinished, this, &PlanPage::replan);
    memoryRow->addWidget(m_memoryEdit, 1);
    memoryRow->addWidget(m_overheadSpin);
    memoryRow->addWidget(m_presetCombo);
    form->addRow(tr("Devices:"), memoryRow);

    auto *trainRow = new QHBoxLayout;
    m_trainCombo = new QComboBox(bar);
    m_trainCombo->setObjectName(QStringLiteral("planTrain"));
    m_trainCombo->addItem(tr("Weights only"), QStringLiteral("none"));
    m_trainCombo->addItem(tr("LoRA"), QStringLiteral("lora"));
    m_trainCombo->addItem(tr("Full fine-tuning"), QStringLiteral("full"));
    m_strategyCombo = new QComboBox(bar);
    for (const char *name : {"auto", "balanced", "balanced_low_0", "sequential"})
        m_strategyCombo->addItem(QString::fromLatin1(name), QString::fromLatin1(name));
    m_dtypeCombo = new QComboBox(bar);
    m_dtypeCombo->addItem(tr("as stored"), QString());
    for (const char *name : {"float16", "bfloat16", "float32"})
        m_dtypeCombo->addItem(QString::fromLatin1(name), QString::fromLatin1(name));
    m_rankSpin = new QSpinBox(bar);
    m_rankSpin->setRange(1, 4096);
    m_rankSpin->setValue(8);
    m_rankSpin->setPrefix(tr("r "));
    m_targetsEdit = new QLineEdit(bar);
    m_targetsEdit->setPlaceholderText(tr("LoRA targets (default for the model)"));
    m_batchSpin = new QSpinBox(bar);
    m_batchSpin->setRange(1, 65536);
    m_batchSpin->setValue(8);
    m_batchSpin->setPrefix(tr("batch "));
    m_seqSpin = new QSpinBox(bar);
    m_seqSpin->setRange(2, 1 << 20);
    m_seqSpin->setValue(128);
    m_seqSpin->setPrefix(tr("seq "));
    m_checkpointingCheck = new QCheckBox(tr("Checkpointing"), bar);
    // Two rows, so that every field keeps its natural width on a 1280 px screen: the run, then LoRA's own.
    for (QWidget *w : std::initializer_list<QWidget *>{m_trainCombo, m_dtypeCombo, m_strategyCombo, m_batchSpin, m_seqSpin,
                                                       m_checkpointingCheck})
        trainRow->addWidget(w);
    trainRow->addStretch(1);
    auto *loraRow = new QHBoxLayout;
    loraRow->addWidget(m_rankSpin);
    loraRow->addWidget(m_targetsEdit, 1);
    for (QComboBox *combo : {m_trainCombo, m_strategyCombo, m_dtypeCombo})
        connect(combo, &QComboBox::currentIndexChanged, this, &PlanPage::replan);
    for (QSpinBox *spin : {m_rankSpin, m_batchSpin, m_seqSpin})
        connect(spin, &QSpinBox::editingFinished, this, &PlanPage::replan);
    connect(m_targetsEdit, &QLineEdit::editingFinished, this, &PlanPage::replan);
    connect(m_checkpointingCheck, &QCheckBox::toggled, this, &PlanPage::replan);
    const auto enableLora = [this] {
        const bool lora = m_trainCombo->currentData().toString() == QLatin1String("lora");
        m_rankSpin->setEnabled(lora);
        m_targetsEdit->setEnabled(lora);
    };
    connect(m_trainCombo, &QComboBox::currentIndexChanged, this, enableLora);
    enableLora();
    form->addRow(tr("Training:"), trainRow);
    form->addRow(tr("LoRA:"), loraRow);
    return bar;
}

// The catalog's few small files are read here, on the UI thread, like a config.json on Open: a
// newcomer plans a well-known model without downloading it.
QWidget *PlanPage::createCatalogRow()
{
    m_catalogRow = new QWidget(this);
    m_catalogRow->setObjectName(QStringLiteral("planCatalogRow"));
    auto *row = new QHBoxLayout(m_catalogRow);
    row->setContentsMargins(0, 0, 0, 0);
    m_catalogCombo = new QComboBox(m_catalogRow);
    m_catalogCombo->setObjectName(QStringLiteral("planCatalog"));
    try {
        for (const engine::plan::CatalogEntry &e : engine::plan::listCatalog()) {
            m_catalogCombo->addItem(tr("%1  (%2 parameters, %3)")
                                        .arg(fromStd(e.displayName), fromStd(e.parametersPublished), fromStd(e.repoId)),
                                    fromStd(e.name));
        }
    } catch (const std::exception &e) {
        m_catalogRow->setToolTip(fromStd(e.what()));
    }
    auto *planButton = new QPushButton(tr("Plan It"), m_catalogRow);
    planButton->setObjectName(QStringLiteral("planCatalogButton"));
    connect(planButton, &QPushButton::clicked, this, [this] {
        if (m_catalogCombo->currentIndex() >= 0)
            openModel(m_catalogCombo->currentData().toString());
    });
    row->addWidget(new QLabel(tr("Or plan a well-known model:"), m_catalogRow));
    row->addWidget(m_catalogCombo, 1);
    row->addWidget(planButton);
    m_catalogRow->setVisible(m_catalogCombo->count() > 0);
    return m_catalogRow;
}

QWidget *PlanPage::createDetailTabs()
{
    m_tabs = new QTabWidget(this);
    m_treeModel = new ModuleTreeModel(this);
    m_treeView = new QTreeView(m_tabs);
    m_treeView->setModel(m_treeModel);
    m_treeView->setUniformRowHeights(true);
    m_treeView->header()->setSectionResizeMode(QHeaderView::ResizeToContents);
    m_explanations = new QListWidget(m_tabs);
    m_explanations->setObjectName(QStringLiteral("planExplanations"));
    m_explanations->setWordWrap(true);
    m_lint = new QListWidget(m_tabs);
    m_lint->setObjectName(QStringLiteral("planLint"));
    m_lint->setWordWrap(true);
    m_lint->setIconSize(QSize(24, 24));
    m_lint->setSpacing(4);
    m_lint->setAlternatingRowColors(true);
    m_lint->setResizeMode(QListView::Adjust); // re-wrap the items at the pane's width, so no fix is cut off
    m_lint->setTextElideMode(Qt::ElideNone);
    m_lint->setItemDelegate(new WrappedTextDelegate(m_lint));
    m_tabs->addTab(m_lint, tr("Pitfalls"));
    m_tabs->addTab(m_explanations, tr("Why here"));
    m_tabs->addTab(m_treeView, tr("Modules"));
    return m_tabs;
}

engine::plan::PlanSettings PlanPage::settingsFromFields() const
{
    engine::plan::PlanSettings s;
    s.strategy = engine::plan::parseStrategy(m_strategyCombo->currentData().toString().toStdString(), "strategy");
    s.train = engine::plan::parseTrainMode(m_trainCombo->currentData().toString().toStdString(), "training");
    s.dtype = m_dtypeCombo->currentData().toString().toStdString();
    s.loraRank = m_rankSpin->value();
    for (const QString &target : m_targetsEdit->text().split(QLatin1Char(','), Qt::SkipEmptyParts))
        s.loraTargets.push_back(target.trimmed().toStdString());
    s.batchSize = m_batchSpin->value();
    s.sequenceLength = m_seqSpin->value();
    s.checkpointing = m_checkpointingCheck->isChecked();
    return s;
}

bool PlanPage::openModel(const QString &path)
{
    try {
        engine::plan::ResolvedModel resolved = engine::plan::resolvePlanModel(path.toStdString());
        m_planner = std::make_unique<engine::plan::Planner>(std::move(resolved.model));
        m_modelPath = fromStd(resolved.loaderName);
        m_fromCatalog = resolved.entry.has_value();
    } catch (const std::exception &e) {
        showError(fromStd(e.what()));
        return false;
    }
    m_modelEdit->setText(path);
    m_catalogRow->hide();
    const std::string modelType = m_planner->model().tree.modelType;
    // tunebench plans more architectures than it trains (ChatGLM, GPT-2, mixture-of-experts models).
    m_trainable = !m_fromCatalog && engine::model::isLlamaFamily(modelType);
    m_trainButton->setToolTip(m_fromCatalog ? tr("A catalog model is only a config: download its weights and open "
                                                 "the folder to train")
                              : !m_trainable ? tr("tunebench plans %1 models but does not train them yet")
                                                   .arg(fromStd(modelType.empty() ? std::string("these") : modelType))
                                             : QString());
    m_treeModel->setTree(m_planner->model().tree);
    replan();
    return m_plan.has_value();
}

void PlanPage::replan()
{
    if (!m_planner)
        return;
    try {
        auto devices = engine::plan::parseMaxMemory(m_memoryEdit->text().toStdString());
        for (engine::plan::DeviceSpec &d : devices)
            if (d.isGpu())
                d.overheadBytes = static_cast<int64_t>(m_overheadSpin->value() * double(1 << 30));
        const engine::plan::PlanSettings settings = settingsFromFields();
        Plan plan = m_planner->plan(devices, settings);
        QSettings().setValue(QStringLiteral("Plan/maxMemory"), m_memoryEdit->text());
        m_undo->clear();
        showPlan(plan);
        showAdvice(plan.devices, settings);
    } catch (const std::exception &e) {
        showError(fromStd(e.what()));
    }
}

bool PlanPage::moveModule(const QString &module, const QString &device)
{
    if (!m_planner || !m_plan)
        return false;
    try {
        Plan after = m_planner->move(*m_plan, module.toStdString(), device.toStdString());
        m_undo->push(new PlanMoveCommand(*this, *m_plan, std::move(after), tr("Move %1 to %2").arg(module, device)));
        return true;
    } catch (const std::exception &e) {
        Q_EMIT statusMessage(fromStd(e.what()), 10000);
        return false;
    }
}

void PlanPage::showPlan(const Plan &plan)
{
    m_plan = plan;
    m_columns->setData(columnsData(plan, m_planner->model().tree));
    m_columnsScroll->updateGeometry(); // another number of devices, another minimum width
    m_treeModel->setDeviceMap(deviceMapHash(plan));

    m_verdictLabel->setText(verdictText(plan));
    QPalette palette = m_verdictLabel->palette();
    palette.setColor(QPalette::WindowText, plan.fits ? QColor(0x2e, 0x7d, 0x32) : QColor(0xc6, 0x28, 0x28));
    m_verdictLabel->setPalette(palette);

    m_explanations->clear();
    for (const auto &minimum : plan.minimums)
        m_explanations->addItem(fromStd(minimum));
    for (const auto &warning : plan.warnings)
        m_explanations->addItem(fromStd(warning));
    for (const auto &placement : plan.deviceMap)
        m_explanations->addItem(fromStd(placement.explanation));
    if (!plan.attention.empty()) { // each layer's window, its training scores and its generation cache
        QStringList lines{fromStd(engine::plan::attentionHeadline(plan.settings)) + QLatin1Char(':')};
        for (const auto &span : plan.attention)
            lines << fromStd(engine::plan::attentionText(span));
        if (const std::string note = engine::plan::attentionCacheNote(plan.attention); !note.empty())
            lines << fromStd(note);
        m_explanations->addItem(lines.join(QLatin1Char('\n')));
    }
    showPitfalls(plan);
    m_tabs->setTabText(0, plan.lint.empty() ? tr("Pitfalls") : tr("Pitfalls (%1)").arg(plan.lint.size()));
    for (QPushButton *b : {m_importButton, m_exportButton, m_pythonButton, m_trainButton})
        b->setEnabled(true);
    m_trainButton->setEnabled(m_trainable);
}

void PlanPage::showAdvice(const std::vector<engine::plan::DeviceSpec> &devices, const engine::plan::PlanSettings &settings)
{
    m_advice->clear();
    const std::vector<engine::plan::Advice> advice = engine::plan::advise(*m_planner, devices, settings);
    for (const engine::plan::Advice &a : advice) {
        QStringList flags;
        for (const auto &[flag, value] : a.changes.items())
            flags << (value.is_boolean() ? QStringLiteral("--%1").arg(fromStd(flag))
                                         : QStringLiteral("--%1 %2").arg(fromStd(flag),
                                               fromStd(value.is_string() ? value.get<std::string>() : value.dump())));
        auto *item = new QListWidgetItem(tr("Apply %1: %2").arg(flags.join(QLatin1Char(' ')), fromStd(a.why)), m_advice);
        item->setData(Qt::UserRole, fromStd(a.changes.dump()));
        item->setIcon(style()->standardIcon(QStyle::SP_DialogApplyButton));
    }
    // As tall as its suggestions (up to five lines' worth), so that one suggestion takes one line.
    int height = 2 * m_advice->frameWidth();
    for (int row = 0; row < m_advice->count(); ++row)
        height += m_advice->sizeHintForRow(row);
    m_advice->setFixedHeight(std::min(height, m_advice->fontMetrics().height() * 7));
    m_advice->setVisible(!advice.empty());
}

void PlanPage::applyAdvice(const QString &changesJson)
{
    const nlohmann::ordered_json changes = nlohmann::ordered_json::parse(changesJson.toStdString(), nullptr, false);
    if (!changes.is_object())
        return;
    // Set every field first (signals blocked, so that each does not re-plan), then plan once.
    const QSignalBlocker blockTrain(m_trainCombo), blockRank(m_rankSpin), blockCheck(m_checkpointingCheck),
        blockBatch(m_batchSpin), blockSeq(m_seqSpin), blockDtype(m_dtypeCombo);
    for (const auto &[flag, value] : changes.items()) {
        if (flag == "train" && value.is_string())
            m_trainCombo->setCurrentIndex(m_trainCombo->findData(fromStd(value.get<std::string>())));
        else if (flag == "lora-r" && value.is_number_integer())
            m_rankSpin->setValue(static_cast<int>(value.get<int64_t>()));
        else if (flag == "checkpointing" && value.is_boolean())
            m_checkpointingCheck->setChecked(value.get<bool>());
        else if (flag == "batch-size" && value.is_number_integer())
            m_batchSpin->setValue(static_cast<int>(value.get<int64_t>()));
        else if (flag == "seq-len" && value.is_number_integer())
            m_seqSpin->setValue(static_cast<int>(value.get<int64_t>()));
        else if (flag == "dtype" && value.is_string())
            m_dtypeCombo->setCurrentIndex(m_dtypeCombo->findData(fromStd(value.get<std::string>())));
    }
    replan();
}

QString PlanPage::verdictText(const Plan &plan) const
{
    const engine::plan::DeviceUsage *peak = plan.usageOf(plan.peak.device);
    const QString where = peak ? fromStd(engine::plan::deviceLabel(peak->device)) : fromStd(plan.peak.device);
    if (where.isEmpty()) // all on a disk without budget: no device to name, and nothing would run in memory
        return tr("Nothing is placed in memory: every module goes to disk. Give the devices larger budgets.");
    if (!plan.fits && plan.memoryFits) { // the memory fits, but the lint found an error: the run would fail
        for (const engine::plan::LintFinding &f : plan.lint) {
            if (f.severity == "error")
                return tr("The plan is invalid: %1").arg(fromStd(f.message));
        }
    }
    const QString bytes = bytesText(plan.peak.bytes);
    const QString phase = fromStd(engine::plan::phaseName(plan.peak.phase));
    // Whole sentences per subject, so "weights" (plural) and "training" (singular) each get their verb.
    switch (plan.settings.train) {
    case engine::plan::TrainMode::None:
        return plan.fits ? tr("The weights fit: the tightest device is %1, %2 at its peak in %3.").arg(where, bytes, phase)
                         : tr("The weights do not fit: %1 needs %2 at its peak in %3.").arg(where, bytes, phase);
    case engine::plan::TrainMode::Lora:
        return plan.fits ? tr("LoRA training fits: the tightest device is %1, %2 at its peak in %3.").arg(where, bytes, phase)
                         : tr("LoRA training does not fit: %1 needs %2 at its peak in %3.").arg(where, bytes, phase);
    case engine::plan::TrainMode::Full:
        break;
    }
    return plan.fits ? tr("Full fine-tuning fits: the tightest device is %1, %2 at its peak in %3.").arg(where, bytes, phase)
                     : tr("Full fine-tuning does not fit: %1 needs %2 at its peak in %3.").arg(where, bytes, phase);
}

void PlanPage::showPitfalls(const Plan &plan)
{
    m_lint->clear();
    std::vector<engine::plan::LintFinding> findings = plan.lint;
    std::stable_sort(findings.begin(), findings.end(), [](const auto &a, const auto &b) {
        return a.severity == "error" && b.severity != "error";
    });
    for (const auto &finding : findings) {
        const bool error = finding.severity == "error";
        auto *item = new QListWidgetItem(style()->standardIcon(error ? QStyle::SP_MessageBoxCritical : QStyle::SP_MessageBoxWarning),
                                         fromStd(finding.message) + QLatin1Char('\n') + tr("Fix: %1").arg(fromStd(finding.fix)),
                                         m_lint);
        item->setData(Qt::UserRole, fromStd(finding.severity));
        item->setToolTip(fromStd(finding.id));
    }
    if (plan.lint.empty())
        new QListWidgetItem(style()->standardIcon(QStyle::SP_DialogApplyButton), tr("No cross-device pitfalls in this plan."), m_lint);
}

void PlanPage::showError(const QString &text)
{
    m_advice->clear();
    m_advice->hide();
    m_verdictLabel->setText(text);
    QPalette palette = m_verdictLabel->palette();
    palette.setColor(QPalette::WindowText, QColor(0xc6, 0x28, 0x28));
    m_verdictLabel->setPalette(palette);
    Q_EMIT statusMessage(text, 15000);
}

void PlanPage::browseModel()
{
    const QString dir = QFileDialog::getExistingDirectory(this, tr("Open Model Folder"), m_modelPath);
    if (!dir.isEmpty())
        openModel(dir);
}

void PlanPage::addGpuPreset()
{
    const auto preset = engine::plan::findGpuPreset(m_presetCombo->currentData().toString().toStdString());
    if (!preset)
        return;
    try {
        auto devices = engine::plan::parseMaxMemory(m_memoryEdit->text().toStdString());
        int gpus = 0;
        for (const auto &d : devices)
            gpus += d.isGpu() ? 1 : 0;
        engine::plan::DeviceSpec gpu;
        gpu.kind = engine::plan::DeviceKind::Gpu;
        gpu.index = gpus;
        engine::plan::applyGpuPreset(gpu, *preset);
        devices.insert(devices.begin() + gpus, gpu);
        m_memoryEdit->setText(fromStd(engine::plan::maxMemoryText(devices)));
        replan();
    } catch (const std::exception &e) {
        showError(fromStd(e.what()));
    }
}

bool PlanPage::exportMap(const QString &file)
{
    if (!m_plan)
        return false;
    try { // written to a temporary file, renamed when whole: never half-written
        engine::writeFileAtomically(file.toStdString(), engine::plan::exportJson(*m_plan).dump(2) + "\n");
    } catch (const std::exception &e) {
        showError(fromStd(e.what()));
        return false;
    }
    Q_EMIT statusMessage(tr("Device map written to %1").arg(file), 10000);
    return true;
}

bool PlanPage::importMap(const QString &file)
{
    if (!m_planner || !m_plan)
        return false;
    try {
        const std::string path = file.toStdString();
        Plan skeleton = engine::plan::importDeviceMap(engine::plan::readDeviceMapFile(path), path, m_plan->devices,
                                                      m_plan->settings);
        Plan imported = m_planner->revalidate(std::move(skeleton));
        m_undo->push(new PlanMoveCommand(*this, *m_plan, std::move(imported), tr("Import %1").arg(QFileInfo(file).fileName())));
        return true;
    } catch (const std::exception &e) {
        showError(fromStd(e.what()));
        return false;
    }
}

void PlanPage::exportMapDialog()
{
    const QString file = QFileDialog::getSaveFileName(this, tr("Export Device Map"), QStringLiteral("device_map.json"),
                                                      tr("JSON (*.json)"));
    if (!file.isEmpty())
        exportMap(file);
}

void PlanPage::exportPythonDialog()
{
    if (!m_plan)
        return;
    const QString file = QFileDialog::getSaveFileName(this, tr("Export Python Snippet"), QStringLiteral("train_with_map.py"),
                                                      tr("Python (*.py)"));
    if (!file.isEmpty())
        exportPython(file);
}

bool PlanPage::exportPython(const QString &file)
{
    if (!m_plan)
        return false;
    try { // pythonSnippet loads the folder also when the page opened its config.json
        engine::writeFileAtomically(file.toStdString(), engine::plan::pythonSnippet(*m_plan, m_modelPath.toStdString()));
    } catch (const std::exception &e) {
        showError(fromStd(e.what()));
        return false;
    }
    Q_EMIT statusMessage(tr("Python snippet written to %1").arg(file), 10000);
    return true;
}

void PlanPage::importMapDialog()
{
    const QString file = QFileDialog::getOpenFileName(this, tr("Import Device Map"), QString(), tr("JSON (*.json)"));
    if (!file.isEmpty())
        importMap(file);
}

void PlanPage::dragEnterEvent(QDragEnterEvent *event)
{
    if (event->mimeData()->hasUrls() && event->mimeData()->urls().size() == 1 && event->mimeData()->urls()[0].isLocalFile())
        event->acceptProposedAction();
}

void PlanPage::dropEvent(QDropEvent *event)
{
    const QString path = event->mimeData()->urls().value(0).toLocalFile();
    if (!path.isEmpty()) {
        event->acceptProposedAction();
        openModel(path);
    }
}

} // namespace ui
