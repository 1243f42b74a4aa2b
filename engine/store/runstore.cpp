#include "engine/store/runstore.h"
#include "engine/store/runfolder.h"

#include "engine/core/error.h"
#include "engine/core/paths.h"
#include "engine/core/textutil.h"
#include "engine/store/migrations.h"
#include "engine/store/processliveness.h"
#include "engine/store/runqueries.h"
#include "engine/store/sqlitestatement.h"

#include <nlohmann/json.hpp>
#include <sqlite3.h>

#include <algorithm>
#include <cmath>
#include <ctime>
#include <fstream>
#include <iterator>
#include <limits>
#include <map>
#include <set>
#include <sstream>
#include <system_error>

namespace engine::store {

namespace fs = std::filesystem;

const char *runStatusName(RunStatus status)
{
    switch (status) {
    case RunStatus::Running: return "running";
    case RunStatus::Succeeded: return "succeeded";
    case RunStatus::Failed: return "failed";
    case RunStatus::Cancelled: return "cancelled";
    case RunStatus::Interrupted: return "interrupted";
    }
    return "failed";
}

std::optional<RunStatus> parseRunStatus(std::string_view name)
{
    for (auto status : {RunStatus::Running, RunStatus::Succeeded, RunStatus::Failed, RunStatus::Cancelled,
                        RunStatus::Interrupted}) {
        if (name == runStatusName(status))
            return status;
    }
    return std::nullopt;
}

namespace {

/// Now as ISO 8601 UTC with seconds, e.g. 2026-11-29T16:25:53Z.
std::string nowIso8601()
{
    const std::time_t now = std::time(nullptr);
    std::tm utc{};
    gmtime_r(&now, &utc);
    char text[32];
    std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &utc);
    return text;
}

LogLevel parseLogLevel(std::string_view name)
{
    for (auto level : {LogLevel::Debug, LogLevel::Info, LogLevel::Warning, LogLevel::Error}) {
        if (name == logLevelName(level))
            return level;
    }
    return LogLevel::Info;
}

/// sqlite stores a NaN double as NULL; keep NaN (a diverged loss is worth seeing) by writing NULL
/// and reading NULL back as NaN.
void bindReal(SqliteStatement &statement, int index, double value)
{
    if (std::isnan(value))
        statement.bindNull(index);
    else
        statement.bind(index, value);
}

double columnReal(const SqliteStatement &statement, int column)
{
    return statement.columnIsNull(column) ? std::numeric_limits<double>::quiet_NaN()
                                          : statement.columnDouble(column);
}

/// Resets a cached statement when a read ends, also by an exception, so that it never holds a read
/// snapshot open (which would keep the WAL from being checkpointed).
class StatementScope {
public:
    explicit StatementScope(SqliteStatement &statement) : m_statement(statement) {}
    StatementScope(const StatementScope &) = delete;
    StatementScope &operator=(const StatementScope &) = delete;
    ~StatementScope() { m_statement.reset(); }

private:
    SqliteStatement &m_statement;
};

/// Runs a cached query whose one parameter is a run id and reads every row with `readRow`.
template <typename Record, typename ReadRow>
std::vector<Record> readRowsOfRun(SqliteStatement &select, int64_t run, ReadRow readRow)
{
    std::vector<Record> rows;
    StatementScope scope(select);
    select.bind(1, run);
    while (select.step())
        rows.push_back(readRow(select));
    return rows;
}

RunRecord readRun(const SqliteStatement &statement)
{
    RunRecord record;
    record.id = statement.columnInt(0);
    record.name = statement.columnText(1);
    record.created = statement.columnText(2);
    record.finished = statement.columnText(3);
    // Statuses are written only by this code and newer schemas are refused, so an unknown name is
    // a damaged row; show it as failed rather than as running.
    record.status = parseRunStatus(statement.columnText(4)).value_or(RunStatus::Failed);
    record.configJson = statement.columnText(5);
    record.model = statement.columnText(6);
    record.notes = statement.columnText(7);
    return record;
}

/// `tag` trimmed, or Error(InvalidInput) naming it and what is wrong.
std::string checkedTag(const std::string &label, int64_t run, const std::string &tag)
{
    const std::string trimmed(trimWhitespace(tag));
    const auto bad = [&](const std::string &why) {
        return invalidInput(label + ": tag \"" + tag + "\" of run " + std::to_string(run) + ": " + why);
    };
    if (trimmed.empty())
        throw bad("a tag cannot be empty");
    if (trimmed.size() > 64)
        throw bad("a tag is at most 64 bytes long");
    for (const char c : trimmed) {
        if (std::isspace(static_cast<unsigned char>(c)) || std::iscntrl(static_cast<unsigned char>(c)) || c == ',')
            throw bad("a tag cannot contain spaces or commas");
    }
    return trimmed;
}

/// The same file, also when one of the paths is relative or names it through a link.
bool sameFile(const fs::path &a, const fs::path &b)
{
    std::error_code error;
    if (fs::equivalent(a, b, error))
        return true;
    return fs::weakly_canonical(fs::absolute(a, error), error) == fs::weakly_canonical(fs::absolute(b, error), error);
}

} // namespace

