#pragma once
// The inspector's one analysis: from what a recording saw of a step (its ops, storages and saved
// tensors in an InspectionReport, and how the step ended in a RecordingOutcome), the diagnosis: the
// in-place write that broke backward and how to fix it, a silent mutation, where NaN first
// appeared, and the report's status and summary. The engine's own recorder (stepinspector.cpp) and
// the trace files of the Python recorder (tracefile.h) both end here. Torch-free.
//
// How to use:
//   InspectionReport report = ...;            // ops, storages, savedTensors, nan, gradients filled
//   RecordingOutcome outcome = ...;           // errors, stale saved tensors, silent mutations
//   diagnose(report, outcome, FixContext::Unknown);   // report.status, conflict, summary, ...

#include "engine/inspect/inspectionreport.h"

#include <cstdint>
#include <string>
#include <vector>

namespace engine::inspect {

/// Hints that choose which fix reads first.
enum class FixContext { Unknown, KvCache };

/// A saved tensor whose version moved between save and the check.
struct StaleSaved {
    int64_t savedId = -1;
    int64_t savedVersion = 0;
    int64_t currentVersion = 0;
};

/// How the recorded step ended, besides what the report already holds.
struct RecordingOutcome {
    std::string forwardError;            ///< the step failed before backward (PyTorch's message)
    std::string backwardError;           ///< backward threw (PyTorch's message)
    std::string referenceError;          ///< the error of a run without hooks, when one was made
    std::vector<StaleSaved> predicted;   ///< stale when checked before backward
    std::vector<StaleSaved> raised;      ///< stale when backward unpacked them
    std::vector<int64_t> mutated;        ///< saved tensors whose contents changed without a version bump
};

/// Sets report.status, pytorchError, error, conflict, mutations, summary (and a NaN origin "loss" when
/// only the loss is known to be non-finite) from `outcome` and what the report holds.
void diagnose(InspectionReport &report, const RecordingOutcome &outcome, FixContext context);

/// The fixes of a conflict in plain words, the one that fits `context` first; with the culprit's
/// source line when it is known ("In model.py:187 (forward): ...").
std::vector<std::string> conflictFixes(const InplaceConflict &conflict, FixContext context);

/// The in-place conflict of stale saved tensor `stale`: which op saved it, and every write to its
/// storage after the save (the first is the culprit), from the report's storage timelines.
InplaceConflict buildConflict(const InspectionReport &report, const StaleSaved &stale, FixContext context);

/// Fills the `code` of every op's source location from its file (each file read once), where the
/// recorder knew the file and line but not the text (TorchScript). Files that cannot be read stay as they are.
void readSourceLines(InspectionReport &report);

/// Sets each gradient row's problem (frozen but in the optimizer, no gradient, NaN, zero, ...) and
/// report.gradientProblems, the same in sentences with counts.
void classifyGradients(InspectionReport &report);

} // namespace engine::inspect
