#pragma once
// The Runs page: every run of the run store in a sortable, filterable table that follows the store
// live, a details panel (notes, tags, config) for the current run, the selected runs' curves overlaid
// under the table, and the actions on runs: rename, notes, tags, delete, open the folder, clone the
// settings into the Train page, resume or continue a run.
//
// The page reads and writes the store through a RunsReader (its one connection, on a thread of its
// own: a locked or slow store never freezes the window) and applies the answers as they come. It polls
// cheaply (PRAGMA data_version) every second while a run is running, every few seconds otherwise, only
// while the page is visible. A store it cannot use (newer schema, locked, read-only, not a database) is
// one message in the page, never a dialog, and nothing is written to it.
//
// Resume (an interrupted or cancelled run) and Continue Training... (a succeeded run, to a new total of
// steps) ask for it with resumeRequested; what runs it is the Train page's business.

#include <QDateTime>
#include <QHash>
#include <QList>
#include <QSet>
#include <QString>
#include <QWidget>

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

class QAction;
class QLabel;
class QLineEdit;
class QPlainTextEdit;
class QPushButton;
class QSortFilterProxyModel;
class QSplitter;
class QTableView;
class QTimer;
class QUrl;

namespace ui {

class MetricPlots;
class RunsFilterModel;
class RunsModel;
class RunsReader;
struct CreatedFolders;
struct CurvesRead;
struct MetricsRead;
struct RunEdit;
struct RunFolderLocation;
struct RunsDeleted;
struct RunsSnapshot;
struct StoreProblem;

class RunsPage : public QWidget {
    Q_OBJECT

public:
    /// Poll intervals (ms) while a run is running and otherwise.
    static constexpr int kLivePollMs = 1000;
    static constexpr int kIdlePollMs = 3000;

    explicit RunsPage(const QString &storePath, QWidget *parent = nullptr);
    ~RunsPage() override;

    void setStorePath(const QString &storePath);
    QString storePath() const { return m_storePath; }
    RunsModel *model() const { return m_model; }
    QSortFilterProxyModel *proxyModel() const;
    QTableView *view() const { return m_view; }
    /// The problem shown in the page (empty when there is none).
    QString message() const { return m_message; }
    /// Whether a request to the store (a read or a write) has not been answered yet: once false, what
    /// the page asked before is done and shown.
    bool isWaitingForStore() const;
    /// The ids of the selected runs, in the view's order.
    QList<qint64> selectedRunIds() const;
    /// The runs whose curves the overlay shows (the selection, when the plots are built in).
    QList<qint64> overlaidRunIds() const { return m_overlaid; }
    /// Selects these runs (the first becomes current).
    void selectRuns(const QList<qint64> &runIds);
    /// How a run folder is shown: QDesktopServices::openUrl unless set (tests set their own, so no
    /// file manager starts). Returns false when nothing could open it.
    void setUrlOpener(std::function<bool(const QUrl &)> opener) { m_openUrl = std::move(opener); }

    QAction *renameAction() const { return m_renameAction; }
    QAction *editNotesAction() const { return m_editNotesAction; }
    QAction *editTagsAction() const { return m_editTagsAction; }
    QAction *deleteAction() const { return m_deleteAction; }
    QAction *openFolderAction() const { return m_openFolderAction; }
    QAction *cloneAction() const { return m_cloneAction; }
    QAction *resumeAction() const { return m_resumeAction; }
    QAction *continueAction() const { return m_continueAction; }

public Q_SLOTS:
    /// Reads the runs again (keeping selection and sort). A missing store file is an empty list; a
    /// store that cannot be read shows why.
    void refresh();
    /// Starts editing the current run's name in the table.
    void renameCurrentRun();
    /// Saves the notes in the details panel to the run they belong to.
    void saveNotes();
    /// Deletes the selected runs after asking (a QMessageBox, objectName "deleteConfirmation").
    void deleteSelectedRuns();
    /// Opens the current run's folder in the file manager.
    void openRunFolder();
    /// Emits cloneSettingsRequested with the current run's config.
    void cloneSettings();
    /// Emits resumeRequested for the selected run (interrupted or cancelled), to its stored steps.
    void resumeSelectedRun();
    /// Asks for a new total of steps (a QInputDialog, objectName "continueStepsDialog") and emits
    /// resumeRequested for the selected run (succeeded) with it.
    void continueSelectedRun();

Q_SIGNALS:
    void statusMessage(const QString &text);
    /// The user wants a new run with the settings of this one: the run's config JSON as stored
    /// ({"training": {...}, "model": {...}, "corpus": ..., ...}).
    void cloneSettingsRequested(const QString &configJson);
    /// The user wants run `runId` to go on training from its last checkpoint, in this process, up to
    /// `totalSteps` steps in all (0: the steps it was started with).
    void resumeRequested(qint64 runId, qint64 totalSteps);

protected:
    void showEvent(QShowEvent *event) override;
    void hideEvent(QHideEvent *event) override;

private:
    enum class StoreState { None, Open, Unreadable };