struct RunStore::Impl {
    explicit Impl(const fs::path &file) : path(file), db(file.string()) {}

    std::function<void()> beforeMetricsCommit; ///< RunStore::setBeforeMetricsCommit

    std::string label() const { return "run store " + path.string(); }
    /// Runs a write; a locked or read-only database becomes one message that says what was not done.
    template <typename Write>
    void write(const std::string &what, Write &&write)
    {
        try {
            write();
        } catch (const SqliteError &e) {
            if (e.isLocked() || e.isReadOnly())
                throw SqliteError(e.code(), label() + ": cannot " + what + ": " + e.reason(), e.reason());
            throw;
        }
    }
    /// A run that a reconcile found dead but could not mark (read-only or locked file) still reads as
    /// interrupted.
    /// Every run's tags, sorted, by run id.
    std::map<int64_t, std::vector<std::string>> allTags()
    {
        std::map<int64_t, std::vector<std::string>> tags;
        StatementScope scope(selectAllTags);
        while (selectAllTags.step())
            tags[selectAllTags.columnInt(0)].push_back(selectAllTags.columnText(1));
        return tags;
    }
    void applyUnrecordedDeaths(RunRecord &record) const
    {
        if (record.status == RunStatus::Running && unrecordedDead.count(record.id))
            record.status = RunStatus::Interrupted;
    }
    [[noreturn]] void throwNoSuchRun(int64_t run) const
    {
        throw invalidInput(label() + ": there is no run with id " + std::to_string(run));
    }
    void prepareStatements()
    {
        auto *h = db.handle();
        insertRun = SqliteStatement(h, "INSERT INTO runs (name, created, status, config, model, owner_pid, owner_start)"
                                       " VALUES (?, ?, 'running', ?, ?, ?, ?) RETURNING id");
        insertMetric = SqliteStatement(h, "INSERT INTO metrics (run, key, step, wall_time, value) VALUES (?, ?, ?, ?, ?)"
                                          " ON CONFLICT (run, key, step)"
                                          " DO UPDATE SET wall_time = excluded.wall_time, value = excluded.value");
        insertEvent = SqliteStatement(h, "INSERT INTO events (run, time, level, text) VALUES (?, ?, ?, ?)");
        insertArtifact = SqliteStatement(h, "INSERT INTO artifacts (run, kind, path) VALUES (?, ?, ?)");
        selectRunning = SqliteStatement(h, "SELECT id, owner_pid, owner_start FROM runs WHERE status = 'running'");
        selectRuns = SqliteStatement(h, "SELECT " + std::string(kRunColumns) + " FROM runs ORDER BY created DESC, id DESC");
        selectRun = SqliteStatement(h, "SELECT " + std::string(kRunColumns) + " FROM runs WHERE id = ?");
        selectMetric = SqliteStatement(h, "SELECT step, wall_time, value FROM metrics WHERE run = ? AND key = ? ORDER BY step");
        selectMetricKeys = SqliteStatement(h, "SELECT DISTINCT key FROM metrics WHERE run = ? ORDER BY key");
        selectEvents = SqliteStatement(h, "SELECT time, level, text FROM events WHERE run = ? ORDER BY rowid");
        selectArtifacts = SqliteStatement(h, "SELECT kind, path FROM artifacts WHERE run = ? ORDER BY rowid");
        selectSummaries = SqliteStatement(h, kRunSummariesSql);
        selectMetricAfter = SqliteStatement(h, "SELECT step, wall_time, value FROM metrics WHERE run = ? AND key = ?"
                                               " AND step > ? ORDER BY step");
        selectMetricsSince = SqliteStatement(h, "SELECT rowid, run, key, step, wall_time, value FROM metrics"
                                                " WHERE rowid > ? ORDER BY rowid");
        selectAllTags = SqliteStatement(h, "SELECT run, tag FROM run_tags ORDER BY run, tag");
        selectTags = SqliteStatement(h, "SELECT tag FROM run_tags WHERE run = ? ORDER BY tag");
        insertTag = SqliteStatement(h, "INSERT INTO run_tags (run, tag) VALUES (?, ?) ON CONFLICT DO NOTHING");
        deleteTag = SqliteStatement(h, "DELETE FROM run_tags WHERE run = ? AND tag = ?");
    }

