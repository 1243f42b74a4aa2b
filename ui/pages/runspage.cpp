#include "ui/pages/runspage.h"

#include "engine/store/runfolder.h"
#include "engine/store/runstore.h"
#include "ui/models/runsmodel.h"
#include "ui/models/runsreader.h"

#include "ui/widgets/metricplots.h"

#include <QAction>
#include <QCheckBox>
#include <QDesktopServices>
#include <QDir>
#include <QFontDatabase>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QInputDialog>
#include <QJsonDocument>
#include <QLabel>
#include <QLineEdit>
#include <QLocale>
#include <QMessageBox>
#include <QPlainTextEdit>
#include <QPointer>
#include <QPushButton>
#include <QRegularExpression>
#include <QShortcut>
#include <QSplitter>
#include <QStyle>
#include <QTableView>
#include <QTextDocument>
#include <QTimer>
#include <QToolButton>
#include <QUrl>
#include <QVBoxLayout>

#include <algorithm>
#include <optional>
#include <utility>

namespace ui {
namespace {

using engine::store::RunStatus;

/// At most this many runs are overlaid (reading a run's curves takes a moment).
constexpr int kMaxOverlaidRuns = 16;
/// While a run is running, read everything again every this many polls even if nothing was committed:
/// a run whose process died is only found by looking.
constexpr int kRefreshEveryPolls = 5;

/// The most steps a run may have in all (the trainer refuses more).
constexpr int kMaxSteps = 100'000'000;

QString firstUpper(QString text)
{
    if (!text.isEmpty())
        text[0] = text[0].toUpper();
    return text;
}

std::vector<std::string> parseTags(const QString &text)
{
    std::vector<std::string> tags;
    static const QRegularExpression separators(QStringLiteral("[\\s,]+"));
    for (const QString &tag : text.split(separators, Qt::SkipEmptyParts))
        tags.push_back(tag.toStdString());
    return tags;
}

/// Tags as the store keeps them: sorted, no duplicates.
std::vector<std::string> sortedTags(std::vector<std::string> tags)
{
    std::sort(tags.begin(), tags.end());
    tags.erase(std::unique(tags.begin(), tags.end()), tags.end());
    return tags;
}

QString tagsText(const engine::store::RunRecord &run)
{
    QStringList tags;
    for (const auto &tag : run.tags)
        tags << QString::fromStdString(tag);
    return tags.join(QStringLiteral(", "));
}

QString prettyJson(const std::string &json)
{
    const QJsonDocument document = QJsonDocument::fromJson(QByteArray::fromStdString(json));
    return document.isNull() ? QString::fromStdString(json) : QString::fromUtf8(document.toJson(QJsonDocument::Indented));
}

/// "2 (data parallel, torchrun)" for a run trained by several ranks; empty for one process.
QString ranksText(const engine::store::RunConfig &config)
{
    if (config.worldSize <= 1)
        return {};
    const QString launcher = QString::fromStdString(config.launcher);
    return launcher.isEmpty() ? RunsPage::tr("%1 (data parallel)").arg(config.worldSize)
                              : RunsPage::tr("%1 (data parallel, %2)").arg(config.worldSize).arg(launcher);
}

/// The steps the run was started with (training.steps), if its config says.
std::optional<qint64> configuredSteps(const engine::store::RunConfig &config)
{
    const auto steps = config.training.find("steps");
    if (steps == config.training.end() || !steps->is_number_integer())
        return std::nullopt;
    return steps->get<qint64>();
}

} // namespace

RunsPage::RunsPage(const QString &storePath, QWidget *parent)
    : QWidget(parent), m_storePath(storePath), m_openUrl([](const QUrl &url) { return QDesktopServices::openUrl(url); })
{
    m_model = new RunsModel(this);
    m_proxy = new RunsFilterModel(this);
    m_proxy->setSourceModel(m_model);
    m_reader = new RunsReader(this);
    m_reader->setStorePath(m_storePath);
    connect(m_reader, &RunsReader::snapshotRead, this, &RunsPage::applySnapshot);
    connect(m_reader, &RunsReader::pollUnchanged, this, &RunsPage::applyPollUnchanged);
    connect(m_reader, &RunsReader::curvesRead, this, &RunsPage::applyCurves);
    connect(m_reader, &RunsReader::metricsRead, this, &RunsPage::applyMetrics);
    connect(m_reader, &RunsReader::runFolderFound, this, &RunsPage::applyRunFolder);
    connect(m_reader, &RunsReader::runFolderLocated, this, &RunsPage::openLocatedFolder);
    connect(m_reader, &RunsReader::createdFoldersFound, this, &RunsPage::confirmDeletion);
    connect(m_reader, &RunsReader::runEdited, this, &RunsPage::applyEdit);
    connect(m_reader, &RunsReader::runsDeleted, this, &RunsPage::applyDeletion);

    m_view = new QTableView(this);
    m_view->setObjectName(QStringLiteral("runsTable"));
    m_view->setModel(m_proxy);
    m_view->setSortingEnabled(true);
    m_view->sortByColumn(RunsModel::IdColumn, Qt::DescendingOrder);
    m_view->setSelectionBehavior(QAbstractItemView::SelectRows);
    m_view->setSelectionMode(QAbstractItemView::ExtendedSelection);
    m_view->setAlternatingRowColors(true);
    m_view->setEditTriggers(QAbstractItemView::DoubleClicked | QAbstractItemView::EditKeyPressed);
    m_view->setContextMenuPolicy(Qt::ActionsContextMenu);
    m_view->setWordWrap(false);
    m_view->verticalHeader()->hide();
    m_view->horizontalHeader()->setStretchLastSection(true);
    m_view->horizontalHeader()->setSectionResizeMode(QHeaderView::Interactive);
    // A run's status changes while it is shown (Running -> Succeeded): its column follows its words.
    m_view->horizontalHeader()->setSectionResizeMode(RunsModel::StatusColumn, QHeaderView::ResizeToContents);
    m_view->horizontalHeader()->setSortIndicatorShown(true);
    connect(m_model, &RunsModel::renameRequested, this, &RunsPage::renameRun);

    m_filter = new QLineEdit(this);
    m_filter->setObjectName(QStringLiteral("runsFilter"));
    m_filter->setClearButtonEnabled(true);
    m_filter->setPlaceholderText(tr("Filter: name, model, tag, notes, status (tag:x, status:failed, -exclude)"));
    m_filter->setToolTip(tr("Every word must match: a word matches a run's name, model, method, status, notes or "
                            "tags. tag:x needs the tag x, status:fail a status starting with \"fail\", name:, model:, "
                            "method: and notes: look in that field only, -word excludes, \"two words\" keeps a space."));
    connect(m_filter, &QLineEdit::textChanged, this, [this](const QString &text) {
        m_proxy->setFilterText(text);
        updateSummaryLabel();
    });

    auto *refreshButton = new QPushButton(tr("&Refresh"), this);
    refreshButton->setObjectName(QStringLiteral("refreshButton"));
    refreshButton->setShortcut(QKeySequence::Refresh);
    refreshButton->setToolTip(tr("Read the run store again (%1); the table also follows it by itself")
                                  .arg(QKeySequence(QKeySequence::Refresh).toString(QKeySequence::NativeText)));
    connect(refreshButton, &QPushButton::clicked, this, &RunsPage::refresh);

    m_summary = new QLabel(this);
    m_summary->setObjectName(QStringLiteral("runsSummary"));
    m_summary->setTextInteractionFlags(Qt::TextSelectableByMouse);

    // The page's one message line (a store it cannot use, an action that failed): never a dialog.
    auto *messageFrame = new QFrame(this);
    messageFrame->setObjectName(QStringLiteral("runsMessageFrame"));
    messageFrame->setFrameShape(QFrame::StyledPanel);
    auto *messageIcon = new QLabel(messageFrame);
    const int iconSize = style()->pixelMetric(QStyle::PM_SmallIconSize);
    messageIcon->setPixmap(style()->standardIcon(QStyle::SP_MessageBoxWarning).pixmap(iconSize, iconSize));
    m_messageLabel = new QLabel(messageFrame);
    m_messageLabel->setObjectName(QStringLiteral("runsMessage"));
    m_messageLabel->setWordWrap(true);
    m_messageLabel->setTextInteractionFlags(Qt::TextSelectableByMouse);
    auto *messageLayout = new QHBoxLayout(messageFrame);
    messageLayout->setContentsMargins(6, 4, 6, 4);
    messageLayout->addWidget(messageIcon, 0, Qt::AlignTop);
    messageLayout->addWidget(m_messageLabel, 1);
    messageFrame->hide();

    m_tableSplitter = new QSplitter(Qt::Vertical, this);
    m_tableSplitter->setObjectName(QStringLiteral("runsTableSplitter"));
    m_tableSplitter->addWidget(m_view);
    // Built whole, then handed to the splitter: Qt 6.8's QSplitter takes a child in when it is created
    // (ChildAdded), before its constructor has run, and corrupted the heap here.
    m_plots = new MetricPlots;
    m_plots->setObjectName(QStringLiteral("runsPlots"));
    m_tableSplitter->addWidget(m_plots);
    m_tableSplitter->setStretchFactor(0, 2);
    m_tableSplitter->setStretchFactor(1, 3);
    m_tableSplitter->setChildrenCollapsible(false);

    createActions();
    auto *splitter = new QSplitter(Qt::Horizontal, this);
    splitter->setObjectName(QStringLiteral("runsSplitter"));
    splitter->addWidget(m_tableSplitter);
    splitter->addWidget(createDetailsPanel());
    splitter->setStretchFactor(0, 3);
    splitter->setStretchFactor(1, 1);

    auto *top = new QHBoxLayout;
    top->addWidget(m_filter, 2);
    top->addWidget(m_summary, 1);
    top->addWidget(refreshButton);
    auto *layout = new QVBoxLayout(this);
    layout->addLayout(top);
    layout->addWidget(messageFrame);
    layout->addWidget(splitter, 1);

    m_pollTimer = new QTimer(this);
    m_pollTimer->setSingleShot(true);
    connect(m_pollTimer, &QTimer::timeout, this, &RunsPage::poll);
    // Selecting with the mouse or keys changes the selection in steps: load the overlay once after.
    m_overlayTimer = new QTimer(this);
    m_overlayTimer->setSingleShot(true);
    m_overlayTimer->setInterval(50);
    connect(m_overlayTimer, &QTimer::timeout, this, [this] { updateOverlay(); });
    connect(m_view->selectionModel(), &QItemSelectionModel::selectionChanged, this, [this] {
        updateDetails();
        updateActions();
        m_overlayTimer->start();
    });
    connect(m_view->selectionModel(), &QItemSelectionModel::currentRowChanged, this, [this] {
        updateDetails();
        updateActions();
    });

    refresh();
}

RunsPage::~RunsPage()
{
    saveNotes();
    saveTags();
    // QWidget's destructor closes an open name editor, which commits it: no rename once the store
    // connection is gone; and it moves the focus, which finishes an edit of the tags (saved above).
    disconnect(m_model, nullptr, this, nullptr);
    disconnect(m_tagsEdit, nullptr, this, nullptr);
    disconnect(m_view->selectionModel(), nullptr, this, nullptr);
    // The reader's destructor waits for the writes just sent; their answers are not wanted any more.
    disconnect(m_reader, nullptr, this, nullptr);
    delete m_reader;
    m_reader = nullptr;
}

bool RunsPage::isWaitingForStore() const
{
    return m_reader && m_reader->isBusy();
}

void RunsPage::createActions()
{
    const auto make = [this](const QString &text, const QKeySequence &shortcut, const char *name, auto slot) {
        auto *action = new QAction(text, this);
        action->setObjectName(QString::fromLatin1(name));
        action->setShortcut(shortcut);
        // Only while the table has the focus: Delete in the notes deletes text, not runs.
        action->setShortcutContext(Qt::WidgetShortcut);
        const QString plain = QString(text).remove(QLatin1Char('&')).remove(QStringLiteral("..."));
        action->setToolTip(shortcut.isEmpty() ? plain
                                              : QStringLiteral("%1 (%2)").arg(plain, shortcut.toString(QKeySequence::NativeText)));
        connect(action, &QAction::triggered, this, slot);
        m_view->addAction(action);
        return action;
    };
    m_renameAction = make(tr("&Rename"), QKeySequence(Qt::Key_F2), "renameAction", &RunsPage::renameCurrentRun);
    m_editNotesAction = make(tr("Edit &Notes"), QKeySequence(Qt::CTRL | Qt::Key_E), "editNotesAction", [this] {
        m_notesEdit->setFocus(Qt::ShortcutFocusReason);
        m_notesEdit->moveCursor(QTextCursor::End);
    });
    m_editTagsAction = make(tr("Edit &Tags"), QKeySequence(Qt::CTRL | Qt::Key_T), "editTagsAction", [this] {
        m_tagsEdit->setFocus(Qt::ShortcutFocusReason);
        m_tagsEdit->selectAll();
    });
    m_openFolderAction = make(tr("&Open Run Folder"), QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_O), "openFolderAction",
                              &RunsPage::openRunFolder);
    m_cloneAction = make(tr("&Clone Settings into Train"), QKeySequence(Qt::CTRL | Qt::Key_D), "cloneAction",
                         &RunsPage::cloneSettings);
    // Their tooltips say why they are refused (updateResumeActions).
    m_resumeAction = make(tr("Res&ume"), QKeySequence(), "resumeAction", &RunsPage::resumeSelectedRun);
    m_continueAction = make(tr("Continue Tr&aining..."), QKeySequence(), "continueAction", &RunsPage::continueSelectedRun);
    auto *separator = new QAction(this);
    separator->setSeparator(true);
    m_view->addAction(separator);
    m_deleteAction = make(tr("&Delete..."), QKeySequence(QKeySequence::Delete), "deleteAction", &RunsPage::deleteSelectedRuns);

