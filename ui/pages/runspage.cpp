#include "ui/pages/runspage.h"

#include "engine/store/runstore.h"
#include "ui/models/runsmodel.h"

#include "ui/widgets/metricplots.h"

#include <QAction>
#include <QCheckBox>
#include <QDesktopServices>
#include <QDir>
#include <QFileInfo>
#include <QFontDatabase>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QJsonDocument>
#include <QJsonObject>
#include <QLabel>
#include <QLineEdit>
#include <QMessageBox>
#include <QPlainTextEdit>
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
#include <exception>
#include <utility>

namespace ui {
namespace {

using engine::store::RunStatus;
using engine::store::RunStore;

/// How long a write from the page waits for another process's lock before it says "locked".
constexpr int kBusyTimeoutMs = 1500;
/// At most this many runs are overlaid (reading a run's curves takes a moment).
constexpr int kMaxOverlaidRuns = 16;
/// While a run is running, read everything again every this many polls even if nothing was committed:
/// a run whose process died is only found by looking.
constexpr int kRefreshEveryPolls = 5;

/// Size and modification time: opening a file that failed is tried again only once it changed.
QString fileStamp(const QString &path)
{
    const QFileInfo info(path);
    if (!info.exists())
        return {};
    return QStringLiteral("%1/%2").arg(info.size()).arg(info.lastModified().toMSecsSinceEpoch());
}

QString firstUpper(QString text)
{
    if (!text.isEmpty())
        text[0] = text[0].toUpper();
    return text;
}

QString errorText(const std::exception &e)
{
    return firstUpper(QString::fromStdString(e.what()));
}

std::vector<std::string> parseTags(const QString &text)
{
    std::vector<std::string> tags;
    static const QRegularExpression separators(QStringLiteral("[\\s,]+"));
    for (const QString &tag : text.split(separators, Qt::SkipEmptyParts))
        tags.push_back(tag.toStdString());
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
QString ranksText(const std::string &configJson)
{
    const QJsonObject training = QJsonDocument::fromJson(QByteArray::fromStdString(configJson)).object().value(QStringLiteral("training")).toObject();
    const int ranks = training.value(QStringLiteral("world_size")).toInt(1);
    if (ranks <= 1)
        return {};
    const QString launcher = training.value(QStringLiteral("launcher")).toString();
    return launcher.isEmpty() ? RunsPage::tr("%1 (data parallel)").arg(ranks)
                              : RunsPage::tr("%1 (data parallel, %2)").arg(ranks).arg(launcher);
}

} // namespace

RunsPage::RunsPage(const QString &storePath, QWidget *parent)
    : QWidget(parent), m_storePath(storePath), m_openUrl([](const QUrl &url) { return QDesktopServices::openUrl(url); })
{
    m_model = new RunsModel(this);
    m_proxy = new RunsFilterModel(this);
    m_proxy->setSourceModel(m_model);

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
    connect(m_overlayTimer, &QTimer::timeout, this, &RunsPage::updateOverlay);
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
}

void RunsPage::createActions()
{
    const auto make = [this](const QString &text, const QKeySequence &shortcut, const char *name, auto slot) {
        auto *action = new QAction(text, this);
        action->setObjectName(QString::fromLatin1(name));
        action->setShortcut(shortcut);
        // Only while the table has the focus: Delete in the notes deletes text, not runs.
        action->setShortcutContext(Qt::WidgetShortcut);
        action->setToolTip(QStringLiteral("%1 (%2)").arg(QString(text).remove(QLatin1Char('&')).remove(QStringLiteral("...")),
                                                          shortcut.toString(QKeySequence::NativeText)));
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
        m_saveNotesButton->setEnabled(modified && m_detailsRunId >= 0 && m_store && !m_store->isReadOnly());
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
    saveNotes();
    m_storePath = storePath;
    m_store.reset();
    m_failedFileStamp.clear();
    m_notesDrafts.clear();
    m_model->setSummaries({});
    setMessage({}, true);
    refresh();
}

bool RunsPage::ensureStore()
{
    if (m_store)
        return true;
    if (m_storePath.isEmpty() || !QFileInfo::exists(m_storePath))
        return false;
    try {
        engine::store::OpenOptions options;
        options.busyTimeoutMs = kBusyTimeoutMs;
        m_store = std::make_unique<RunStore>(RunStore::open(m_storePath.toStdString(), options));
        m_dataVersion = -1;
        m_failedFileStamp.clear();
        m_model->setEditable(!m_store->isReadOnly());
        return true;
    } catch (const std::exception &e) {
        m_failedFileStamp = fileStamp(m_storePath);
        setMessage(tr("Cannot read the run store: %1").arg(QString::fromStdString(e.what())), true);
        return false;
    }
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

template <typename Write>
bool RunsPage::writeToStore(Write &&write)
{
    if (!ensureStore())
        return false;
    try {
        write(*m_store);
        setMessage({}, false);
        return true;
    } catch (const std::exception &e) {
        setMessage(errorText(e), false);
        return false;
    }
}

void RunsPage::refresh()
{
    m_ticksSinceRefresh = 0;
    const QString shownPath = QDir::toNativeSeparators(m_storePath);
    if (m_storePath.isEmpty() || !QFileInfo::exists(m_storePath)) {
        // Opening would create the database; an empty list says the same without writing anything.
        m_store.reset();
        m_model->setSummaries({});
        setMessage({}, true);
        m_summary->setText(tr("No runs yet. Runs are recorded in %1.").arg(shownPath));
    } else if (ensureStore()) {
        try {
            auto summaries = m_store->listRunSummaries();
            m_dataVersion = m_store->dataVersion();
            const bool first = m_model->rowCount() == 0;
            m_model->setSummaries(std::move(summaries));
            if (first && m_model->rowCount() > 0) {
                m_view->resizeColumnsToContents();
                m_view->horizontalHeader()->setStretchLastSection(true);
            }
            if (m_store->isReadOnly()) {
                setMessage(tr("The run store %1 is read-only (check the permissions of the file and of its folder): "
                              "the runs are shown, but renames, notes, tags and deletions cannot be saved.")
                               .arg(shownPath),
                           true);
            } else {
                setMessage({}, true);
            }
            updateSummaryLabel();
        } catch (const std::exception &e) {
            // Keep the rows shown (nothing is lost by a store that cannot be read just now).
            m_store.reset();
            m_failedFileStamp = fileStamp(m_storePath);
            setMessage(tr("Cannot read the run store: %1").arg(QString::fromStdString(e.what())), true);
        }
    } else {
        m_summary->setText(tr("Runs of %1").arg(shownPath));
    }
    updateDetails();
    updateActions();
    appendLivePoints();
    schedulePoll();
}

void RunsPage::poll()
{
    if (!isVisible())
        return;
    if (!m_store) {
        // Nothing to poll: look again when the file appears or changes.
        if (!m_storePath.isEmpty() && QFileInfo::exists(m_storePath) && fileStamp(m_storePath) != m_failedFileStamp) {
            refresh();
            return;
        }
        schedulePoll();
        return;
    }
    try {
        ++m_ticksSinceRefresh;
        const bool running = m_model->hasRunningRuns();
        if (m_store->dataVersion() != m_dataVersion || (running && m_ticksSinceRefresh >= kRefreshEveryPolls)) {
            refresh();
            return;
        }
        if (running)
            m_model->setNow(QDateTime::currentDateTimeUtc());
    } catch (const std::exception &e) {
        m_store.reset();
        m_failedFileStamp = fileStamp(m_storePath);
        setMessage(tr("Cannot read the run store: %1").arg(QString::fromStdString(e.what())), true);
    }
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
    const bool writable = m_store && !m_store->isReadOnly();
    const bool hasCurrent = currentRunId() >= 0;
    m_renameAction->setEnabled(writable && hasCurrent);
    m_editNotesAction->setEnabled(writable && hasCurrent);
    m_editTagsAction->setEnabled(writable && hasCurrent);
    m_deleteAction->setEnabled(writable && !selectedRunIds().isEmpty());
    m_openFolderAction->setEnabled(m_store && hasCurrent);
    m_cloneAction->setEnabled(hasCurrent);
    m_tagsEdit->setReadOnly(!writable);
    m_notesEdit->setReadOnly(!writable);
    m_saveNotesButton->setEnabled(writable && hasCurrent && m_notesEdit->document()->isModified());
}

void RunsPage::updateDetails()
{
    const qint64 id = currentRunId();
    if (id != m_detailsRunId) {
        // The notes typed for the previous run go to that run (or, if the store refuses them, stay
        // as a draft that comes back with the run).
        if (m_detailsRunId >= 0 && m_notesEdit->document()->isModified()) {
            m_notesDrafts[m_detailsRunId] = m_notesEdit->toPlainText();
            saveNotes();
        }
    }
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
    if (m_store) {
        try {
            folder = QDir::toNativeSeparators(QString::fromStdString(m_store->runFolder(id).string()));
        } catch (const std::exception &) {
            // The folder is a detail; the message line belongs to the store's real problems.
        }
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
    fact(tr("Ranks"), ranksText(run.configJson).toHtmlEscaped());
    fact(tr("Folder"), folder.toHtmlEscaped());
    m_detailsFacts->setText(QStringLiteral("<table>%1</table>").arg(facts.join(QString())));

    if (!sameRun || !m_tagsEdit->hasFocus())
        m_tagsEdit->setText(tagsText(run));
    if (!sameRun || !m_notesEdit->document()->isModified()) {
        const auto draft = m_notesDrafts.constFind(id);
        m_notesEdit->setPlainText(draft != m_notesDrafts.constEnd() ? *draft : QString::fromStdString(run.notes));
        m_notesEdit->document()->setModified(draft != m_notesDrafts.constEnd());
    }
    const QString config = prettyJson(run.configJson);
    if (m_configView->toPlainText() != config)
        m_configView->setPlainText(config);
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
    std::optional<engine::store::RunRecord> record;
    if (writeToStore([&](RunStore &store) {
            store.renameRun(runId, name.toStdString());
            record = store.run(runId);
        }) &&
        record) {
        m_model->updateRecord(*record);
        updateDetails();
    }
}

void RunsPage::saveNotes()
{
    const qint64 id = m_detailsRunId;
    if (id < 0 || !m_notesEdit->document()->isModified())
        return;
    const QString notes = m_notesEdit->toPlainText();
    std::optional<engine::store::RunRecord> record;
    if (writeToStore([&](RunStore &store) {
            store.setNotes(id, notes.toStdString());
            record = store.run(id);
        })) {
        m_notesDrafts.remove(id);
        m_notesEdit->document()->setModified(false);
        if (record)
            m_model->updateRecord(*record);
    } else {
        m_notesDrafts[id] = notes; // kept, not lost: shown again with the run, saved at the next try
    }
}

void RunsPage::saveTags()
{
    const qint64 id = m_detailsRunId;
    const int row = sourceRowOfRun(id);
    if (row < 0 || m_tagsEdit->isReadOnly())
        return;
    const std::vector<std::string> tags = parseTags(m_tagsEdit->text());
    std::vector<std::string> sorted = tags;
    std::sort(sorted.begin(), sorted.end());
    sorted.erase(std::unique(sorted.begin(), sorted.end()), sorted.end());
    if (sorted == m_model->run(row).tags)
        return;
    std::optional<engine::store::RunRecord> record;
    if (writeToStore([&](RunStore &store) {
            store.setTags(id, tags);
            record = store.run(id);
        }) &&
        record) {
        m_model->updateRecord(*record);
        m_tagsEdit->setText(tagsText(*record));
    }
}

void RunsPage::deleteSelectedRuns()
{
    const QList<qint64> ids = selectedRunIds();
    if (ids.isEmpty() || !ensureStore() || m_store->isReadOnly())
        return;
    QStringList names;
    QStringList folders;
    for (qint64 id : ids) {
        const int row = sourceRowOfRun(id);
        if (row < 0)
            continue;
        const engine::store::RunRecord &run = m_model->run(row);
        if (run.status == RunStatus::Running) {
            setMessage(tr("Run %1 (%2) is still running: stop it before deleting it.").arg(id).arg(QString::fromStdString(run.name)),
                       false);
            return;
        }
        names << QStringLiteral("%1 (#%2)").arg(QString::fromStdString(run.name)).arg(id);
        try {
            if (const auto folder = m_store->createdRunFolder(id))
                folders << QDir::toNativeSeparators(QString::fromStdString(folder->string()));
        } catch (const std::exception &) {
            // No folder offered: the run itself can still be deleted.
        }
    }

    QMessageBox box(QMessageBox::Warning, tr("Delete Runs"), {}, QMessageBox::Yes | QMessageBox::No, this);
    box.setObjectName(QStringLiteral("deleteConfirmation"));
    box.setText(ids.size() == 1 ? tr("Delete the run %1?").arg(names.value(0)) : tr("Delete %1 runs?").arg(ids.size()));
    box.setInformativeText(tr("Their metrics, events, notes and tags are removed from the run store; this cannot be "
                              "undone. Files on disk are kept unless you also delete the run folder."));
    if (ids.size() > 1)
        box.setDetailedText(names.join(QLatin1Char('\n')));
    box.button(QMessageBox::Yes)->setText(tr("Delete"));
    box.setDefaultButton(QMessageBox::No);
    QCheckBox *deleteFolders = nullptr;
    if (!folders.isEmpty()) {
        deleteFolders = new QCheckBox(folders.size() == 1 ? tr("Also delete the run folder %1").arg(folders.first())
                                                          : tr("Also delete the %1 run folders tunebench created")
                                                                .arg(folders.size()),
                                      &box);
        deleteFolders->setObjectName(QStringLiteral("deleteFolderCheck"));
        deleteFolders->setToolTip(folders.join(QLatin1Char('\n')));
        box.setCheckBox(deleteFolders);
    }
    if (box.exec() != QMessageBox::Yes)
        return;
    const auto folderAction = deleteFolders && deleteFolders->isChecked() ? engine::store::RunFolderAction::Delete
                                                                          : engine::store::RunFolderAction::Keep;
    int deleted = 0;
    for (qint64 id : ids) {
        if (!writeToStore([&](RunStore &store) { store.deleteRun(id, folderAction); }))
            break;
        m_notesDrafts.remove(id);
        ++deleted;
    }
    if (deleted > 0)
        Q_EMIT statusMessage(deleted == 1 ? tr("Deleted 1 run") : tr("Deleted %1 runs").arg(deleted));
    const QString failure = m_message;
    refresh();
    if (!failure.isEmpty() && m_message.isEmpty())
        setMessage(failure, false);
}

void RunsPage::openRunFolder()
{
    const qint64 id = currentRunId();
    if (id < 0 || !ensureStore())
        return;
    QString path;
    try {
        const auto created = m_store->createdRunFolder(id);
        path = QString::fromStdString((created ? *created : m_store->runFolder(id)).string());
    } catch (const std::exception &e) {
        setMessage(errorText(e), false);
        return;
    }
    const QString shown = QDir::toNativeSeparators(path);
    if (path.isEmpty() || !QFileInfo(path).isDir()) {
        setMessage(tr("The folder of run %1 no longer exists: %2 was deleted or moved outside tunebench.").arg(id).arg(shown),
                   false);
        return;
    }
    if (!m_openUrl(QUrl::fromLocalFile(path))) {
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

void RunsPage::updateOverlay()
{
    QList<qint64> ids = selectedRunIds();
    if (ids.size() > kMaxOverlaidRuns) {
        Q_EMIT statusMessage(tr("Showing the curves of the first %1 of %2 selected runs").arg(kMaxOverlaidRuns).arg(ids.size()));
        ids = ids.mid(0, kMaxOverlaidRuns);
    }
    if (ids == m_overlaid)
        return;
    m_overlaid.clear();
    m_overlaidLastStep.clear();
    m_overlaidStatus.clear();
    QList<RunCurves> curves;
    if (!ids.isEmpty() && ensureStore()) {
        try {
            // The cursor first: what is written while the curves are read comes again and is skipped.
            m_metricsCursor = m_store->metricsCursor();
            for (qint64 id : ids) {
                const int row = sourceRowOfRun(id);
                if (row < 0)
                    continue;
                const engine::store::RunRecord &run = m_model->run(row);
                RunCurves runCurves;
                runCurves.runId = id;
                runCurves.label = QStringLiteral("#%1 %2").arg(id).arg(QString::fromStdString(run.name));
                runCurves.started = QDateTime::fromString(QString::fromStdString(run.created), Qt::ISODate);
                auto &lastSteps = m_overlaidLastStep[id];
                for (const std::string &key : m_store->metricKeys(id)) {
                    auto points = m_store->metric(id, key);
                    if (!points.empty())
                        lastSteps[key] = points.back().step;
                    runCurves.metrics.emplace(key, std::move(points));
                }
                m_overlaidStatus[id] = run.status == RunStatus::Running;
                curves << std::move(runCurves);
                m_overlaid << id;
            }
        } catch (const std::exception &e) {
            setMessage(errorText(e), false);
        }
    }
    m_plots->setRuns(curves);
}

void RunsPage::appendLivePoints()
{
    if (m_overlaid.isEmpty() || !m_store)
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
        m_overlaid.clear();
        updateOverlay();
        return;
    }
    if (!anyRunning)
        return;
    try {
        std::map<std::pair<qint64, std::string>, std::vector<engine::store::MetricPoint>> added;
        for (const auto &row : m_store->metricsSince(m_metricsCursor)) {
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
    } catch (const std::exception &e) {
        setMessage(errorText(e), false);
    }
}

} // namespace ui