    fs::path path;
    SqliteDatabase db; // declared before the statements: they are finalized before it closes
    int version = 0;
    bool readOnly = false;
    std::set<int64_t> unrecordedDead;
    SqliteStatement insertRun;
    SqliteStatement insertMetric;
    SqliteStatement insertEvent;
    SqliteStatement insertArtifact;
    SqliteStatement selectRunning;
    SqliteStatement selectRuns;
    SqliteStatement selectRun;
    SqliteStatement selectMetric;
    SqliteStatement selectMetricKeys;
    SqliteStatement selectEvents;
    SqliteStatement selectArtifacts;
    SqliteStatement selectSummaries;
    SqliteStatement selectMetricAfter;
    SqliteStatement selectMetricsSince;
    SqliteStatement selectAllTags;
    SqliteStatement selectTags;
    SqliteStatement insertTag;
    SqliteStatement deleteTag;
};

RunStore RunStore::open(const fs::path &path, const OpenOptions &options)
{
    if (path.empty())
        throw invalidInput("run store: no database file given");
    if (path.has_parent_path()) {
        std::error_code error;
        fs::create_directories(path.parent_path(), error);
        if (error) {
            throw ioError("run store " + path.string() + ": cannot create the folder " + path.parent_path().string() +
                          ": " + error.message());
        }
    }

    auto impl = std::make_unique<Impl>(path);
    const std::string label = impl->label();
    int version = 0;
    int64_t applicationId = 0;
    try {
        // Several processes may share the file: wait for a lock instead of failing at once.
        impl->db.exec("PRAGMA busy_timeout = " + std::to_string(std::max(0, options.busyTimeoutMs)));
        // Read before anything is written: a file that is not sqlite fails here, and a newer schema
        // is refused before even the journal mode is touched.
        version = static_cast<int>(impl->db.queryInt("PRAGMA user_version"));
        applicationId = impl->db.queryInt("PRAGMA application_id");
    } catch (const SqliteError &e) {
        throw SqliteError(e.code(), label + ": cannot open: " + e.reason(), e.reason());
    }
    if (version > kSchemaVersion)
        throw invalidInput(newerSchemaMessage(path.string(), version, kSchemaVersion));

    impl->readOnly = impl->db.isReadOnly();
    if (impl->readOnly) {
        if (version < kSchemaVersion) {
            throw ioError(label + ": the database is read-only (check the permissions of the file and of its folder) and " +
                          (version == 0 ? std::string("holds no run database yet")
                                        : "has schema version " + std::to_string(version) +
                                              ", which this tunebench must upgrade to version " +
                                              std::to_string(kSchemaVersion) + " before it can use it") +
                          "; nothing was changed");
        }
        if (applicationId != kApplicationId)
            throw ioError(label + ": not a tunebench run database (application id " + std::to_string(applicationId) + ")");
    } else {
        try {
            impl->db.queryText("PRAGMA journal_mode = WAL");
            // In WAL mode NORMAL loses no committed transaction when the process is killed (only an OS
            // crash or power loss may roll back the last few).
            impl->db.exec("PRAGMA synchronous = NORMAL");
        } catch (const SqliteError &e) {
            throw SqliteError(e.code(), label + ": cannot open: " + e.reason(), e.reason());
        }
        // The common case (the current version) takes no write lock, so a store that another process
        // is writing to opens at once.
        if (version != kSchemaVersion || applicationId != kApplicationId)
            migrateSchema(impl->db, path.string(), kSchemaVersion);
    }
    impl->db.exec("PRAGMA foreign_keys = ON");
    impl->version = kSchemaVersion;
    impl->prepareStatements();

    RunStore store(std::move(impl));
    store.reconcileInterrupted();
    return store;
}