    auto *find = new QAction(tr("Filter Runs"), this);
    find->setShortcut(QKeySequence::Find);
    find->setShortcutContext(Qt::WidgetWithChildrenShortcut);
    connect(find, &QAction::triggered, this, [this] {
        m_filter->setFocus(Qt::ShortcutFocusReason);
        m_filter->selectAll();
    });
    addAction(find);
}

QWidget *RunsPage::createDetailsPanel()
{
    m_details = new QWidget(this);
    m_details->setObjectName(QStringLiteral("runDetails"));
    m_detailsTitle = new QLabel(m_details);
    m_detailsTitle->setObjectName(QStringLiteral("runDetailsTitle"));
    QFont titleFont = m_detailsTitle->font();
    titleFont.setBold(true);
    titleFont.setPointSizeF(titleFont.pointSizeF() * 1.15);
    m_detailsTitle->setFont(titleFont);
    m_detailsTitle->setWordWrap(true);
    m_detailsTitle->setTextInteractionFlags(Qt::TextSelectableByMouse);
    m_detailsFacts = new QLabel(m_details);
    m_detailsFacts->setObjectName(QStringLiteral("runDetailsFacts"));
    m_detailsFacts->setWordWrap(true);
    m_detailsFacts->setTextInteractionFlags(Qt::TextSelectableByMouse);

    m_tagsEdit = new QLineEdit(m_details);
    m_tagsEdit->setObjectName(QStringLiteral("tagsEdit"));
    m_tagsEdit->setPlaceholderText(tr("tags, separated by commas or spaces"));
    connect(m_tagsEdit, &QLineEdit::editingFinished, this, &RunsPage::saveTags);

    m_notesEdit = new QPlainTextEdit(m_details);
    m_notesEdit->setObjectName(QStringLiteral("notesEdit"));
    m_notesEdit->setPlaceholderText(tr("What you tried and what you saw"));
    m_notesEdit->setTabChangesFocus(true);
    m_saveNotesButton = new QPushButton(tr("&Save Notes"), m_details);
    m_saveNotesButton->setObjectName(QStringLiteral("saveNotesButton"));
    m_saveNotesButton->setEnabled(false);
    m_saveNotesButton->setToolTip(tr("Save the notes (%1); they are also saved when you select another run")
                                      .arg(QKeySequence(QKeySequence::Save).toString(QKeySequence::NativeText)));
    connect(m_saveNotesButton, &QPushButton::clicked, this, &RunsPage::saveNotes);
    connect(m_notesEdit->document(), &QTextDocument::modificationChanged, m_saveNotesButton, [this](bool modified) {
        m_saveNotesButton->setEnabled(modified && m_detailsRunId >= 0 && isWritable());
    });
    auto *saveShortcut = new QShortcut(QKeySequence::Save, m_notesEdit, nullptr, nullptr, Qt::WidgetShortcut);
    connect(saveShortcut, &QShortcut::activated, this, &RunsPage::saveNotes);

    m_configView = new QPlainTextEdit(m_details);
    m_configView->setObjectName(QStringLiteral("configView"));
    m_configView->setReadOnly(true);
    m_configView->setFont(QFontDatabase::systemFont(QFontDatabase::FixedFont));
    m_configView->setLineWrapMode(QPlainTextEdit::NoWrap);

    const auto button = [this](QAction *action, const char *name) {
        auto *b = new QToolButton(m_details);
        b->setObjectName(QString::fromLatin1(name));
        b->setDefaultAction(action);
        b->setToolButtonStyle(Qt::ToolButtonTextOnly);
        return b;
    };
    auto *trainButtons = new QHBoxLayout;
    trainButtons->addWidget(button(m_resumeAction, "resumeButton"));
    trainButtons->addWidget(button(m_continueAction, "continueButton"));
    trainButtons->addStretch(1);
    auto *buttons = new QHBoxLayout;
    buttons->addWidget(button(m_openFolderAction, "openFolderButton"));
    buttons->addWidget(button(m_cloneAction, "cloneButton"));
    buttons->addStretch(1);
    buttons->addWidget(button(m_deleteAction, "deleteButton"));

    auto *notesRow = new QHBoxLayout;
    notesRow->addWidget(new QLabel(tr("Notes"), m_details), 1);
    notesRow->addWidget(m_saveNotesButton);

    auto *layout = new QVBoxLayout(m_details);
    layout->setContentsMargins(6, 0, 0, 0);
    layout->addWidget(m_detailsTitle);
    layout->addWidget(m_detailsFacts);
    layout->addLayout(trainButtons);
    layout->addLayout(buttons);
    layout->addWidget(new QLabel(tr("Tags"), m_details));
    layout->addWidget(m_tagsEdit);
    layout->addLayout(notesRow);
    layout->addWidget(m_notesEdit, 1);
    layout->addWidget(new QLabel(tr("Config"), m_details));
    layout->addWidget(m_configView, 2);
    return m_details;
}

