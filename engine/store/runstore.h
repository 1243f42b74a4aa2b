#pragma once
// The run store: every run, its metrics, events and artifacts in one sqlite3 database.
//
// How to use:
//   auto store = RunStore::open(path);                 // creates, migrates, marks dead runs interrupted
//   int64_t run = store.createRun("demo", configJson, "llama");
//   store.appendMetrics(run, {{"train/loss", 1, 0.12, 7.9}, ...});   // one transaction per batch
//   store.finishRun(run, RunStatus::Succeeded);
//   for (const RunSummary &row : store.listRunSummaries()) ...   // the runs table: steps, best eval loss
//
// WAL mode; a process killed at any moment leaves a database that opens, passes integrity_check and
// holds every batch committed before the kill. A run whose owning process died reads as Interrupted.
// One RunStore (one connection) per thread; several processes may share a file.
//
// Bad files: a database of a newer schema is refused before anything is written to it; a read-only
// one opens for reading (isReadOnly(); writes throw Error(Io) saying it is read-only); while another
// process holds the write lock, reads go on (WAL) and a write waits OpenOptions::busyTimeoutMs, then
// throws Error(Io) saying the database is locked. Nothing is half-written in any of these cases.

#include "engine/core/loglevel.h"

#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace engine::store {

enum class RunStatus { Running, Succeeded, Failed, Cancelled, Interrupted };

const char *runStatusName(RunStatus status);
std::optional<RunStatus> parseRunStatus(std::string_view name);

/// One row of the runs table.
struct RunRecord {
    int64_t id = 0;
    std::string name;
    std::string created;  ///< ISO 8601, UTC, e.g. 2026-11-29T16:25:53Z
    std::string finished; ///< empty while running
    RunStatus status = RunStatus::Running;
    std::string configJson;
    std::string model;
    std::string notes;
    std::vector<std::string> tags; ///< sorted, no duplicates
};

/// A run with what the runs table shows of it, computed by sqlite from indexes (no metric rows read
/// into the process).
struct RunSummary {
    RunRecord run;
    std::optional<int64_t> steps;       ///< the last step of train/loss; empty before the first step
    std::optional<double> bestEvalLoss; ///< the lowest eval/loss (NaN values skipped); empty if never evaluated
    int64_t durationSeconds = 0;        ///< finished - created, or now - created while the run has no finish time
    std::string method;                 ///< "lora" or "full" from the config (training.method); empty if unknown
};

/// How open() treats a busy database.
struct OpenOptions {
    /// How long a write waits for another process's write lock before it fails as "locked".
    int busyTimeoutMs = 5000;
};

/// What deleteRun() does with the run's folder on disk.
enum class RunFolderAction { Keep, Delete };

/// One value of a metric, as written by the trainer.
struct MetricSample {
    std::string key;    ///< e.g. "train/loss"
    int64_t step = 0;
    double wallTime = 0; ///< seconds since the run started
    double value = 0;
};

/// One metric value of some run, as a live view reads what was written since it last looked.
struct MetricRow {
    int64_t run = 0;
    MetricSample sample;
};

/// One value of one metric of one run, as read back.
struct MetricPoint {
    int64_t step = 0;
    double wallTime = 0;
    double value = 0;
};

struct EventRecord {
    std::string time; ///< ISO 8601, UTC
    LogLevel level = LogLevel::Info;
    std::string text;
};

struct ArtifactRecord {
    std::string kind; ///< e.g. "loss_plot", "checkpoint", "tokenizer"
    std::string path;
};

class RunStore {
public:
    static constexpr int kSchemaVersion = 2;

    /// Opens (creating folders and the file if needed) and migrates to kSchemaVersion in place (each
    /// step in one transaction). Throws Error(Io) naming the path if it cannot be opened, is not a
    /// tunebench database, is locked or read-only and needs an upgrade, and Error(InvalidInput) if it
    /// was written by a newer tunebench (schema version too high; the file is not touched).
    static RunStore open(const std::filesystem::path &path, const OpenOptions &options = {});

    RunStore(RunStore &&) noexcept;
    RunStore &operator=(RunStore &&) noexcept;
    ~RunStore();

    const std::filesystem::path &path() const;
    int schemaVersion() const;
    /// True if the file could only be opened for reading (permissions); every write throws.
    bool isReadOnly() const;
    /// A number that changes whenever another connection commits to the file (PRAGMA data_version):
    /// a cheap "did anything change?" for polling. This connection's own writes do not change it.
    int64_t dataVersion();