RunStore::RunStore(std::unique_ptr<Impl> impl) : m_impl(std::move(impl)) {}
RunStore::RunStore(RunStore &&) noexcept = default;
RunStore &RunStore::operator=(RunStore &&) noexcept = default;
RunStore::~RunStore() = default;

const fs::path &RunStore::path() const
{
    return m_impl->path;
}

int RunStore::schemaVersion() const
{
    return m_impl->version;
}

bool RunStore::isReadOnly() const
{
    return m_impl->readOnly;
}

int64_t RunStore::dataVersion()
{
    return m_impl->db.queryInt("PRAGMA data_version");
}

int64_t RunStore::createRun(const std::string &name, const std::string &configJson, const std::string &model)
{
    if (!configJson.empty() && !nlohmann::json::accept(configJson))
        throw invalidInput(m_impl->label() + ": the config of run \"" + name + "\" is not valid JSON");
    const ProcessIdentity self = currentProcess();
    auto &insert = m_impl->insertRun;
    StatementScope scope(insert);
    insert.bind(1, name).bind(2, nowIso8601()).bind(3, configJson.empty() ? "{}" : configJson).bind(4, model);
    insert.bind(5, self.pid);
    if (self.startTime)
        insert.bind(6, static_cast<int64_t>(*self.startTime));
    else
        insert.bindNull(6);
    insert.step();
    const int64_t id = insert.columnInt(0);
    insert.step(); // finish the statement so that its implicit transaction commits
    return id;
}

void RunStore::appendMetrics(int64_t run, const std::vector<MetricSample> &samples)
{
    if (samples.empty())
        return;
    try {
        SqliteTransaction transaction(m_impl->db);
        auto &insert = m_impl->insertMetric;
        for (const auto &sample : samples) {
            insert.bind(1, run).bind(2, sample.key).bind(3, sample.step);
            bindReal(insert, 4, sample.wallTime);
            bindReal(insert, 5, sample.value);
            insert.run();
        }
        if (m_impl->beforeMetricsCommit)
            m_impl->beforeMetricsCommit();
        transaction.commit();
    } catch (const SqliteError &e) {
        if (e.isForeignKeyViolation())
            m_impl->throwNoSuchRun(run);
        throw;
    }
}

void RunStore::setBeforeMetricsCommit(std::function<void()> hook) { m_impl->beforeMetricsCommit = std::move(hook); }

void RunStore::addEvent(int64_t run, LogLevel level, const std::string &text)
{
    try {
        m_impl->insertEvent.bind(1, run).bind(2, nowIso8601()).bind(3, logLevelName(level)).bind(4, text);
        m_impl->insertEvent.run();
    } catch (const SqliteError &e) {
        if (e.isForeignKeyViolation())
            m_impl->throwNoSuchRun(run);
        throw;
    }
}

void RunStore::addArtifact(int64_t run, const std::string &kind, const std::string &path)
{
    try {
        m_impl->insertArtifact.bind(1, run).bind(2, kind).bind(3, path);
        m_impl->insertArtifact.run();
    } catch (const SqliteError &e) {
        if (e.isForeignKeyViolation())
            m_impl->throwNoSuchRun(run);
        throw;
    }
}

void RunStore::resumeRun(int64_t run, int64_t fromStep)
{
    reconcileInterrupted(); // a run whose process died reads as interrupted, not running
    const std::optional<RunRecord> record = this->run(run);
    if (!record)
        m_impl->throwNoSuchRun(run);
    if (record->status == RunStatus::Running)
        throw invalidInput(m_impl->label() + ": run " + std::to_string(run) + " is still running in another process");
    const ProcessIdentity self = currentProcess();
    SqliteTransaction transaction(m_impl->db);
    SqliteStatement update(m_impl->db.handle(), "UPDATE runs SET status = 'running', finished = '', owner_pid = ?,"
                                                " owner_start = ? WHERE id = ?");
    update.bind(1, self.pid);
    if (self.startTime)
        update.bind(2, static_cast<int64_t>(*self.startTime));
    else
        update.bindNull(2);
    update.bind(3, run);
    update.run();
    SqliteStatement prune(m_impl->db.handle(), "DELETE FROM metrics WHERE run = ? AND step > ?");
    prune.bind(1, run).bind(2, fromStep);
    prune.run();
    transaction.commit();
}

