#include "ui/pages/inspectpage.h"

#include "bridge/enginebridge.h"
#include "engine/inspect/inspector.h"
#include "ui/widgets/autogradgraphview.h"
#include "ui/widgets/versiontimeline.h"

#include <QCheckBox>
#include <QComboBox>
#include <QDragEnterEvent>
#include <QDropEvent>
#include <QFileDialog>
#include <QFileInfo>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QLineEdit>
#include <QMimeData>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QTabWidget>
#include <QTableWidget>
#include <QUrl>
#include <QVBoxLayout>

#include <map>
#include <set>

namespace ui {
namespace {

using engine::inspect::InspectionReport;
using engine::inspect::InspectStatus;

QString fromStd(const std::string &text) { return QString::fromStdString(text); }

QString shapeText(const std::vector<int64_t> &shape)
{
    QStringList parts;
    for (int64_t d : shape)
        parts << QString::number(d);
    return QLatin1Char('[') + parts.join(QStringLiteral(", ")) + QLatin1Char(']');
}

QString moduleText(const std::string &module) { return module.empty() ? QStringLiteral("(no module)") : fromStd(module); }

VersionTimelineData timelineData(const InspectionReport &report)
{
    VersionTimelineData data;
    data.opCount = static_cast<int>(report.ops.size());
    for (const auto &op : report.ops) {
        if (op.phase == engine::inspect::Phase::Backward) {
            data.backwardStart = static_cast<int>(op.index);
            break;
        }
    }
    std::set<int64_t> conflictOps;
    int64_t conflictSaved = -1;
    if (report.conflict) {
        conflictSaved = report.conflict->savedTensorId;
        for (const auto &write : report.conflict->writes)
            conflictOps.insert(write.opIndex);
    }
    auto opName = [&](int64_t index) {
        return index >= 0 && index < static_cast<int64_t>(report.ops.size()) ? fromStd(report.ops[size_t(index)].name) : QString();
    };
    auto opModule = [&](int64_t index) {
        return index >= 0 && index < static_cast<int64_t>(report.ops.size()) ? fromStd(report.ops[size_t(index)].module) : QString();
    };
    // The op whose output first lies on each storage: a track is named after its tensor.
    std::map<int64_t, int64_t> producer;
    for (const auto &op : report.ops) {
        for (const auto &t : op.outputs) {
            if (t.storageId > 0)
                producer.emplace(t.storageId, op.index);
        }
    }
    for (const auto &storage : report.storages) {
        VersionTrack track;
        track.shape = fromStd(storage.label);
        track.name = fromStd(storage.name);
        if (const auto it = producer.find(storage.id); it != producer.end()) {
            track.producer = opName(it->second);
            track.producerOp = static_cast<int>(it->second);
            if (track.name.isEmpty()) {
                const QString module = opModule(it->second);
                track.name = module.isEmpty() ? QObject::tr("output of %1").arg(track.producer)
                                              : QObject::tr("output of %1 in %2").arg(track.producer, module);
            }
        }
        bool involved = false;
        for (const auto &event : storage.events) {
            VersionEvent mark;
            mark.opIndex = static_cast<int>(event.opIndex);
            mark.op = opName(event.opIndex);
            mark.module = opModule(event.opIndex);
            mark.version = static_cast<int>(event.version);
            switch (event.kind) {
            case engine::inspect::StorageEventKind::Save:
                mark.kind = VersionEventKind::SavedForBackward;
                mark.conflict = event.savedTensorId == conflictSaved && conflictSaved >= 0;
                break;
            case engine::inspect::StorageEventKind::Write:
                mark.kind = VersionEventKind::InplaceWrite;
                mark.conflict = conflictOps.count(event.opIndex) > 0;
                break;
            case engine::inspect::StorageEventKind::Unpack:
                mark.kind = VersionEventKind::UsedInBackward;
                mark.conflict = event.savedTensorId == conflictSaved && conflictSaved >= 0;
                break;
            }
            involved = involved || mark.conflict;
            track.events.push_back(mark);
        }
        if (involved && track.name.isEmpty())
            track.name = QObject::tr("the tensor written in place");
        // The storage in the conflict goes first: the answer before the detail.
        if (involved)
            data.tracks.prepend(track);
        else
            data.tracks.push_back(track);
    }
    return data;
}

AutogradGraphData graphData(const InspectionReport &report)
{
    AutogradGraphData data;
    const std::string failing = report.conflict ? report.conflict->backwardNode : std::string();
    for (const auto &node : report.graph.nodes) {
        AutogradNode item;
        item.id = static_cast<int>(node.id);
        item.name = fromStd(node.name);
        item.opIndex = static_cast<int>(node.forwardOp);
        if (node.forwardOp >= 0 && node.forwardOp < static_cast<int64_t>(report.ops.size())) {
            const auto &op = report.ops[size_t(node.forwardOp)];
            item.detail = fromStd(op.name) + (op.module.empty() ? QString() : QStringLiteral(" · ") + fromStd(op.module));
        }
        for (int64_t savedId : node.savedTensorIds) {
            if (savedId < 0 || savedId >= static_cast<int64_t>(report.savedTensors.size()))
                continue;
            const auto &saved = report.savedTensors[size_t(savedId)];
            AutogradSavedTensor row;
            row.name = QStringLiteral("saved %1").arg(savedId);
            row.description = shapeText(saved.tensor.shape) + QLatin1Char(' ') + fromStd(saved.tensor.dtype)
                              + QStringLiteral(" v%1").arg(saved.savedVersion);
            if (saved.versionAtCheck >= 0 && saved.versionAtCheck != saved.savedVersion)
                row.description += QStringLiteral(" (now v%1)").arg(saved.versionAtCheck);
            row.conflict = report.conflict && report.conflict->savedTensorId == savedId;
            item.failing = item.failing || row.conflict;
            item.saved.push_back(row);
        }
        if (!failing.empty() && node.name == failing && item.saved.isEmpty())
            item.failing = true;
        data.nodes.push_back(item);
    }
    for (const auto &edge : report.graph.edges)
        data.edges.push_back({static_cast<int>(edge.from), static_cast<int>(edge.to)});
    return data;
}

} // namespace

InspectPage::InspectPage(bridge::EngineBridge &bridge, QWidget *parent) : QWidget(parent), m_bridge(bridge)
{
    m_headline = new QLabel(tr("Run a built-in scenario, inspect your TorchScript module, or open a trace of your Python "
                               "program (tunebench record train.py) to see why backward failed or where a NaN began."),
                            this);
    m_headline->setObjectName(QStringLiteral("inspectHeadline"));
    m_headline->setWordWrap(true);
    m_headline->setTextInteractionFlags(Qt::TextSelectableByMouse);
    QFont headlineFont = m_headline->font();
    headlineFont.setPointSizeF(headlineFont.pointSizeF() * 1.25);
    headlineFont.setBold(true);
    m_headline->setFont(headlineFont);
    m_detail = new QLabel(this);
    m_detail->setObjectName(QStringLiteral("inspectDetail"));
    m_detail->setWordWrap(true);
    m_detail->setTextInteractionFlags(Qt::TextSelectableByMouse);

    m_tabs = new QTabWidget(this);
    m_timeline = new VersionTimelineWidget(m_tabs);
    m_graph = new AutogradGraphView(m_tabs);
    connect(m_timeline, &VersionTimelineWidget::opSelected, this, &InspectPage::selectOp);
    connect(m_graph, &AutogradGraphView::nodeSelected, this, [this](int id) {
        if (!m_report)
            return;
        for (const auto &node : m_report->graph.nodes) {
            if (node.id == id && node.forwardOp >= 0)
                selectOp(static_cast<int>(node.forwardOp));
        }
    });

    auto *opsTab = new QWidget(m_tabs);
    auto *opsLayout = new QVBoxLayout(opsTab);
    auto *filters = new QHBoxLayout;
    m_inplaceOnly = new QCheckBox(tr("In-place only"), opsTab);
    m_moduleFilter = new QLineEdit(opsTab);
    m_moduleFilter->setPlaceholderText(tr("module contains…"));
    m_tensorFilter = new QLineEdit(opsTab);
    m_tensorFilter->setPlaceholderText(tr("tensor shape contains…, e.g. [1, 16"));
    filters->addWidget(m_inplaceOnly);
    filters->addWidget(m_moduleFilter, 1);
    filters->addWidget(m_tensorFilter, 1);
    connect(m_inplaceOnly, &QCheckBox::toggled, this, &InspectPage::fillOps);
    connect(m_moduleFilter, &QLineEdit::textChanged, this, &InspectPage::fillOps);
    connect(m_tensorFilter, &QLineEdit::textChanged, this, &InspectPage::fillOps);
    m_ops = new QTableWidget(0, 6, opsTab);
    m_ops->setObjectName(QStringLiteral("inspectOps"));
    m_ops->setHorizontalHeaderLabels({tr("#"), tr("Phase"), tr("Op"), tr("Module"), tr("Tensors"), tr("Versions")});
    m_ops->horizontalHeader()->setStretchLastSection(true);
    m_ops->verticalHeader()->hide();
    m_ops->setEditTriggers(QAbstractItemView::NoEditTriggers);
    m_ops->setSelectionBehavior(QAbstractItemView::SelectRows);
    opsLayout->addLayout(filters);
    opsLayout->addWidget(m_ops, 1);

    m_gradients = new QTableWidget(0, 7, m_tabs);
    m_gradients->setObjectName(QStringLiteral("inspectGradients"));
    m_gradients->setHorizontalHeaderLabels(
        {tr("Parameter"), tr("Shape"), tr("Device"), tr("Trainable"), tr("Grad norm"), tr("In optimizer"), tr("Problem")});
    m_gradients->horizontalHeader()->setStretchLastSection(true);
    m_gradients->verticalHeader()->hide();
    m_gradients->setEditTriggers(QAbstractItemView::NoEditTriggers);

    m_pytorchError = new QPlainTextEdit(m_tabs);
    m_pytorchError->setReadOnly(true);

    m_tabs->addTab(m_timeline, tr("Versions"));
    m_tabs->addTab(m_graph, tr("Autograd graph"));
    m_tabs->addTab(opsTab, tr("Ops"));
    m_tabs->addTab(m_gradients, tr("Gradients"));
    m_tabs->addTab(m_pytorchError, tr("PyTorch's message"));

    auto *layout = new QVBoxLayout(this);
    layout->addWidget(createSourceBar());
    layout->addWidget(m_headline);
    layout->addWidget(m_detail);
    layout->addWidget(m_tabs, 1);

    connect(&m_bridge, &bridge::EngineBridge::inspectionFinished, this, &InspectPage::onInspectionFinished);
    setAcceptDrops(true);
    connect(&m_bridge, &bridge::EngineBridge::busyChanged, this, [this](bool busy) {
        m_runButton->setEnabled(!busy);
        m_scriptButton->setEnabled(!busy);
        m_traceButton->setEnabled(!busy);
        m_fixButton->setEnabled(!busy && !m_lastScenario.isEmpty() && m_lastScenario != QLatin1String("kv-cache-fixed"));
    });
}

InspectPage::~InspectPage() = default;

QWidget *InspectPage::createSourceBar()
{
    auto *bar = new QWidget(this);
    auto *row = new QHBoxLayout(bar);
    row->setContentsMargins(0, 0, 0, 0);
    m_scenarioCombo = new QComboBox(bar);
    m_scenarioCombo->setObjectName(QStringLiteral("inspectScenario"));
    for (const std::string &name : engine::inspect::scenarioNames()) {
        m_scenarioCombo->addItem(fromStd(name), fromStd(name));
        m_scenarioCombo->setItemData(m_scenarioCombo->count() - 1, fromStd(engine::inspect::scenarioDescription(name)),
                                     Qt::ToolTipRole);
    }
    m_runButton = new QPushButton(tr("Inspect Scenario"), bar);
    m_runButton->setObjectName(QStringLiteral("inspectRun"));
    connect(m_runButton, &QPushButton::clicked, this, &InspectPage::runSelectedScenario);
    m_fixButton = new QPushButton(tr("Verify Fix"), bar);
    m_fixButton->setObjectName(QStringLiteral("inspectVerifyFix"));
    m_fixButton->setEnabled(false);
    connect(m_fixButton, &QPushButton::clicked, this, &InspectPage::verifyFix);
    m_scriptButton = new QPushButton(tr("Inspect TorchScript…"), bar);
    connect(m_scriptButton, &QPushButton::clicked, this, &InspectPage::inspectTorchScriptDialog);
    m_traceButton = new QPushButton(tr("Open Trace…"), bar);
    m_traceButton->setObjectName(QStringLiteral("inspectOpenTrace"));
    m_traceButton->setToolTip(tr("A trace of your Python program, written by tunebench record (or python3 -m "
                                 "tunebench_record) when backward failed or a NaN appeared; you can also drop it here"));
    connect(m_traceButton, &QPushButton::clicked, this, &InspectPage::openTraceDialog);
    row->addWidget(new QLabel(tr("Scenario:"), bar));
    row->addWidget(m_scenarioCombo);
    row->addWidget(m_runButton);
    row->addWidget(m_fixButton);
    row->addStretch(1);
    row->addWidget(m_scriptButton);
    row->addWidget(m_traceButton);
    return bar;
}

bool InspectPage::inspect(const bridge::InspectRequest &request)
{
    QString error;
    if (!m_bridge.startInspection(request, &error)) {
        Q_EMIT statusMessage(error, 10000);
        return false;
    }
    m_waiting = true;
    const bool scenario = request.kind == bridge::InspectRequest::Kind::Scenario
        || request.kind == bridge::InspectRequest::Kind::VerifyFix;
    m_lastScenario = scenario ? request.scenario : QString();
    m_headline->setText(tr("Recording one step…"));
    m_detail->clear();
    return true;
}

bool InspectPage::inspectScenario(const QString &name)
{
    const int index = m_scenarioCombo->findData(name);
    if (index >= 0)
        m_scenarioCombo->setCurrentIndex(index);
    bridge::InspectRequest request;
    request.kind = bridge::InspectRequest::Kind::Scenario;
    request.scenario = name;
    return inspect(request);
}

void InspectPage::runSelectedScenario() { inspectScenario(m_scenarioCombo->currentData().toString()); }

void InspectPage::verifyFix()
{
    bridge::InspectRequest request;
    request.kind = bridge::InspectRequest::Kind::VerifyFix;
    request.scenario = m_lastScenario;
    inspect(request);
}

void InspectPage::inspectTorchScriptDialog()
{
    const QString module = QFileDialog::getOpenFileName(this, tr("TorchScript Module"), QString(), tr("TorchScript (*.pt *.pth)"));
    if (module.isEmpty())
        return;
    const QString inputs = QFileDialog::getOpenFileName(this, tr("Inputs: torch.save([t1, t2, …])"), QString(),
                                                        tr("Tensors (*.pt *.pth)"));
    if (inputs.isEmpty())
        return;
    bridge::InspectRequest request;
    request.kind = bridge::InspectRequest::Kind::TorchScript;
    request.path = module;
    request.inputs = inputs;
    inspect(request);
}

bool InspectPage::openTrace(const QString &path)
{
    bridge::InspectRequest request;
    request.kind = bridge::InspectRequest::Kind::Trace;
    request.path = path;
    return inspect(request);
}

void InspectPage::openTraceDialog()
{
    const QString trace = QFileDialog::getOpenFileName(this, tr("Open a Trace of Your Program"), QString(),
                                                       tr("Traces (*.jsonl *.trace);;All files (*)"));
    if (!trace.isEmpty())
        openTrace(trace);
}

void InspectPage::dragEnterEvent(QDragEnterEvent *event)
{
    const QList<QUrl> urls = event->mimeData()->urls();
    if (urls.size() == 1 && urls.front().isLocalFile() && QFileInfo(urls.front().toLocalFile()).isFile())
        event->acceptProposedAction();
}

void InspectPage::dropEvent(QDropEvent *event)
{
    const QString path = event->mimeData()->urls().value(0).toLocalFile();
    if (path.isEmpty() || !openTrace(path))
        return;
    event->acceptProposedAction();
}

void InspectPage::onInspectionFinished(const bridge::InspectionResult &report)
{
    if (!m_waiting)
        return;
    m_waiting = false;
    showReport(report);
}

QString InspectPage::diagnosisText() const { return m_headline->text(); }

void InspectPage::showReport(const bridge::InspectionResult &result)
{
    m_report = result;
    if (!m_report)
        return;
    const InspectionReport &r = *m_report;
    QString headline;
    QStringList detail;
    switch (r.status) {
    case InspectStatus::InplaceConflict: {
        const auto &c = *r.conflict;
        headline = tr("This write broke backward: %1 in %2 (op #%3) wrote the %4 %5 tensor that %6 saved for %7 "
                      "(version %8, now %9).")
                       .arg(fromStd(c.culpritOp), moduleText(c.culpritModule), QString::number(c.culpritIndex),
                            shapeText(c.tensorShape), fromStd(c.dtype), fromStd(c.savedByOp), fromStd(c.backwardNode))
                       .arg(c.savedVersion)
                       .arg(c.currentVersion);
        if (c.culpritSource)
            detail << tr("In your code: %1:%2 (%3): %4")
                          .arg(fromStd(c.culpritSource->file))
                          .arg(c.culpritSource->line)
                          .arg(fromStd(c.culpritSource->function), fromStd(c.culpritSource->code));
        if (!c.storageName.empty())
            detail << tr("The tensor written is %1.").arg(fromStd(c.storageName));
        if (!c.fixes.empty())
            detail << tr("Fix: %1").arg(fromStd(c.fixes.front()));
        for (size_t i = 1; i < c.fixes.size(); ++i)
            detail << tr("Or: %1").arg(fromStd(c.fixes[i]));
        if (c.predicted)
            detail << tr("Predicted before backward ran, from the saved tensors' versions.");
        break;
    }
    case InspectStatus::Nan: {
        const auto &n = *r.nan;
        headline = tr("%1 first appeared in %2 (%3, %4 pass, op #%5).")
                       .arg(n.hasNan ? QStringLiteral("NaN") : QStringLiteral("Inf"), fromStd(n.op), moduleText(n.module),
                            fromStd(engine::inspect::phaseName(n.phase)), QString::number(n.opIndex));
        if (n.source)
            detail << tr("In your code: %1:%2 (%3): %4")
                          .arg(fromStd(n.source->file))
                          .arg(n.source->line)
                          .arg(fromStd(n.source->function), fromStd(n.source->code));
        for (const auto &input : n.inputs)
            detail << tr("input %1 %2: values from %3 to %4").arg(shapeText(input.shape), fromStd(input.dtype)).arg(input.min).arg(input.max);
        break;
    }
    case InspectStatus::SilentMutation: {
        const auto &m = r.mutations.front();
        headline = tr("A tensor saved by %1 for %2 (in %3) changed without a version bump: backward used altered values "
                      "and its gradients are wrong.")
                       .arg(fromStd(m.savedByOp), fromStd(m.backwardNode), moduleText(m.module));
        detail << tr("Writes through .data or custom kernels bypass autograd's version counter; write to a clone instead.");
        break;
    }
    case InspectStatus::Error:
        headline = tr("The inspection could not run: %1").arg(fromStd(r.error));
        break;
    case InspectStatus::Ok:
        if (!r.gradientProblems.empty()) {
            // The findings first: backward ran, but the optimizer or the gradients are wrong.
            headline = tr("Backward succeeded, but %1.").arg(fromStd(r.gradientProblems.front()));
            detail << tr("No in-place conflict, no NaN, no silent mutation.");
        } else {
            headline = r.backwardSucceeded ? tr("Backward succeeded: no in-place conflict, no NaN, no silent mutation.")
                                           : fromStd(r.summary);
        }
        break;
    }
    for (size_t i = r.status == InspectStatus::Ok ? 1 : 0; i < r.gradientProblems.size(); ++i)
        detail << fromStd(r.gradientProblems[i]);
    if (r.stats.opsDropped > 0)
        detail << tr("The recording kept %1 of %2 ops (memory bound %3 MiB).")
                      .arg(r.stats.opsKept)
                      .arg(r.stats.opsSeen)
                      .arg(r.stats.byteLimit >> 20);
    m_headline->setText(headline);
    m_detail->setText(detail.join(QLatin1Char('\n')));
    // Red: backward failed or its gradients are wrong; amber: it ran, with findings; green: clean.
    QPalette palette = m_headline->palette();
    const bool failed = r.status != InspectStatus::Ok;
    const bool warned = !failed && !r.gradientProblems.empty();
    palette.setColor(QPalette::WindowText, failed ? QColor(0xc6, 0x28, 0x28)
                                           : warned ? QColor(0xb2, 0x6a, 0x00)
                                                    : QColor(0x2e, 0x7d, 0x32));
    m_headline->setPalette(palette);
    m_headline->setProperty("severity", failed ? QStringLiteral("error") : warned ? QStringLiteral("warning") : QStringLiteral("ok"));

    m_timeline->setData(timelineData(r));
    m_graph->setData(graphData(r));
    fillOps();
    fillGradients();
    m_pytorchError->setPlainText(r.pytorchError.empty() ? tr("PyTorch raised no error for this step.") : fromStd(r.pytorchError));
    m_fixButton->setEnabled(!m_lastScenario.isEmpty() && r.status != InspectStatus::Ok && !m_bridge.isBusy());
    if (r.conflict && r.conflict->culpritIndex >= 0)
        selectOp(static_cast<int>(r.conflict->culpritIndex));
    Q_EMIT reportShown();
}

void InspectPage::fillOps()
{
    m_ops->setRowCount(0);
    if (!m_report)
        return;
    const QString moduleFilter = m_moduleFilter->text().trimmed();
    const QString tensorFilter = m_tensorFilter->text().trimmed();
    for (const auto &op : m_report->ops) {
        if (m_inplaceOnly->isChecked() && !op.writesInput)
            continue;
        if (!moduleFilter.isEmpty() && !fromStd(op.module).contains(moduleFilter))
            continue;
        QStringList tensors;
        QStringList versions;
        for (const auto &t : op.inputs) {
            tensors << shapeText(t.shape) + (t.written ? QStringLiteral("!") : QString());
            if (t.written)
                versions << QStringLiteral("v%1→v%2").arg(t.versionBefore).arg(t.versionAfter);
        }
        const QString tensorText = tensors.join(QStringLiteral(" "));
        if (!tensorFilter.isEmpty() && !tensorText.contains(tensorFilter))
            continue;
        const int row = m_ops->rowCount();
        m_ops->insertRow(row);
        auto *indexItem = new QTableWidgetItem(QString::number(op.index));
        indexItem->setData(Qt::UserRole, static_cast<int>(op.index));
        m_ops->setItem(row, 0, indexItem);
        m_ops->setItem(row, 1, new QTableWidgetItem(fromStd(engine::inspect::phaseName(op.phase))));
        m_ops->setItem(row, 2, new QTableWidgetItem(fromStd(op.name)));
        m_ops->setItem(row, 3, new QTableWidgetItem(fromStd(op.module)));
        m_ops->setItem(row, 4, new QTableWidgetItem(tensorText));
        m_ops->setItem(row, 5, new QTableWidgetItem(versions.join(QStringLiteral(" "))));
        const bool culprit = m_report->conflict && m_report->conflict->culpritIndex == op.index;
        if (culprit) {
            for (int column = 0; column < m_ops->columnCount(); ++column)
                m_ops->item(row, column)->setForeground(QColor(0xc6, 0x28, 0x28));
        }
    }
}

void InspectPage::fillGradients()
{
    m_gradients->setRowCount(0);
    if (!m_report)
        return;
    for (const auto &g : m_report->gradients) {
        const int row = m_gradients->rowCount();
        m_gradients->insertRow(row);
        m_gradients->setItem(row, 0, new QTableWidgetItem(fromStd(g.name)));
        m_gradients->setItem(row, 1, new QTableWidgetItem(shapeText(g.shape)));
        m_gradients->setItem(row, 2, new QTableWidgetItem(fromStd(g.device)));
        m_gradients->setItem(row, 3, new QTableWidgetItem(g.requiresGrad ? tr("yes") : tr("frozen")));
        m_gradients->setItem(row, 4, new QTableWidgetItem(g.hasGrad ? QString::number(g.gradNorm, 'g', 4) : tr("none")));
        m_gradients->setItem(row, 5, new QTableWidgetItem(!g.optimizerKnown ? tr("—") : g.inOptimizer ? tr("yes") : tr("no")));
        m_gradients->setItem(row, 6, new QTableWidgetItem(fromStd(g.problem)));
        if (!g.problem.empty()) {
            for (int column = 0; column < m_gradients->columnCount(); ++column)
                m_gradients->item(row, column)->setForeground(QColor(0xc6, 0x28, 0x28));
        }
    }
}

void InspectPage::selectOp(int opIndex)
{
    m_timeline->setSelectedOp(opIndex);
    for (int row = 0; row < m_ops->rowCount(); ++row) {
        if (m_ops->item(row, 0)->data(Qt::UserRole).toInt() == opIndex) {
            m_ops->selectRow(row);
            m_ops->scrollToItem(m_ops->item(row, 0));
            return;
        }
    }
}

} // namespace ui
