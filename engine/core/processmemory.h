#pragma once
// This process's resident memory and the machine's available RAM (Linux /proc), for the memory
// metrics of training runs and the planner's CPU budget.
// Torch-free.

#include <cstdint>

namespace engine {

/// Resident set size now (VmRSS), in bytes; 0 when /proc cannot be read.
int64_t residentBytes();
/// The highest resident set size since the last resetResidentPeak() (VmHWM), in bytes; 0 when unknown.
int64_t residentPeakBytes();
/// Starts a new peak from the current resident size (writes 5 to /proc/self/clear_refs). False when the
/// kernel refuses it; the peak then stays the process's lifetime peak.
bool resetResidentPeak();
/// The machine's RAM available to new work now (/proc/meminfo's MemAvailable), in bytes; 0 when unknown.
int64_t availableRamBytes();

} // namespace engine