QSortFilterProxyModel *RunsPage::proxyModel() const
{
    return m_proxy;
}

void RunsPage::setStorePath(const QString &storePath)
{
    saveNotes(); // to the store they were typed for: the reader writes in the order asked
    m_storePath = storePath;
    m_reader->setStorePath(storePath);
    m_storeState = StoreState::None;
    m_readOnly = false;
    m_notesDrafts.clear();
    m_notesSaving.clear();
    m_tagsSaving.clear();
    m_runFolders.clear();
    m_runFolderAsked.clear();
    m_overlayAsked.clear();
    m_overlaid.clear();
    m_overlaidLastStep.clear();
    m_overlaidStatus.clear();
    m_plots->setRuns({});
    m_model->setSummaries({});
    setMessage({}, true);
    refresh();
}

void RunsPage::setMessage(const QString &text, bool fromReading)
{
    // A message from reading (the store itself) stays until reading works again; an action's
    // message until the next action works. The same text twice is one message, not two.
    if (text.isEmpty() && !m_message.isEmpty() && m_messageFromReading != fromReading)
        return;
    if (text == m_message)
        return;
    m_message = text;
    m_messageFromReading = fromReading;
    m_messageLabel->setText(text);
    m_messageLabel->parentWidget()->setVisible(!text.isEmpty());
    if (!text.isEmpty())
        Q_EMIT statusMessage(text);
}

