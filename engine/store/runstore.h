#pragma once
// The run store: every run, its metrics, events and artifacts in one sqlite3 database.
//
// How to use:
//   auto store = RunStore::open(path);                 // creates, migrates, marks dead runs interrupted
//   int64_t run = store.createRun("demo", configJson, "llama");
//   store.appendMetrics(run, {{"train/loss", 1, 0.12, 7.9}, ...});   // one transaction per batch
//   store.finishRun(run, RunStatus::Succeeded);
//
// WAL mode; a process killed at any moment leaves a database that opens, passes integrity_check and
// holds every batch committed before the kill. A run whose owning process died reads as Interrupted.
// One RunStore (one connection) per thread; several processes may share a file.

#include "engine/core/loglevel.h"

#include <cstdint>
#include <filesystem>
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
};

/// One value of a metric, as written by the trainer.
struct MetricSample {
    std::string key;    ///< e.g. "train/loss"
    int64_t step = 0;
    double wallTime = 0; ///< seconds since the run started
    double value = 0;
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
    static constexpr int kSchemaVersion = 1;

    /// Opens (creating folders and the file if needed) and migrates to kSchemaVersion. Throws
    /// Error(Io) naming the path if it cannot be opened or is not a tunebench database, and
    /// Error(InvalidInput) if it was written by a newer tunebench (schema version too high).
    static RunStore open(const std::filesystem::path &path);

    RunStore(RunStore &&) noexcept;
    RunStore &operator=(RunStore &&) noexcept;
    ~RunStore();

    const std::filesystem::path &path() const;
    int schemaVersion() const;

    /// Creates a run with status Running, owned by this process. Returns its id.
    int64_t createRun(const std::string &name, const std::string &configJson, const std::string &model);
    /// Appends samples in one transaction (a batch commits whole or not at all).
    void appendMetrics(int64_t run, const std::vector<MetricSample> &samples);
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

    /// Marks Running runs whose owning process is gone as Interrupted. Returns how many changed.
    int reconcileInterrupted();

    /// All runs, newest first (reconciled first, so a dead run never reads as Running).
    std::vector<RunRecord> listRuns();
    std::optional<RunRecord> run(int64_t id);
    /// One metric of one run in step order (served by an index).
    std::vector<MetricPoint> metric(int64_t run, const std::string &key);
    std::vector<std::string> metricKeys(int64_t run);
    std::vector<EventRecord> events(int64_t run);
    std::vector<ArtifactRecord> artifacts(int64_t run);

private:
    struct Impl;
    explicit RunStore(std::unique_ptr<Impl> impl);
    std::unique_ptr<Impl> m_impl;
};

} // namespace engine::store