void RunStore::finishRun(int64_t run, RunStatus status)
{
    if (status == RunStatus::Running)
        throw invalidInput(m_impl->label() + ": run " + std::to_string(run) + " cannot finish with status running");
    SqliteStatement update(m_impl->db.handle(), "UPDATE runs SET status = ?, finished = ? WHERE id = ?");
    update.bind(1, runStatusName(status)).bind(2, nowIso8601()).bind(3, run);
    update.run();
    if (m_impl->db.changes() == 0)
        m_impl->throwNoSuchRun(run);
}

void RunStore::setNotes(int64_t run, const std::string &notes)
{
    m_impl->write("save the notes of run " + std::to_string(run), [&] {
        SqliteStatement update(m_impl->db.handle(), "UPDATE runs SET notes = ? WHERE id = ?");
        update.bind(1, notes).bind(2, run);
        update.run();
    });
    if (m_impl->db.changes() == 0)
        m_impl->throwNoSuchRun(run);
}

void RunStore::renameRun(int64_t run, const std::string &name)
{
    const std::string trimmed(trimWhitespace(name));
    if (trimmed.empty())
        throw invalidInput(m_impl->label() + ": run " + std::to_string(run) + ": a run name cannot be empty");
    m_impl->write("rename run " + std::to_string(run), [&] {
        SqliteStatement update(m_impl->db.handle(), "UPDATE runs SET name = ? WHERE id = ?");
        update.bind(1, trimmed).bind(2, run);
        update.run();
    });
    if (m_impl->db.changes() == 0)
        m_impl->throwNoSuchRun(run);
}

void RunStore::addTag(int64_t run, const std::string &tag)
{
    const std::string checked = checkedTag(m_impl->label(), run, tag);
    try {
        m_impl->write("tag run " + std::to_string(run), [&] {
            m_impl->insertTag.bind(1, run).bind(2, checked);
            m_impl->insertTag.run();
        });
    } catch (const SqliteError &e) {
        if (e.isForeignKeyViolation())
            m_impl->throwNoSuchRun(run);
        throw;
    }
}

void RunStore::removeTag(int64_t run, const std::string &tag)
{
    if (!this->run(run))
        m_impl->throwNoSuchRun(run);
    m_impl->write("untag run " + std::to_string(run), [&] {
        m_impl->deleteTag.bind(1, run).bind(2, std::string(trimWhitespace(tag)));
        m_impl->deleteTag.run();
    });
}

void RunStore::setTags(int64_t run, const std::vector<std::string> &tags)
{
    std::set<std::string> checked;
    for (const auto &tag : tags)
        checked.insert(checkedTag(m_impl->label(), run, tag));
    if (!this->run(run))
        m_impl->throwNoSuchRun(run);
    try {
        m_impl->write("set the tags of run " + std::to_string(run), [&] {
            SqliteTransaction transaction(m_impl->db);
            SqliteStatement clear(m_impl->db.handle(), "DELETE FROM run_tags WHERE run = ?");
            clear.bind(1, run);
            clear.run();
            for (const auto &tag : checked) {
                m_impl->insertTag.bind(1, run).bind(2, tag);
                m_impl->insertTag.run();
            }
            transaction.commit();
        });
    } catch (const SqliteError &e) {
        if (e.isForeignKeyViolation())
            m_impl->throwNoSuchRun(run);
        throw;
    }
}

std::vector<std::string> RunStore::tags(int64_t run)
{
    return readRowsOfRun<std::string>(m_impl->selectTags, run,
                                      [](const SqliteStatement &row) { return row.columnText(0); });
}