void RunsPage::showProblem(const StoreProblem &problem)
{
    if (problem.isEmpty())
        return;
    if (!problem.opening) {
        setMessage(firstUpper(problem.what), false);
        return;
    }
    m_storeState = StoreState::Unreadable;
    setMessage(tr("Cannot read the run store: %1").arg(problem.what), true);
    updateActions();
}

void RunsPage::refresh()
{
    m_ticksSinceRefresh = 0;
    m_reader->refresh();
}

void RunsPage::applySnapshot(const RunsSnapshot &snapshot)
{
    m_ticksSinceRefresh = 0;
    const QString shownPath = QDir::toNativeSeparators(m_storePath);
    switch (snapshot.state) {
    case RunsSnapshot::State::NoStore:
        m_storeState = StoreState::None;
        m_readOnly = false;
        m_model->setSummaries({});
        setMessage({}, true);
        m_summary->setText(tr("No runs yet. Runs are recorded in %1.").arg(shownPath));
        break;
    case RunsSnapshot::State::Open: {
        m_storeState = StoreState::Open;
        m_readOnly = snapshot.readOnly;
        m_model->setEditable(!snapshot.readOnly);
        const bool first = m_model->rowCount() == 0;
        m_model->setSummaries(snapshot.summaries);
        if (first && m_model->rowCount() > 0) {
            m_view->resizeColumnsToContents();
            m_view->horizontalHeader()->setStretchLastSection(true);
        }
        if (snapshot.readOnly) {
            setMessage(tr("The run store %1 is read-only (check the permissions of the file and of its folder): "
                          "the runs are shown, but renames, notes, tags and deletions cannot be saved.")
                           .arg(shownPath),
                       true);
        } else {
            setMessage({}, true);
        }
        updateSummaryLabel();
        break;
    }
    case RunsSnapshot::State::Unreadable:
        // The rows stay shown: nothing is lost by a store that cannot be read just now.
        showProblem(snapshot.problem);
        if (m_model->rowCount() == 0)
            m_summary->setText(tr("Runs of %1").arg(shownPath));
        break;
    }
    updateDetails();
    updateActions();
    appendLivePoints();
    schedulePoll();
}

void RunsPage::poll()
{
    // While a refresh or poll is on its way, its answer schedules the next poll.
    if (!isVisible() || m_reader->isRefreshing())
        return;
    ++m_ticksSinceRefresh;
    m_reader->poll(m_model->hasRunningRuns() && m_ticksSinceRefresh >= kRefreshEveryPolls);
}

void RunsPage::applyPollUnchanged()
{
    if (m_model->hasRunningRuns())
        m_model->setNow(QDateTime::currentDateTimeUtc());
    schedulePoll();
}

void RunsPage::schedulePoll()
{
    if (!isVisible()) {
        m_pollTimer->stop();
        return;
    }
    m_pollTimer->start(m_model->hasRunningRuns() ? kLivePollMs : kIdlePollMs);
}

void RunsPage::showEvent(QShowEvent *event)
{
    QWidget::showEvent(event);
    poll();
}

void RunsPage::hideEvent(QHideEvent *event)
{
    QWidget::hideEvent(event);
    m_pollTimer->stop();
    saveNotes();
}