    void createActions();
    QWidget *createDetailsPanel();
    /// The store is open and can be written to (as far as the last answer knew).
    bool isWritable() const { return m_storeState == StoreState::Open && !m_readOnly; }
    /// Shows `text` as the page's message (empty hides it); the same text twice is one message.
    void setMessage(const QString &text, bool fromReading);
    /// Shows a problem a request met: the store's own (opening it) or the action's.
    void showProblem(const StoreProblem &problem);
    void poll();
    void schedulePoll();
    void updateSummaryLabel();
    void updateActions();
    /// Why Resume (or, `continuing`, Continue Training...) is refused for the run in `row`; empty if
    /// it is allowed.
    QString whyNotResume(int row, bool continuing) const;
    void updateResumeActions();
    void updateDetails();
    void saveTags();
    void renameRun(qint64 runId, const QString &name);
    /// The current run (the view's current row), or -1.
    qint64 currentRunId() const;
    int sourceRowOfRun(qint64 runId) const;
    /// The one selected run's row, or -1 when none or several are selected.
    int singleSelectedRow() const;
    /// Loads the curves of the selected runs if they are not those shown (or `reload`).
    void updateOverlay(bool reload = false);
    void appendLivePoints();

    // The reader's answers.
    void applySnapshot(const RunsSnapshot &snapshot);
    void applyPollUnchanged();
    void applyCurves(const CurvesRead &curves);
    void applyMetrics(const MetricsRead &metrics);
    void applyRunFolder(qint64 runId, const QString &folder);
    void openLocatedFolder(const RunFolderLocation &location);
    void confirmDeletion(const CreatedFolders &folders);
    void applyEdit(const RunEdit &edit);
    void applyDeletion(const RunsDeleted &result);

    QString m_storePath;
    std::function<bool(const QUrl &)> m_openUrl;
    RunsReader *m_reader = nullptr;
    StoreState m_storeState = StoreState::None;
    bool m_readOnly = false;
    QString m_message;
    bool m_messageFromReading = false;
    int m_ticksSinceRefresh = 0;

    RunsModel *m_model = nullptr;
    RunsFilterModel *m_proxy = nullptr;
    QTableView *m_view = nullptr;
    QLineEdit *m_filter = nullptr;
    QLabel *m_summary = nullptr;
    QLabel *m_messageLabel = nullptr;
    QSplitter *m_tableSplitter = nullptr;
    MetricPlots *m_plots = nullptr;
    QTimer *m_pollTimer = nullptr;
    QTimer *m_overlayTimer = nullptr;

    QLabel *m_detailsTitle = nullptr;
    QLabel *m_detailsFacts = nullptr;
    QLineEdit *m_tagsEdit = nullptr;
    QPlainTextEdit *m_notesEdit = nullptr;
    QPushButton *m_saveNotesButton = nullptr;
    QPlainTextEdit *m_configView = nullptr;
    QWidget *m_details = nullptr;
    qint64 m_detailsRunId = -1; ///< the run whose notes and tags the panel shows
    QHash<qint64, QString> m_notesDrafts; ///< notes the store refused (locked, read-only), kept until saved
    QHash<qint64, QString> m_notesSaving; ///< notes sent to the store and not answered yet
    QHash<qint64, std::vector<std::string>> m_tagsSaving; ///< tags (sorted) sent and not answered yet
    QHash<qint64, QString> m_runFolders;  ///< per run, where its files are (for the details)
    QSet<qint64> m_runFolderAsked;        ///< runs whose folder was asked for and not answered yet

    QAction *m_renameAction = nullptr;
    QAction *m_editNotesAction = nullptr;
    QAction *m_editTagsAction = nullptr;
    QAction *m_deleteAction = nullptr;
    QAction *m_openFolderAction = nullptr;
    QAction *m_cloneAction = nullptr;
    QAction *m_resumeAction = nullptr;
    QAction *m_continueAction = nullptr;

    QList<qint64> m_overlayAsked; ///< the runs of the last curves load asked for
    QList<qint64> m_overlaid;
    /// Per overlaid run and metric, the last step the overlay holds (for appending live points).
    QHash<qint64, std::map<std::string, qint64>> m_overlaidLastStep;
    QHash<qint64, bool> m_overlaidStatus; ///< per overlaid run: running when last looked
    int64_t m_metricsCursor = 0;           ///< where the live points are read from next
};

} // namespace ui
