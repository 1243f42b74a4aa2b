#pragma once
// Is the process that owns a run still alive? A pid alone is not enough (pids are reused), so a
// process is identified by its pid plus its start time (field 22 of /proc/<pid>/stat, in clock
// ticks since boot).

#include <cstdint>
#include <optional>

namespace engine::store {

/// Identity of a process: pid plus start time.
struct ProcessIdentity {
    int64_t pid = 0;
    std::optional<uint64_t> startTime; ///< empty where /proc is not available
};

/// This process.
ProcessIdentity currentProcess();

/// The start time of `pid`, or empty if there is no such process (a zombie counts as gone).
std::optional<uint64_t> processStartTime(int64_t pid);

/// True if `owner` still runs: the pid exists and, where known, has the same start time.
bool isProcessAlive(const ProcessIdentity &owner);

} // namespace engine::store
