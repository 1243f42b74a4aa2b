#pragma once
// Where a run lives: its folder and id from what a user types (an id, a run folder, a checkpoint
// folder). No torch here, so that `tunebench runs` starts without loading libtorch.

#include <cstdint>
#include <filesystem>
#include <string>

namespace engine::train {

/// The marker file a run's output folder holds: {"run_id": N, ...}.
inline constexpr const char *kRunMarker = "run.json";

/// The folder of a run for --resume, export and metrics: `runOrFolder` itself when it is a folder, else
/// the run with that id in `storePath` (its output folder: RunStore::runFolder). Throws
/// Error(InvalidInput) naming what is not found.
std::filesystem::path resolveRunFolder(const std::string &runOrFolder, const std::string &storePath);
/// The run id of `runOrFolder` (an id, or a run's output or checkpoint folder). Throws Error(InvalidInput).
int64_t resolveRunId(const std::string &runOrFolder, const std::string &storePath);

} // namespace engine::train
