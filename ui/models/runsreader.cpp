#include "ui/models/runsreader.h"

#include <QFileInfo>
#include <QMetaObject>

#include <exception>
#include <utility>

namespace ui {

using engine::store::RunStore;

namespace {

/// Size and modification time: opening a file that failed is tried again by a poll only once it changed.
QString fileStamp(const QString &path)
{
    const QFileInfo info(path);
    if (!info.exists())
        return {};
    return QStringLiteral("%1/%2").arg(info.size()).arg(info.lastModified().toMSecsSinceEpoch());
}

QString whatOf(const std::exception &e)
{
    return QString::fromStdString(e.what());
}

std::size_t indexOf(auto channel)
{
    return static_cast<std::size_t>(channel);
}

} // namespace

/// The worker's side: the store connection and what it remembers between polls. Worker thread only.
class StoreSession {
public:
    void setPath(const QString &path)
    {
        close();
        m_path = path;
    }

    void close()
    {
        m_store.reset();
        m_failedFileStamp.clear();
        m_dataVersion = -1;
    }

    /// The open store, opened if need be; nullptr if there is no file (`problem` left empty: looking
    /// creates nothing) or it cannot be opened (`problem` says why).
    RunStore *store(StoreProblem &problem)
    {
        if (m_store)
            return m_store.get();
        if (m_path.isEmpty() || !QFileInfo::exists(m_path))
            return nullptr;
        try {
            engine::store::OpenOptions options;
            options.busyTimeoutMs = RunsReader::kBusyTimeoutMs;
            m_store = std::make_unique<RunStore>(RunStore::open(m_path.toStdString(), options));
            m_dataVersion = -1;
            m_failedFileStamp.clear();
            return m_store.get();
        } catch (const std::exception &e) {
            problem = unusable(e);
            return nullptr;
        }
    }

    /// Runs `use` on the open store; what it throws becomes the request's own problem. False if it did
    /// not run or threw.
    template <typename Use>
    bool withStore(StoreProblem &problem, Use &&use)
    {
        RunStore *store = this->store(problem);
        if (!store)
            return false;
        try {
            use(*store);
            return true;
        } catch (const std::exception &e) {
            problem = {whatOf(e), false};
            return false;
        }
    }

    RunsSnapshot refresh()
    {
        RunsSnapshot snapshot;
        if (m_path.isEmpty() || !QFileInfo::exists(m_path)) {
            // Opening would create the database; no runs says the same without writing anything.
            close();
            return snapshot;
        }
        RunStore *store = this->store(snapshot.problem);
        if (!store) {
            snapshot.state = RunsSnapshot::State::Unreadable;
            return snapshot;
        }
        try {
            snapshot.summaries = store->listRunSummaries();
            m_dataVersion = store->dataVersion();
            snapshot.readOnly = store->isReadOnly();
            snapshot.state = RunsSnapshot::State::Open;
        } catch (const std::exception &e) {
            snapshot.summaries.clear();
            snapshot.state = RunsSnapshot::State::Unreadable;
            snapshot.problem = unusable(e);
        }
        return snapshot;
    }

    /// A snapshot if anything changed (or `forceRefresh`), else nothing.
    std::optional<RunsSnapshot> poll(bool forceRefresh)
    {
        if (!m_store) {
            // Nothing to ask: look again when the file appears or changes.
            if (!m_path.isEmpty() && QFileInfo::exists(m_path) && fileStamp(m_path) != m_failedFileStamp)
                return refresh();
            return std::nullopt;
        }
        try {
            if (forceRefresh || m_store->dataVersion() != m_dataVersion)
                return refresh();
            return std::nullopt;
        } catch (const std::exception &e) {
            RunsSnapshot snapshot;
            snapshot.state = RunsSnapshot::State::Unreadable;
            snapshot.problem = unusable(e);
            return snapshot;
        }
    }

private:
    /// Forgets a store that cannot be opened or read; a poll opens it again once its file changed, a
    /// refresh or a write at once.
    StoreProblem unusable(const std::exception &e)
    {
        m_store.reset();
        m_failedFileStamp = fileStamp(m_path);
        return {whatOf(e), true};
    }

    QString m_path;
    std::unique_ptr<RunStore> m_store;
    int64_t m_dataVersion = -1;
    QString m_failedFileStamp; ///< the file's size and time when opening or reading it last failed
};

/// Lives on the reader's thread and answers its requests there, one at a time.
class RunsReader::Worker : public QObject {
public:
    explicit Worker(RunsReader &reader) : m_reader(reader) {}