void RunsPage::updateSummaryLabel()
{
    const int total = m_model->rowCount();
    const int shown = m_proxy->rowCount();
    const QString path = QDir::toNativeSeparators(m_storePath);
    QString text = total == 1 ? tr("1 run in %1").arg(path) : tr("%1 runs in %2").arg(total).arg(path);
    if (shown != total)
        text = tr("%1 of %2").arg(shown).arg(text);
    m_summary->setText(text);
}

qint64 RunsPage::currentRunId() const
{
    const QModelIndex current = m_view->currentIndex();
    QItemSelectionModel *selection = m_view->selectionModel();
    if (current.isValid() && selection->isRowSelected(current.row(), {}))
        return current.data(RunsModel::RunIdRole).toLongLong();
    const QModelIndexList rows = selection->selectedRows();
    return rows.isEmpty() ? -1 : rows.first().data(RunsModel::RunIdRole).toLongLong();
}

int RunsPage::sourceRowOfRun(qint64 runId) const
{
    return m_model->rowOfRun(runId);
}

int RunsPage::singleSelectedRow() const
{
    const QList<qint64> ids = selectedRunIds();
    return ids.size() == 1 ? sourceRowOfRun(ids.first()) : -1;
}

QList<qint64> RunsPage::selectedRunIds() const
{
    QModelIndexList rows = m_view->selectionModel()->selectedRows();
    std::sort(rows.begin(), rows.end(), [](const QModelIndex &a, const QModelIndex &b) { return a.row() < b.row(); });
    QList<qint64> ids;
    for (const QModelIndex &row : rows)
        ids << row.data(RunsModel::RunIdRole).toLongLong();
    return ids;
}

void RunsPage::selectRuns(const QList<qint64> &runIds)
{
    QItemSelection selection;
    QModelIndex first;
    for (qint64 id : runIds) {
        const int row = sourceRowOfRun(id);
        if (row < 0)
            continue;
        const QModelIndex index = m_proxy->mapFromSource(m_model->index(row, RunsModel::NameColumn));
        if (!index.isValid())
            continue;
        if (!first.isValid())
            first = index;
        selection.select(index, index);
    }
    m_view->selectionModel()->setCurrentIndex(first, QItemSelectionModel::NoUpdate);
    m_view->selectionModel()->select(selection, QItemSelectionModel::ClearAndSelect | QItemSelectionModel::Rows);
}

void RunsPage::updateActions()
{
    const bool writable = isWritable();
    const bool hasCurrent = currentRunId() >= 0;
    m_renameAction->setEnabled(writable && hasCurrent);
    m_editNotesAction->setEnabled(writable && hasCurrent);
    m_editTagsAction->setEnabled(writable && hasCurrent);
    m_deleteAction->setEnabled(writable && !selectedRunIds().isEmpty());
    m_openFolderAction->setEnabled(m_storeState == StoreState::Open && hasCurrent);
    m_cloneAction->setEnabled(hasCurrent);
    m_tagsEdit->setReadOnly(!writable);
    m_notesEdit->setReadOnly(!writable);
    m_saveNotesButton->setEnabled(writable && hasCurrent && m_notesEdit->document()->isModified());
    updateResumeActions();
}

QString RunsPage::whyNotResume(int row, bool continuing) const
{
    if (row < 0)
        return continuing ? tr("Select one succeeded run to train it further") : tr("Select one interrupted or cancelled run to resume it");
    if (m_storeState != StoreState::Open)
        return tr("The run store cannot be read now");
    if (m_readOnly)
        return tr("The run store is read-only: the run could not record its further steps");
    const engine::store::RunRecord &run = m_model->run(row);
    const int ranks = static_cast<int>(engine::store::parseRunConfig(run.configJson).worldSize);
    if (ranks > 1) {
        return tr("Run %1 was trained by %2 data-parallel ranks: resume it from a terminal with "
                  "tunebench launch --nproc %2 -- train --resume %1")
            .arg(run.id)
            .arg(ranks);
    }
    switch (run.status) {
    case RunStatus::Running: return tr("Run %1 is still running").arg(run.id);
    case RunStatus::Failed: return tr("Run %1 failed: clone its settings into a new run instead").arg(run.id);
    case RunStatus::Succeeded:
        return continuing ? QString() : tr("Run %1 finished all its steps: Continue Training... trains it further").arg(run.id);
    case RunStatus::Interrupted:
    case RunStatus::Cancelled:
        return continuing ? tr("Run %1 did not finish its steps: resume it first").arg(run.id) : QString();
    }
    return {};
}

void RunsPage::updateResumeActions()
{
    const int row = singleSelectedRow();
    const QString name = row >= 0 ? QString::fromStdString(m_model->run(row).name) : QString();
    const qint64 id = row >= 0 ? m_model->run(row).id : -1;
    const auto update = [&](QAction *action, const QString &why, const QString &allowed) {
        action->setEnabled(why.isEmpty());
        action->setToolTip(why.isEmpty() ? allowed : why);
        action->setStatusTip(action->toolTip());
    };
    update(m_resumeAction, whyNotResume(row, false),
           tr("Resume run %1 (%2) from its last checkpoint in the Train page").arg(id).arg(name));
    update(m_continueAction, whyNotResume(row, true),
           tr("Train run %1 (%2) further, up to a new number of steps, in the Train page").arg(id).arg(name));
}

