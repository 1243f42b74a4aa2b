#pragma once
// Trace files (docs/trace-format.md): what a recorder outside the engine (the Python recorder,
// resources/python/tunebench_record) saw of one step, read back into the inspector's report and diagnosed by
// the same analysis as the engine's own recordings (diagnosis.h). Torch-free.
//
// How to use:
//   InspectionReport report = inspectTraceFile("trace.jsonl");   // diagnosed; throws on a bad file
//   puts(reportToText(report).c_str());

#include "engine/inspect/diagnosis.h"
#include "engine/inspect/inspectionreport.h"

#include <filesystem>
#include <istream>
#include <string>

namespace engine::inspect {

/// The trace format version this build reads and the Python recorder writes.
inline constexpr int kTraceVersion = 1;

/// A trace as read: the recording and how its step ended, not yet diagnosed.
struct TraceRecording {
    InspectionReport report;
    RecordingOutcome outcome;
};

/// Reads a trace from `in`; `name` names it in errors. Throws Error(InvalidInput) naming the line and
/// the problem: not a trace, another format or a newer version, a record that is not JSON or misses a
/// key, an index out of range, a file that ends before its end record.
TraceRecording readTrace(std::istream &in, const std::string &name);

/// Reads and diagnoses the trace file at `path` (Error(Io) when it cannot be read).
InspectionReport inspectTraceFile(const std::filesystem::path &path);

} // namespace engine::inspect