    void run(const Ticket &ticket, const Job &job)
    {
        Answer answer;
        if (!isStale(ticket))
            answer = job(m_session, [this, &ticket] { return isStale(ticket); });
        RunsReader *reader = &m_reader;
        QMetaObject::invokeMethod(
            reader, [reader, ticket, answer = std::move(answer)] { reader->deliver(ticket, answer); }, Qt::QueuedConnection);
    }

    /// Closes the store and ends the thread's event loop (the last request of all).
    void finish()
    {
        m_session.close();
        QThread::currentThread()->quit();
    }

private:
    bool isStale(const Ticket &ticket) const
    {
        if (ticket.mustRun)
            return false;
        if (QThread::currentThread()->isInterruptionRequested())
            return true;
        if (ticket.generation != m_reader.m_latest.generation.load())
            return true;
        return ticket.channel != Channel::Every && ticket.serial != m_reader.m_latest.serial[indexOf(ticket.channel)].load();
    }

    RunsReader &m_reader; ///< outlives the thread (its destructor waits for it); only its atomics are read here
    StoreSession m_session;
};

RunsReader::RunsReader(QObject *parent) : QObject(parent), m_worker(std::make_unique<Worker>(*this))
{
    m_thread.setObjectName(QStringLiteral("RunsReader"));
    m_worker->moveToThread(&m_thread);
    m_thread.start();
}

RunsReader::~RunsReader()
{
    m_thread.requestInterruption(); // the reads still queued are skipped, a curves load stops
    // quit() from the worker's queue, after the writes already sent: they are saved, not dropped.
    Worker *worker = m_worker.get();
    QMetaObject::invokeMethod(worker, [worker] { worker->finish(); }, Qt::QueuedConnection);
    m_thread.wait();
}

void RunsReader::send(Channel channel, bool mustRun, Job job)
{
    Ticket ticket{m_generation, 0, channel, mustRun};
    if (channel != Channel::Every) {
        ticket.serial = ++m_serial[indexOf(channel)];
        m_latest.serial[indexOf(channel)].store(ticket.serial);
    }
    ++m_pending;
    ++m_pendingIn[indexOf(channel)];
    Worker *worker = m_worker.get();
    QMetaObject::invokeMethod(
        worker, [worker, ticket, job = std::move(job)] { worker->run(ticket, job); }, Qt::QueuedConnection);
}

void RunsReader::deliver(const Ticket &ticket, const Answer &answer)
{
    --m_pending;
    --m_pendingIn[indexOf(ticket.channel)];
    if (!answer || ticket.generation != m_generation)
        return;
    if (ticket.channel != Channel::Every && ticket.serial != m_serial[indexOf(ticket.channel)])
        return;
    answer(*this);
}

void RunsReader::supersede(Channel channel)
{
    m_latest.serial[indexOf(channel)].store(++m_serial[indexOf(channel)]);
}

void RunsReader::setStorePath(const QString &path)
{
    m_latest.generation.store(++m_generation);
    send(Channel::Every, true, [path](StoreSession &session, const std::function<bool()> &) -> Answer {
        session.setPath(path);
        return {};
    });
}

void RunsReader::refresh()
{
    send(Channel::Snapshot, false, [](StoreSession &session, const std::function<bool()> &) -> Answer {
        return [snapshot = session.refresh()](RunsReader &reader) { Q_EMIT reader.snapshotRead(snapshot); };
    });
}

void RunsReader::poll(bool forceRefresh)
{
    send(Channel::Snapshot, false, [forceRefresh](StoreSession &session, const std::function<bool()> &) -> Answer {
        std::optional<RunsSnapshot> snapshot = session.poll(forceRefresh);
        if (!snapshot)
            return [](RunsReader &reader) { Q_EMIT reader.pollUnchanged(); };
        return [snapshot = std::move(*snapshot)](RunsReader &reader) { Q_EMIT reader.snapshotRead(snapshot); };
    });
}

void RunsReader::loadCurves(const QList<qint64> &runIds)
{
    supersede(Channel::LiveMetrics); // its cursor belongs to the curves these replace
    send(Channel::Curves, false, [runIds](StoreSession &session, const std::function<bool()> &stale) -> Answer {
        CurvesRead read;
        read.requested = runIds;
        if (!runIds.isEmpty()) {
            session.withStore(read.problem, [&](RunStore &store) {
                // The cursor first: what is written while the curves are read comes again and is skipped.
                read.cursor = store.metricsCursor();
                for (qint64 id : runIds) {
                    if (stale())
                        return; // a later load (or the end) replaces this one: its answer is dropped
                    CurvesRead::Run run;
                    run.runId = id;
                    for (const std::string &key : store.metricKeys(id))
                        run.metrics.emplace(key, store.metric(id, key));
                    read.runs.push_back(std::move(run));
                }
            });
        }
        return [read = std::move(read)](RunsReader &reader) { Q_EMIT reader.curvesRead(read); };
    });
}

void RunsReader::readMetricsSince(int64_t cursor)
{
    send(Channel::LiveMetrics, false, [cursor](StoreSession &session, const std::function<bool()> &) -> Answer {
        MetricsRead read;
        read.cursor = cursor;
        session.withStore(read.problem, [&](RunStore &store) { read.rows = store.metricsSince(read.cursor); });
        return [read = std::move(read)](RunsReader &reader) { Q_EMIT reader.metricsRead(read); };
    });
}

void RunsReader::findRunFolder(qint64 runId)
{
    send(Channel::Every, false, [runId](StoreSession &session, const std::function<bool()> &) -> Answer {
        StoreProblem ignored; // the folder is a detail: the page's message belongs to the store's real problems
        QString folder;
        session.withStore(ignored, [&](RunStore &store) { folder = QString::fromStdString(store.runFolder(runId).string()); });
        return [runId, folder](RunsReader &reader) { Q_EMIT reader.runFolderFound(runId, folder); };
    });
}

void RunsReader::locateRunFolder(qint64 runId)
{
    send(Channel::OpenFolder, false, [runId](StoreSession &session, const std::function<bool()> &) -> Answer {
        RunFolderLocation location;
        location.runId = runId;
        location.done = session.withStore(location.problem, [&](RunStore &store) {
            const auto created = store.createdRunFolder(runId);
            location.path = QString::fromStdString((created ? *created : store.runFolder(runId)).string());
        });
        location.exists = location.done && !location.path.isEmpty() && QFileInfo(location.path).isDir();
        return [location = std::move(location)](RunsReader &reader) { Q_EMIT reader.runFolderLocated(location); };
    });
}

void RunsReader::findCreatedFolders(const QList<qint64> &runIds)
{
    send(Channel::DeleteFolders, false, [runIds](StoreSession &session, const std::function<bool()> &) -> Answer {
        CreatedFolders found;
        found.runIds = runIds;
        found.done = session.withStore(found.problem, [&](RunStore &store) {
            for (qint64 id : runIds) {
                try {
                    if (const auto folder = store.createdRunFolder(id))
                        found.folders << QString::fromStdString(folder->string());
                } catch (const std::exception &) {
                    // No folder offered: the run itself can still be deleted.
                }
            }
        });
        return [found = std::move(found)](RunsReader &reader) { Q_EMIT reader.createdFoldersFound(found); };
    });
}

void RunsReader::sendEdit(RunEdit edit, std::function<void(RunStore &store, const RunEdit &edit)> write)
{
    send(Channel::Every, true,
         [edit = std::move(edit), write = std::move(write)](StoreSession &session, const std::function<bool()> &) mutable -> Answer {
             edit.done = session.withStore(edit.problem, [&](RunStore &store) {
                 write(store, edit);
                 edit.record = store.run(edit.runId);
             });
             return [edit](RunsReader &reader) { Q_EMIT reader.runEdited(edit); };
         });
}

void RunsReader::renameRun(qint64 runId, const QString &name)
{
    RunEdit edit;
    edit.kind = RunEdit::Kind::Rename;
    edit.runId = runId;
    edit.text = name;
    sendEdit(std::move(edit), [](RunStore &store, const RunEdit &e) { store.renameRun(e.runId, e.text.toStdString()); });
}

void RunsReader::setNotes(qint64 runId, const QString &notes)
{
    RunEdit edit;
    edit.kind = RunEdit::Kind::Notes;
    edit.runId = runId;
    edit.text = notes;
    sendEdit(std::move(edit), [](RunStore &store, const RunEdit &e) { store.setNotes(e.runId, e.text.toStdString()); });
}

void RunsReader::setTags(qint64 runId, const std::vector<std::string> &tags)
{
    RunEdit edit;
    edit.kind = RunEdit::Kind::Tags;
    edit.runId = runId;
    edit.tags = tags;
    sendEdit(std::move(edit), [](RunStore &store, const RunEdit &e) { store.setTags(e.runId, e.tags); });
}

void RunsReader::deleteRuns(const QList<qint64> &runIds, engine::store::RunFolderAction folders)
{
    send(Channel::Every, true, [runIds, folders](StoreSession &session, const std::function<bool()> &) -> Answer {
        RunsDeleted result;
        session.withStore(result.problem, [&](RunStore &store) {
            for (qint64 id : runIds) {
                store.deleteRun(id, folders);
                result.deleted << id;
            }
        });
        return [result = std::move(result)](RunsReader &reader) { Q_EMIT reader.runsDeleted(result); };
    });
}

} // namespace ui