void RunsPage::updateDetails()
{
    const qint64 id = currentRunId();
    // The notes typed for the previous run go to that run (or, if the store refuses them, stay as a
    // draft that comes back with the run).
    if (id != m_detailsRunId)
        saveNotes();
    const bool sameRun = id == m_detailsRunId;
    m_detailsRunId = id;
    const int row = id >= 0 ? sourceRowOfRun(id) : -1;
    m_details->setEnabled(row >= 0);
    if (row < 0) {
        m_detailsTitle->setText(tr("No run selected"));
        m_detailsFacts->clear();
        m_tagsEdit->clear();
        m_notesEdit->clear();
        m_notesEdit->document()->setModified(false);
        m_configView->clear();
        return;
    }
    const engine::store::RunSummary &summary = m_model->summary(row);
    const engine::store::RunRecord &run = summary.run;
    const int selected = static_cast<int>(selectedRunIds().size());
    m_detailsTitle->setText(selected > 1 ? tr("%1 (one of %2 selected runs)").arg(QString::fromStdString(run.name)).arg(selected)
                                         : QString::fromStdString(run.name));

    const auto cell = [&](int column) {
        return m_model->index(row, column).data(Qt::DisplayRole).toString().toHtmlEscaped();
    };
    QString folder;
    if (const auto known = m_runFolders.constFind(id); known != m_runFolders.constEnd()) {
        folder = QDir::toNativeSeparators(*known);
    } else if (m_storeState == StoreState::Open && !m_runFolderAsked.contains(id)) {
        m_runFolderAsked.insert(id);
        m_reader->findRunFolder(id); // shown when it comes
    }
    QStringList facts;
    const auto fact = [&](const QString &name, const QString &value) {
        if (!value.isEmpty())
            facts << QStringLiteral("<tr><td>%1&nbsp;</td><td>%2</td></tr>").arg(name.toHtmlEscaped(), value);
    };
    fact(tr("ID"), QString::number(id));
    fact(tr("Status"), cell(RunsModel::StatusColumn));
    fact(tr("Model"), cell(RunsModel::ModelColumn));
    fact(tr("Method"), cell(RunsModel::MethodColumn));
    fact(tr("Steps"), cell(RunsModel::StepsColumn));
    fact(tr("Best eval loss"), cell(RunsModel::BestEvalLossColumn));
    fact(tr("Created"), cell(RunsModel::CreatedColumn));
    fact(tr("Finished"), QString::fromStdString(run.finished).toHtmlEscaped());
    fact(tr("Duration"), cell(RunsModel::DurationColumn));
    fact(tr("Ranks"), ranksText(engine::store::parseRunConfig(run.configJson)).toHtmlEscaped());
    fact(tr("Folder"), folder.toHtmlEscaped());
    m_detailsFacts->setText(QStringLiteral("<table>%1</table>").arg(facts.join(QString())));

    if (!sameRun || !m_tagsEdit->hasFocus())
        m_tagsEdit->setText(tagsText(run));
    if (!sameRun || !m_notesEdit->document()->isModified()) {
        // A draft the store refused comes back as an unsaved edit; notes on their way to the store
        // show as they will be.
        const auto draft = m_notesDrafts.constFind(id);
        const auto saving = m_notesSaving.constFind(id);
        const bool hasDraft = draft != m_notesDrafts.constEnd();
        const QString notes = hasDraft ? *draft
                              : saving != m_notesSaving.constEnd() ? *saving
                                                                   : QString::fromStdString(run.notes);
        if (!sameRun || m_notesEdit->toPlainText() != notes)
            m_notesEdit->setPlainText(notes);
        m_notesEdit->document()->setModified(hasDraft);
    }
    const QString config = prettyJson(run.configJson);
    if (m_configView->toPlainText() != config)
        m_configView->setPlainText(config);
}

void RunsPage::applyRunFolder(qint64 runId, const QString &folder)
{
    m_runFolderAsked.remove(runId);
    if (folder.isEmpty())
        return;
    m_runFolders.insert(runId, folder);
    if (runId == m_detailsRunId)
        updateDetails();
}

void RunsPage::renameCurrentRun()
{
    const qint64 id = currentRunId();
    const int row = sourceRowOfRun(id);
    if (row < 0)
        return;
    const QModelIndex index = m_proxy->mapFromSource(m_model->index(row, RunsModel::NameColumn));
    m_view->setFocus(Qt::ShortcutFocusReason);
    m_view->selectionModel()->setCurrentIndex(index, QItemSelectionModel::NoUpdate);
    m_view->edit(index);
}

void RunsPage::renameRun(qint64 runId, const QString &name)
{
    m_reader->renameRun(runId, name); // the table shows the new name once the store has it
}

void RunsPage::saveNotes()
{
    const qint64 id = m_detailsRunId;
    if (id < 0 || !m_notesEdit->document()->isModified())
        return;
    const QString notes = m_notesEdit->toPlainText();
    m_notesDrafts.remove(id);
    m_notesSaving.insert(id, notes); // a draft again if the store refuses them
    m_notesEdit->document()->setModified(false);
    m_reader->setNotes(id, notes);
}

void RunsPage::saveTags()
{
    const qint64 id = m_detailsRunId;
    const int row = sourceRowOfRun(id);
    if (row < 0 || m_tagsEdit->isReadOnly())
        return;
    const std::vector<std::string> tags = parseTags(m_tagsEdit->text());
    const std::vector<std::string> sorted = sortedTags(tags);
    const auto saving = m_tagsSaving.constFind(id);
    if (sorted == (saving != m_tagsSaving.constEnd() ? *saving : m_model->run(row).tags))
        return;
    m_tagsSaving.insert(id, sorted);
    m_reader->setTags(id, tags);
}