void RunStore::deleteRun(int64_t run, RunFolderAction folderAction)
{
    const std::optional<RunRecord> record = this->run(run); // reconciled: a dead owner reads as interrupted
    if (!record)
        m_impl->throwNoSuchRun(run);
    if (record->status == RunStatus::Running) {
        throw invalidInput(m_impl->label() + ": run " + std::to_string(run) + " (\"" + record->name +
                           "\") is still running; stop it before deleting it");
    }
    std::optional<fs::path> folder;
    if (folderAction == RunFolderAction::Delete)
        folder = createdRunFolder(run);

    m_impl->write("delete run " + std::to_string(run), [&] {
        SqliteTransaction transaction(m_impl->db);
        // Explicit deletes rather than ON DELETE CASCADE alone: they do not depend on the connection's
        // foreign_keys setting, and each is one index range.
        for (const char *sql : {"DELETE FROM metrics WHERE run = ?", "DELETE FROM events WHERE run = ?",
                                "DELETE FROM artifacts WHERE run = ?", "DELETE FROM run_tags WHERE run = ?",
                                "DELETE FROM runs WHERE id = ?"}) {
            SqliteStatement erase(m_impl->db.handle(), sql);
            erase.bind(1, run);
            erase.run();
        }
        transaction.commit();
    });

    if (folder) {
        std::error_code error;
        fs::remove_all(*folder, error);
        if (error) {
            throw ioError(m_impl->label() + ": run " + std::to_string(run) + " was deleted from the store, but its folder " +
                          folder->string() + " could not be removed: " + error.message());
        }
    }
}

fs::path RunStore::runFolder(int64_t run)
{
    const std::optional<RunRecord> record = this->run(run);
    if (!record)
        return {};
    return runFolderOf(run, parseRunConfig(record->configJson));
}

std::optional<fs::path> RunStore::createdRunFolder(int64_t run)
{
    const fs::path recorded = runFolder(run);
    if (recorded.empty())
        return std::nullopt;
    std::vector<fs::path> candidates = {recorded};
    for (const auto &artifact : artifacts(run)) {
        const fs::path path(artifact.path);
        if (path.has_parent_path())
            candidates.push_back(path.parent_path());
    }
    for (const auto &candidate : candidates) {
        std::error_code error;
        if (!fs::is_directory(candidate, error))
            continue;
        const std::optional<RunMarker> marker = readRunMarker(candidate);
        // The same run id may exist in another store (the default folder is shared): the marker must
        // name this one.
        if (!marker || marker->runId != run || marker->storePath.empty() || !sameFile(marker->storePath, m_impl->path))
            continue;
        return candidate;
    }
    return std::nullopt;
}

int RunStore::reconcileInterrupted()
{
    // Read without a write lock (the common case finds nothing to change), then update only the
    // runs found dead; the update re-checks the status in case their owner finished meanwhile.
    std::vector<int64_t> dead;
    {
        auto &select = m_impl->selectRunning;
        StatementScope scope(select);
        while (select.step()) {
            ProcessIdentity owner;
            owner.pid = select.columnInt(1);
            if (!select.columnIsNull(2))
                owner.startTime = static_cast<uint64_t>(select.columnInt(2));
            if (!isProcessAlive(owner))
                dead.push_back(select.columnInt(0));
        }
    }
    m_impl->unrecordedDead.clear();
    if (dead.empty())
        return 0;
    if (m_impl->readOnly) {
        m_impl->unrecordedDead.insert(dead.begin(), dead.end());
        return 0;
    }

    int changed = 0;
    try {
        SqliteTransaction transaction(m_impl->db);
        SqliteStatement update(m_impl->db.handle(),
                               "UPDATE runs SET status = 'interrupted', finished = ? WHERE id = ? AND status = 'running'");
        const std::string now = nowIso8601();
        for (int64_t id : dead) {
            update.bind(1, now).bind(2, id);
            update.run();
            changed += m_impl->db.changes();
        }
        transaction.commit();
    } catch (const SqliteError &e) {
        if (!e.isLocked() && !e.isReadOnly())
            throw;
        // Reading must not fail because the file cannot be written now: show them as interrupted
        // and record it at a later call.
        m_impl->unrecordedDead.insert(dead.begin(), dead.end());
        return 0;
    }
    return changed;
}

