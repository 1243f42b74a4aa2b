#pragma once
// The Runs page's run store connection, on a thread of its own: every read and write of the page goes
// through here, so a locked or slow store (sqlite waits for another process's lock up to the busy
// timeout) delays an answer, never the window.
//
// How to use (on the UI thread):
//   auto *reader = new RunsReader(this);
//   connect(reader, &RunsReader::snapshotRead, this, &Page::applySnapshot);
//   reader->setStorePath(path);   // a new generation: what is still on its way for the old path is dropped
//   reader->refresh();            // -> snapshotRead, a moment later, on this thread
//
// Threads: a RunsReader belongs to the thread that made it and is called there; its worker (a QObject
// moved to the reader's member QThread, as Tiled's FolderScanner) owns the one RunStore connection and
// answers the requests one at a time, in the order they were sent: a write sent before a refresh is in
// what that refresh reads. Answers come back as queued calls and are emitted as the signals below, on
// the reader's thread.
//
// Stale answers: every request carries the generation (setStorePath starts a new one) and a serial
// number. An answer of an older generation is dropped, and so is one that a later request of the same
// kind supersedes (refresh and poll, curves, metrics since, open folder, delete folders: only the
// latest counts; a curves load also supersedes the metrics read of the curves it replaces). A
// superseded request still queued is skipped without touching the store, and a curves load stops
// between runs once it is superseded. Writes are never skipped: they run against the store they were
// sent for, even after the path changed or the reader is being destroyed.
//
// The destructor asks the worker to stop (requestInterruption), lets it finish the writes already
// sent (notes typed just before the window closes are saved), then quit()s and wait()s for the thread.

#include "engine/store/runstore.h"

#include <QList>
#include <QObject>
#include <QString>
#include <QStringList>
#include <QThread>

#include <array>
#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace ui {

/// A problem a request met. `opening`: the store itself cannot be opened or read (a problem of the
/// store, shown until reading works again); otherwise the request's own (e.g. a tag the store refuses).
/// `what` is the store's message as it gave it.
struct StoreProblem {
    QString what;
    bool opening = false;
    bool isEmpty() const { return what.isEmpty(); }
};

/// What a refresh read.
struct RunsSnapshot {
    enum class State {
        NoStore,    ///< no path, or no file there yet: no runs (nothing is created by looking)
        Open,       ///< read: `summaries`
        Unreadable, ///< the file cannot be opened or read now: `problem` says why
    };
    State state = State::NoStore;
    bool readOnly = false; ///< Open: the file can only be read (permissions)
    std::vector<engine::store::RunSummary> summaries;
    StoreProblem problem;
};

/// The curves of the runs a loadCurves asked for.
struct CurvesRead {
    struct Run {
        qint64 runId = 0;
        std::map<std::string, std::vector<engine::store::MetricPoint>> metrics; ///< by key, in step order
    };
    QList<qint64> requested;
    std::vector<Run> runs; ///< the requested runs the store still has, in the order asked
    /// Where the metrics ended before the curves were read: what readMetricsSince(cursor) returns later
    /// may repeat a point of the curves (skip steps already drawn), and misses none.
    int64_t cursor = 0;
    StoreProblem problem;
};

/// What readMetricsSince found.
struct MetricsRead {
    std::vector<engine::store::MetricRow> rows; ///< every run's new values, in the order written
    int64_t cursor = 0;                         ///< where to read from next time
    StoreProblem problem;
};

/// Where a run's folder is, for opening it.
struct RunFolderLocation {
    qint64 runId = 0;
    QString path;        ///< the folder tunebench created for it, else where its files are or were
    bool exists = false; ///< `path` is a folder now
    bool done = false;   ///< false: the store could not be used (see problem; empty if there is no store file)
    StoreProblem problem;
};

/// The run folders a deletion of `runIds` may offer to delete too (those tunebench created).
struct CreatedFolders {
    QList<qint64> runIds;
    QStringList folders;
    bool done = false; ///< false: the store could not be used (see problem)
    StoreProblem problem;
};

/// The answer to a rename, notes or tags write.
struct RunEdit {
    enum class Kind { Rename, Notes, Tags };
    Kind kind = Kind::Rename;
    qint64 runId = 0;
    QString text;                  ///< Rename: the name; Notes: the notes, as sent
    std::vector<std::string> tags; ///< Tags: as sent
    bool done = false;             ///< written (and `record` read back)
    std::optional<engine::store::RunRecord> record;
    StoreProblem problem; ///< why not (empty if there is no store file to write to)
};

/// The answer to deleteRuns.
struct RunsDeleted {
    QList<qint64> deleted; ///< in the order asked; the first failure stops the rest
    StoreProblem problem;
};

class StoreSession;