void RunsPage::applyEdit(const RunEdit &edit)
{
    const qint64 id = edit.runId;
    switch (edit.kind) {
    case RunEdit::Kind::Rename:
        break;
    case RunEdit::Kind::Notes:
        if (const auto saving = m_notesSaving.constFind(id); saving != m_notesSaving.constEnd() && *saving == edit.text)
            m_notesSaving.remove(id);
        if (!edit.done && !m_notesDrafts.contains(id))
            m_notesDrafts.insert(id, edit.text); // kept, not lost: shown again with the run, saved at the next try
        break;
    case RunEdit::Kind::Tags: {
        const std::vector<std::string> sorted = sortedTags(edit.tags);
        if (const auto saving = m_tagsSaving.constFind(id); saving != m_tagsSaving.constEnd() && *saving == sorted)
            m_tagsSaving.remove(id);
        // What was typed and sent reads as the store keeps it (unless typing went on meanwhile).
        if (edit.done && edit.record && id == m_detailsRunId && sortedTags(parseTags(m_tagsEdit->text())) == sorted)
            m_tagsEdit->setText(tagsText(*edit.record));
        break;
    }
    }
    if (edit.done) {
        setMessage({}, false);
        if (edit.record)
            m_model->updateRecord(*edit.record);
    } else {
        showProblem(edit.problem);
    }
    updateDetails();
}

void RunsPage::deleteSelectedRuns()
{
    const QList<qint64> ids = selectedRunIds();
    if (ids.isEmpty() || !isWritable())
        return;
    for (qint64 id : ids) {
        const int row = sourceRowOfRun(id);
        if (row >= 0 && m_model->run(row).status == RunStatus::Running) {
            setMessage(tr("Run %1 (%2) is still running: stop it before deleting it.").arg(id).arg(QString::fromStdString(m_model->run(row).name)),
                       false);
            return;
        }
    }
    m_reader->findCreatedFolders(ids); // -> confirmDeletion, which asks
}

void RunsPage::confirmDeletion(const CreatedFolders &found)
{
    if (!found.done) {
        showProblem(found.problem);
        return;
    }
    QList<qint64> ids;
    QStringList names;
    for (qint64 id : found.runIds) {
        const int row = sourceRowOfRun(id);
        if (row < 0)
            continue; // deleted meanwhile
        ids << id;
        names << QStringLiteral("%1 (#%2)").arg(QString::fromStdString(m_model->run(row).name)).arg(id);
    }
    if (ids.isEmpty())
        return;
    QStringList folders;
    for (const QString &folder : found.folders)
        folders << QDir::toNativeSeparators(folder);

    auto *box = new QMessageBox(QMessageBox::Warning, tr("Delete Runs"), {}, QMessageBox::Yes | QMessageBox::No, this);
    box->setAttribute(Qt::WA_DeleteOnClose);
    box->setObjectName(QStringLiteral("deleteConfirmation"));
    box->setText(ids.size() == 1 ? tr("Delete the run %1?").arg(names.value(0)) : tr("Delete %1 runs?").arg(ids.size()));
    box->setInformativeText(tr("Their metrics, events, notes and tags are removed from the run store; this cannot be "
                               "undone. Files on disk are kept unless you also delete the run folder."));
    if (ids.size() > 1)
        box->setDetailedText(names.join(QLatin1Char('\n')));
    box->button(QMessageBox::Yes)->setText(tr("Delete"));
    box->setDefaultButton(QMessageBox::No);
    QCheckBox *deleteFolders = nullptr;
    if (!folders.isEmpty()) {
        deleteFolders = new QCheckBox(folders.size() == 1 ? tr("Also delete the run folder %1").arg(folders.first())
                                                          : tr("Also delete the %1 run folders tunebench created")
                                                                .arg(folders.size()),
                                      box);
        deleteFolders->setObjectName(QStringLiteral("deleteFolderCheck"));
        deleteFolders->setToolTip(folders.join(QLatin1Char('\n')));
        box->setCheckBox(deleteFolders);
    }
    connect(box, &QMessageBox::finished, this, [this, box, ids, deleteFolders] {
        if (box->clickedButton() != box->button(QMessageBox::Yes))
            return;
        const auto folderAction = deleteFolders && deleteFolders->isChecked() ? engine::store::RunFolderAction::Delete
                                                                              : engine::store::RunFolderAction::Keep;
        m_reader->deleteRuns(ids, folderAction); // -> applyDeletion
    });
    box->open();
}

void RunsPage::applyDeletion(const RunsDeleted &result)
{
    for (qint64 id : result.deleted) {
        m_notesDrafts.remove(id);
        m_notesSaving.remove(id);
        m_tagsSaving.remove(id);
        m_runFolders.remove(id);
    }
    const auto deleted = result.deleted.size();
    if (deleted > 0)
        Q_EMIT statusMessage(deleted == 1 ? tr("Deleted 1 run") : tr("Deleted %1 runs").arg(deleted));
    if (!result.problem.isEmpty())
        showProblem(result.problem);
    else if (deleted > 0)
        setMessage({}, false);
    refresh();
}

void RunsPage::openRunFolder()
{
    const qint64 id = currentRunId();
    if (id >= 0)
        m_reader->locateRunFolder(id); // -> openLocatedFolder
}

void RunsPage::openLocatedFolder(const RunFolderLocation &location)
{
    if (!location.done) {
        showProblem(location.problem);
        return;
    }
    const QString shown = QDir::toNativeSeparators(location.path);
    if (!location.exists) {
        setMessage(tr("The folder of run %1 no longer exists: %2 was deleted or moved outside tunebench.")
                       .arg(location.runId)
                       .arg(shown),
                   false);
        return;
    }
    if (!m_openUrl(QUrl::fromLocalFile(location.path))) {
        setMessage(tr("Could not open %1: no file manager answered.").arg(shown), false);
        return;
    }
    setMessage({}, false);
    Q_EMIT statusMessage(tr("Opened %1").arg(shown));
}

void RunsPage::cloneSettings()
{
    const int row = sourceRowOfRun(currentRunId());
    if (row < 0)
        return;
    const engine::store::RunRecord &run = m_model->run(row);
    Q_EMIT cloneSettingsRequested(QString::fromStdString(run.configJson));
    Q_EMIT statusMessage(tr("The settings of run %1 (%2) are in the Train page").arg(run.id).arg(QString::fromStdString(run.name)));
}

void RunsPage::resumeSelectedRun()
{
    const int row = singleSelectedRow();
    if (row < 0 || !whyNotResume(row, false).isEmpty())
        return;
    Q_EMIT resumeRequested(m_model->run(row).id, 0);
}