std::vector<RunRecord> RunStore::listRuns()
{
    reconcileInterrupted();
    std::map<int64_t, std::vector<std::string>> tags = m_impl->allTags();
    std::vector<RunRecord> runs;
    auto &select = m_impl->selectRuns;
    StatementScope scope(select);
    while (select.step()) {
        runs.push_back(readRun(select));
        RunRecord &record = runs.back();
        m_impl->applyUnrecordedDeaths(record);
        if (const auto it = tags.find(record.id); it != tags.end())
            record.tags = std::move(it->second);
    }
    return runs;
}

std::optional<RunRecord> RunStore::run(int64_t id)
{
    reconcileInterrupted();
    std::optional<RunRecord> record;
    {
        auto &select = m_impl->selectRun;
        StatementScope scope(select);
        select.bind(1, id);
        if (!select.step())
            return std::nullopt;
        record = readRun(select);
    }
    m_impl->applyUnrecordedDeaths(*record);
    record->tags = tags(id);
    return record;
}

std::vector<RunSummary> RunStore::listRunSummaries()
{
    reconcileInterrupted();
    std::map<int64_t, std::vector<std::string>> tags = m_impl->allTags();
    std::vector<RunSummary> summaries;
    auto &select = m_impl->selectSummaries;
    StatementScope scope(select);
    while (select.step()) {
        RunSummary summary;
        summary.run = readRun(select);
        m_impl->applyUnrecordedDeaths(summary.run);
        if (const auto it = tags.find(summary.run.id); it != tags.end())
            summary.run.tags = std::move(it->second);
        if (!select.columnIsNull(8))
            summary.steps = select.columnInt(8);
        if (!select.columnIsNull(9))
            summary.bestEvalLoss = select.columnDouble(9);
        summary.durationSeconds = select.columnIsNull(10) ? 0 : std::max<int64_t>(0, select.columnInt(10));
        summary.method = select.columnText(11);
        summaries.push_back(std::move(summary));
    }
    return summaries;
}

std::vector<MetricPoint> RunStore::metric(int64_t run, const std::string &key)
{
    std::vector<MetricPoint> points;
    auto &select = m_impl->selectMetric;
    StatementScope scope(select);
    select.bind(1, run).bind(2, key);
    while (select.step())
        points.push_back({select.columnInt(0), columnReal(select, 1), columnReal(select, 2)});
    return points;
}

std::vector<MetricPoint> RunStore::metric(int64_t run, const std::string &key, int64_t afterStep)
{
    std::vector<MetricPoint> points;
    auto &select = m_impl->selectMetricAfter;
    StatementScope scope(select);
    select.bind(1, run).bind(2, key).bind(3, afterStep);
    while (select.step())
        points.push_back({select.columnInt(0), columnReal(select, 1), columnReal(select, 2)});
    return points;
}

int64_t RunStore::metricsCursor()
{
    return m_impl->db.queryInt("SELECT coalesce(max(rowid), 0) FROM metrics");
}

std::vector<MetricRow> RunStore::metricsSince(int64_t &cursor)
{
    std::vector<MetricRow> rows;
    auto &select = m_impl->selectMetricsSince;
    StatementScope scope(select);
    select.bind(1, cursor);
    while (select.step()) {
        cursor = select.columnInt(0);
        rows.push_back({select.columnInt(1),
                        {select.columnText(2), select.columnInt(3), columnReal(select, 4), columnReal(select, 5)}});
    }
    return rows;
}

std::vector<std::string> RunStore::metricKeys(int64_t run)
{
    return readRowsOfRun<std::string>(m_impl->selectMetricKeys, run,
                                      [](const SqliteStatement &row) { return row.columnText(0); });
}

std::vector<EventRecord> RunStore::events(int64_t run)
{
    return readRowsOfRun<EventRecord>(m_impl->selectEvents, run, [](const SqliteStatement &row) {
        return EventRecord{row.columnText(0), parseLogLevel(row.columnText(1)), row.columnText(2)};
    });
}

std::vector<ArtifactRecord> RunStore::artifacts(int64_t run)
{
    return readRowsOfRun<ArtifactRecord>(m_impl->selectArtifacts, run, [](const SqliteStatement &row) {
        return ArtifactRecord{row.columnText(0), row.columnText(1)};
    });
}

} // namespace engine::store