class RunsReader : public QObject {
    Q_OBJECT

public:
    /// How long a store call waits for another process's lock before it fails as "locked".
    static constexpr int kBusyTimeoutMs = 1500;

    /// Starts the worker thread. It runs with the credentials the calling thread has now (a test that
    /// dropped its file capabilities gets a worker that obeys file permissions too).
    explicit RunsReader(QObject *parent = nullptr);
    ~RunsReader() override;

    /// Closes the store and uses `path` from now on (not opened until a request needs it).
    void setStorePath(const QString &path);

    /// Reads every run again -> snapshotRead.
    void refresh();
    /// Looks whether the store changed (PRAGMA data_version; a store that could not be opened: whether
    /// its file appeared or changed) -> snapshotRead if it did or `forceRefresh`, else pollUnchanged.
    void poll(bool forceRefresh);
    /// Reads every metric of these runs -> curvesRead.
    void loadCurves(const QList<qint64> &runIds);
    /// Reads the metric values written after `cursor` (CurvesRead::cursor, then MetricsRead::cursor)
    /// -> metricsRead.
    void readMetricsSince(int64_t cursor);
    /// Where run `runId` keeps its files, for showing it -> runFolderFound (an empty folder if the
    /// store cannot say).
    void findRunFolder(qint64 runId);
    /// The run's folder for opening it (the one tunebench created, else its run folder) -> runFolderLocated.
    void locateRunFolder(qint64 runId);
    /// The folders tunebench created for these runs -> createdFoldersFound.
    void findCreatedFolders(const QList<qint64> &runIds);

    void renameRun(qint64 runId, const QString &name);                 ///< -> runEdited
    void setNotes(qint64 runId, const QString &notes);                 ///< -> runEdited
    void setTags(qint64 runId, const std::vector<std::string> &tags); ///< -> runEdited
    /// Deletes the runs one after the other -> runsDeleted.
    void deleteRuns(const QList<qint64> &runIds, engine::store::RunFolderAction folders);

    /// Whether any request has not been answered yet (answers dropped as stale count as answered).
    bool isBusy() const { return m_pending > 0; }
    /// Whether a refresh or poll has not been answered yet.
    bool isRefreshing() const { return pending(Channel::Snapshot); }
    bool isLoadingCurves() const { return pending(Channel::Curves); }
    bool isReadingMetrics() const { return pending(Channel::LiveMetrics); }

Q_SIGNALS:
    void snapshotRead(const ui::RunsSnapshot &snapshot);
    void pollUnchanged();
    void curvesRead(const ui::CurvesRead &curves);
    void metricsRead(const ui::MetricsRead &metrics);
    void runFolderFound(qint64 runId, const QString &folder);
    void runFolderLocated(const ui::RunFolderLocation &location);
    void createdFoldersFound(const ui::CreatedFolders &folders);
    void runEdited(const ui::RunEdit &edit);
    void runsDeleted(const ui::RunsDeleted &result);

private:
    /// Requests of one channel supersede each other; Every: each is answered.
    enum class Channel { Snapshot, Curves, LiveMetrics, OpenFolder, DeleteFolders, Every };
    static constexpr std::size_t kChannels = static_cast<std::size_t>(Channel::Every);

    struct Ticket {
        quint64 generation = 0;
        quint64 serial = 0;
        Channel channel = Channel::Every;
        bool mustRun = false; ///< never skipped (writes, a new store path)
    };
    /// What the UI thread does with an answer (emits its signal); empty for a skipped request.
    using Answer = std::function<void(RunsReader &)>;
    /// Runs on the worker thread. `stale()` says whether the request has been superseded meanwhile
    /// (or the reader is going away): a long read checks it between steps.
    using Job = std::function<Answer(StoreSession &session, const std::function<bool()> &stale)>;

    /// The newest generation and serials, read by the worker to skip superseded requests.
    struct Latest {
        std::atomic<quint64> generation{0};
        std::array<std::atomic<quint64>, kChannels> serial{};
    };

    class Worker;

    void send(Channel channel, bool mustRun, Job job);
    void sendEdit(RunEdit edit, std::function<void(engine::store::RunStore &store, const RunEdit &edit)> write);
    void deliver(const Ticket &ticket, const Answer &answer);
    bool pending(Channel channel) const { return m_pendingIn[static_cast<std::size_t>(channel)] > 0; }
    void supersede(Channel channel);

    QThread m_thread;
    std::unique_ptr<Worker> m_worker; ///< lives on m_thread; destroyed after it finished
    Latest m_latest;
    quint64 m_generation = 0;
    std::array<quint64, kChannels> m_serial{};
    std::array<int, kChannels + 1> m_pendingIn{};
    int m_pending = 0;
};

} // namespace ui