void RunsPage::continueSelectedRun()
{
    const int row = singleSelectedRow();
    if (row < 0 || !whyNotResume(row, true).isEmpty())
        return;
    const engine::store::RunSummary &summary = m_model->summary(row);
    const qint64 id = summary.run.id;
    const QString name = QString::fromStdString(summary.run.name);
    const qint64 lastStep = summary.steps.value_or(0);
    const qint64 steps = summary.steps ? *summary.steps : configuredSteps(engine::store::parseRunConfig(summary.run.configJson)).value_or(0);
    const int minimum = static_cast<int>(std::clamp<qint64>(lastStep + 1, 1, kMaxSteps));
    const int suggested = static_cast<int>(std::clamp<qint64>(2 * steps, minimum, kMaxSteps));

    // On the heap and watched: the page (and the dialog with it) may go away while it is open.
    QPointer<QInputDialog> dialog = new QInputDialog(this);
    dialog->setObjectName(QStringLiteral("continueStepsDialog"));
    dialog->setWindowTitle(tr("Continue Training"));
    dialog->setInputMode(QInputDialog::IntInput);
    dialog->setLabelText(tr("Run %1 (%2) stopped after step %3.\nTrain it up to this many steps in all:")
                             .arg(id)
                             .arg(name)
                             .arg(QLocale().toString(lastStep)));
    dialog->setIntRange(minimum, kMaxSteps);
    dialog->setIntValue(suggested);
    dialog->setIntStep(std::max(1, static_cast<int>(steps / 10)));
    dialog->setOkButtonText(tr("Continue"));
    const bool accepted = dialog->exec() == QDialog::Accepted;
    if (!dialog)
        return;
    const qint64 totalSteps = dialog->intValue();
    delete dialog;
    if (accepted)
        Q_EMIT resumeRequested(id, totalSteps);
}

void RunsPage::updateOverlay(bool reload)
{
    QList<qint64> ids = selectedRunIds();
    if (ids.size() > kMaxOverlaidRuns) {
        Q_EMIT statusMessage(tr("Showing the curves of the first %1 of %2 selected runs").arg(kMaxOverlaidRuns).arg(ids.size()));
        ids = ids.mid(0, kMaxOverlaidRuns);
    }
    if (ids == m_overlayAsked && !reload)
        return;
    m_overlayAsked = ids;
    QList<qint64> shown; // a run the table no longer shows has nothing to draw
    for (qint64 id : std::as_const(ids)) {
        if (sourceRowOfRun(id) >= 0)
            shown << id;
    }
    m_reader->loadCurves(shown); // -> applyCurves
}

void RunsPage::applyCurves(const CurvesRead &read)
{
    m_overlaid.clear();
    m_overlaidLastStep.clear();
    m_overlaidStatus.clear();
    QList<RunCurves> curves;
    for (const CurvesRead::Run &run : read.runs) {
        const int row = sourceRowOfRun(run.runId);
        if (row < 0)
            continue; // deleted meanwhile
        const engine::store::RunRecord &record = m_model->run(row);
        RunCurves runCurves;
        runCurves.runId = run.runId;
        runCurves.label = QStringLiteral("#%1 %2").arg(run.runId).arg(QString::fromStdString(record.name));
        runCurves.started = QDateTime::fromString(QString::fromStdString(record.created), Qt::ISODate);
        runCurves.metrics = run.metrics;
        auto &lastSteps = m_overlaidLastStep[run.runId];
        for (const auto &[key, points] : run.metrics) {
            if (!points.empty())
                lastSteps[key] = points.back().step;
        }
        m_overlaidStatus[run.runId] = record.status == RunStatus::Running;
        curves << std::move(runCurves);
        m_overlaid << run.runId;
    }
    m_metricsCursor = read.cursor;
    showProblem(read.problem);
    m_plots->setRuns(curves);
}

void RunsPage::appendLivePoints()
{
    // Curves on their way come with their own cursor.
    if (m_overlaid.isEmpty() || m_storeState != StoreState::Open || m_reader->isLoadingCurves())
        return;
    bool reload = false;
    bool anyRunning = false;
    for (qint64 id : std::as_const(m_overlaid)) {
        const int row = sourceRowOfRun(id);
        if (row < 0) {
            reload = true; // deleted meanwhile
            continue;
        }
        const bool running = m_model->run(row).status == RunStatus::Running;
        // A run that runs again was resumed: its later steps were dropped and are written anew.
        if (running && !m_overlaidStatus.value(id))
            reload = true;
        anyRunning = anyRunning || running || m_overlaidStatus.value(id);
        m_overlaidStatus[id] = running;
    }
    if (reload) {
        updateOverlay(true);
        return;
    }
    if (anyRunning && !m_reader->isReadingMetrics())
        m_reader->readMetricsSince(m_metricsCursor); // -> applyMetrics
}

void RunsPage::applyMetrics(const MetricsRead &read)
{
    if (!read.problem.isEmpty()) {
        showProblem(read.problem);
        return;
    }
    m_metricsCursor = read.cursor;
    std::map<std::pair<qint64, std::string>, std::vector<engine::store::MetricPoint>> added;
    for (const auto &row : read.rows) {
        const auto lastSteps = m_overlaidLastStep.find(row.run);
        if (lastSteps == m_overlaidLastStep.end())
            continue;
        const auto last = lastSteps->find(row.sample.key);
        if (last != lastSteps->end() && row.sample.step <= last->second)
            continue; // already drawn (read with the curves) or rewritten in place
        (*lastSteps)[row.sample.key] = row.sample.step;
        added[{row.run, row.sample.key}].push_back({row.sample.step, row.sample.wallTime, row.sample.value});
    }
    for (const auto &[where, points] : added)
        m_plots->appendPoints(where.first, where.second, points);
}

} // namespace ui
