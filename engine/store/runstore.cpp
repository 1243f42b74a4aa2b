#include "engine/store/runstore.h"

#include "engine/core/error.h"
#include "engine/store/migrations.h"
#include "engine/store/processliveness.h"
#include "engine/store/sqlitestatement.h"

#include <nlohmann/json.hpp>
#include <sqlite3.h>

#include <cmath>
#include <ctime>
#include <limits>
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

constexpr std::string_view kRunColumns = "id, name, created, finished, status, config, model, notes";

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

} // namespace

struct RunStore::Impl {
    explicit Impl(const fs::path &file) : path(file), db(file.string()) {}

    std::string label() const { return "run store " + path.string(); }
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
    }

    fs::path path;
    SqliteDatabase db; // declared before the statements: they are finalized before it closes
    int version = 0;
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
};

RunStore RunStore::open(const fs::path &path)
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
    try {
        // Several processes may share the file: wait up to 5 s for a lock instead of failing.
        impl->db.exec("PRAGMA busy_timeout = 5000");
        // The first statement that reads the file: a file that is not sqlite fails here.
        impl->db.queryText("PRAGMA journal_mode = WAL");
        // In WAL mode NORMAL loses no committed transaction when the process is killed (only an OS
        // crash or power loss may roll back the last few).
        impl->db.exec("PRAGMA synchronous = NORMAL; PRAGMA foreign_keys = ON");
    } catch (const SqliteError &e) {
        throw ioError("run store " + path.string() + ": cannot open: " + sqlite3_errstr(e.code()));
    }
    migrateSchema(impl->db, path.string(), kSchemaVersion);
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
        transaction.commit();
    } catch (const SqliteError &e) {
        if (e.isForeignKeyViolation())
            m_impl->throwNoSuchRun(run);
        throw;
    }
}

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
    SqliteStatement update(m_impl->db.handle(), "UPDATE runs SET notes = ? WHERE id = ?");
    update.bind(1, notes).bind(2, run);
    update.run();
    if (m_impl->db.changes() == 0)
        m_impl->throwNoSuchRun(run);
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
    if (dead.empty())
        return 0;

    SqliteTransaction transaction(m_impl->db);
    SqliteStatement update(m_impl->db.handle(),
                           "UPDATE runs SET status = 'interrupted', finished = ? WHERE id = ? AND status = 'running'");
    const std::string now = nowIso8601();
    int changed = 0;
    for (int64_t id : dead) {
        update.bind(1, now).bind(2, id);
        update.run();
        changed += m_impl->db.changes();
    }
    transaction.commit();
    return changed;
}

std::vector<RunRecord> RunStore::listRuns()
{
    reconcileInterrupted();
    std::vector<RunRecord> runs;
    auto &select = m_impl->selectRuns;
    StatementScope scope(select);
    while (select.step())
        runs.push_back(readRun(select));
    return runs;
}

std::optional<RunRecord> RunStore::run(int64_t id)
{
    reconcileInterrupted();
    auto &select = m_impl->selectRun;
    StatementScope scope(select);
    select.bind(1, id);
    if (!select.step())
        return std::nullopt;
    return readRun(select);
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