    /// Creates a run with status Running, owned by this process. Returns its id.
    int64_t createRun(const std::string &name, const std::string &configJson, const std::string &model);
    /// Appends samples in one transaction (a batch commits whole or not at all).
    void appendMetrics(int64_t run, const std::vector<MetricSample> &samples);
    /// Test hook: called inside appendMetrics' transaction, after the batch's inserts and before the
    /// commit (empty: none), so that a test can read through another connection while a write is
    /// provably open instead of hoping the threads overlap.
    void setBeforeMetricsCommit(std::function<void()> hook);
    void addEvent(int64_t run, LogLevel level, const std::string &text);
    void addArtifact(int64_t run, const std::string &kind, const std::string &path);
    /// Continues a run from a checkpoint at `fromStep` in this process: in one transaction, marks it
    /// running again (owned by this process, no finish time) and deletes its metric values after
    /// `fromStep`, which the resumed steps write anew. Throws Error(InvalidInput) for an unknown run or
    /// one that another live process is still running.
    void resumeRun(int64_t run, int64_t fromStep);
    /// Sets the final status (not Running) and the finish time.
    void finishRun(int64_t run, RunStatus status);
    void setNotes(int64_t run, const std::string &notes);
    /// Renames a run; the name is trimmed and must not be empty (Error(InvalidInput)).
    void renameRun(int64_t run, const std::string &name);
    /// Adds one tag (no-op if the run has it). A tag is trimmed, 1-64 bytes, without whitespace or
    /// commas; anything else is Error(InvalidInput) naming the tag.
    void addTag(int64_t run, const std::string &tag);
    /// Removes one tag (no-op if the run does not have it).
    void removeTag(int64_t run, const std::string &tag);
    /// Replaces the run's tags with `tags` (checked as addTag, duplicates dropped) in one transaction.
    void setTags(int64_t run, const std::vector<std::string> &tags);
    /// The run's tags, sorted.
    std::vector<std::string> tags(int64_t run);
    /// Deletes a run with its metrics, events, artifacts and tags in one transaction. With
    /// RunFolderAction::Delete it then removes createdRunFolder(run), if there is one (never any other
    /// folder). Throws Error(InvalidInput) for an unknown run or one that a live process is running,
    /// and Error(Io) if the folder could not be removed (the rows are gone then; the message says so).
    void deleteRun(int64_t run, RunFolderAction folder = RunFolderAction::Keep);
    /// Where the run's files are or were (whether or not the folder still exists): runFolderOf its stored
    /// config (engine/store/runfolder.h). Empty for an unknown run.
    std::filesystem::path runFolder(int64_t run);
    /// The folder tunebench created for this run, if it still exists: the run's output folder (its
    /// runFolder, or the folder of one of its artifacts) that
    /// holds a marker (kRunMarker) naming this run and this store. Empty for anything else.
    std::optional<std::filesystem::path> createdRunFolder(int64_t run);

    /// Marks Running runs whose owning process is gone as Interrupted. Returns how many changed.
    int reconcileInterrupted();

    /// All runs, newest first (reconciled first, so a dead run never reads as Running).
    std::vector<RunRecord> listRuns();
    std::optional<RunRecord> run(int64_t id);
    /// All runs with their table summary, newest first (reconciled first, like listRuns).
    std::vector<RunSummary> listRunSummaries();
    /// One metric of one run in step order (served by an index).
    std::vector<MetricPoint> metric(int64_t run, const std::string &key);
    /// The values of one metric after `afterStep`, in step order: what a live view appends.
    std::vector<MetricPoint> metric(int64_t run, const std::string &key, int64_t afterStep);
    std::vector<std::string> metricKeys(int64_t run);
    /// Where the metrics end now: pass it to metricsSince() to read only what is written later.
    int64_t metricsCursor();
    /// The metric values of every run written after `cursor` (from metricsCursor() or an earlier
    /// call), in the order they were written, and moves `cursor` past them. One range read of the new
    /// rows only, so a live view can call it every second whatever the size of the store. (A value
    /// rewritten for a step already seen keeps its place and is not returned again.)
    std::vector<MetricRow> metricsSince(int64_t &cursor);
    std::vector<EventRecord> events(int64_t run);
    std::vector<ArtifactRecord> artifacts(int64_t run);

private:
    struct Impl;
    explicit RunStore(std::unique_ptr<Impl> impl);
    std::unique_ptr<Impl> m_impl;
};

} // namespace engine::store
