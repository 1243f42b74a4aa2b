#pragma once
// The Runs page: every run of the run store in a sortable, filterable table that follows the store
// live, a details panel (notes, tags, config) for the current run, the selected runs' curves overlaid
// under the table, and the actions on runs: rename, notes, tags, delete, open the folder, clone the
// settings into the Train page.
//
// The page holds one store connection (UI thread) and polls it cheaply (PRAGMA data_version) every
// second while a run is running, every few seconds otherwise, only while the page is visible. A store
// it cannot use (newer schema, locked, read-only, not a database) is one message in the page, never a
// dialog, and nothing is written to it.

#include <QDateTime>
#include <QHash>
#include <QList>
#include <QString>
#include <QWidget>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>

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

namespace engine::store {
class RunStore;
}

namespace ui {

class MetricPlots;
class RunsFilterModel;
class RunsModel;

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

Q_SIGNALS:
    void statusMessage(const QString &text);
    /// The user wants a new run with the settings of this one: the run's config JSON as stored
    /// ({"training": {...}, "model": {...}, "corpus": ..., ...}).
    void cloneSettingsRequested(const QString &configJson);

protected:
    void showEvent(QShowEvent *event) override;
    void hideEvent(QHideEvent *event) override;

private:
    void createActions();
    QWidget *createDetailsPanel();
    /// Opens the store if it is not open; false (with the reason shown) if it cannot be.
    bool ensureStore();
    /// Shows `text` as the page's message (empty hides it); the same text twice is one message.
    void setMessage(const QString &text, bool fromReading);
    void poll();
    void schedulePoll();
    void updateSummaryLabel();
    void updateActions();
    void updateDetails();
    void saveTags();
    void renameRun(qint64 runId, const QString &name);
    /// The current run (the view's current row), or -1.
    qint64 currentRunId() const;
    int sourceRowOfRun(qint64 runId) const;
    void updateOverlay();
    void appendLivePoints();
    /// Runs a store write (a callable taking the RunStore); an error becomes the page's message.
    /// Returns true on success.
    template <typename Write>
    bool writeToStore(Write &&write);

    QString m_storePath;
    std::function<bool(const QUrl &)> m_openUrl;
    std::unique_ptr<engine::store::RunStore> m_store;
    qint64 m_dataVersion = -1;
    QString m_failedFileStamp; ///< the file's size and time when opening it last failed
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

    QAction *m_renameAction = nullptr;
    QAction *m_editNotesAction = nullptr;
    QAction *m_editTagsAction = nullptr;
    QAction *m_deleteAction = nullptr;
    QAction *m_openFolderAction = nullptr;
    QAction *m_cloneAction = nullptr;

    QList<qint64> m_overlaid;
    /// Per overlaid run and metric, the last step the overlay holds (for appending live points).
    QHash<qint64, std::map<std::string, qint64>> m_overlaidLastStep;
    QHash<qint64, bool> m_overlaidStatus; ///< per overlaid run: running when last looked
    int64_t m_metricsCursor = 0;           ///< RunStore::metricsCursor() for appending live points
};

} // namespace ui
