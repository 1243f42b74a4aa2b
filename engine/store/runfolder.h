#pragma once
// Where a run's files live, in one place: its folder (the --output given, else runs/<id> beside its
// database), the marker that says which run and store a folder belongs to, its checkpoints, the
// folder and id from what a user types (an id, a run folder, a checkpoint folder), and typed access
// to what the store keeps of the run's configuration. The trainer, the store, `export`, `runs`,
// `train --resume` and the Runs page call these. Torch-free.
//
// How to use:
//   RunConfig config = parseRunConfig(record.configJson);   // the stored config, typed
//   fs::path folder = resolveRunFolder("7", storePath);     // run 7's folder
//   ResumeState where = readResumeState("7", storePath);     // its newest checkpoint and settings

#include <nlohmann/json.hpp>

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace engine::store {

/// The marker tunebench writes into every run folder it creates: {"run_id": N, "store": "<db path>"}.
inline constexpr const char *kRunMarker = "run.json";
/// A checkpoint's state file (checkpoint-<step>/trainer_state.json).
inline constexpr const char *kCheckpointStateFile = "trainer_state.json";

/// Where runs recorded in the database at `storePath` keep their files when no output folder is given:
/// the "runs" folder beside it (<folder>/runs/<id>), absolute. For the default database that is
/// <data>/runs; a run folder chosen in the GUI, or `--db`, keeps the runs' files with their database.
std::filesystem::path runsFolderBeside(const std::filesystem::path &storePath);

/// The folder of a new run: `outputDir` when one was given, else runsFolderBeside(storePath)/<runId>.
std::filesystem::path newRunFolder(const std::string &outputDir, int64_t runId, const std::filesystem::path &storePath);

/// A run folder's marker.
struct RunMarker {
    int64_t runId = 0;
    std::string storePath;
};

/// Writes the marker into `folder` (created when missing), atomically. Throws Error(Io).
void writeRunMarker(const std::filesystem::path &folder, const RunMarker &marker);
/// The marker of `folder`; nullopt when it has none or it is not a marker.
std::optional<RunMarker> readRunMarker(const std::filesystem::path &folder);

/// What the store keeps of a run's configuration (RunRecord::configJson), typed.
struct RunConfig {
    nlohmann::json training = nlohmann::json::object(); ///< the settings (engine/train/settingschema.h reads them)
    std::string outputDir;   ///< the --output given; empty when the run used the default folder
    std::string outputRoot;  ///< the runs folder beside the database when it was created
    std::string tokenizer;
    std::string corpus;
    int64_t corpusTokens = 0;
    int64_t worldSize = 1;   ///< the ranks of a data-parallel run
    std::string launcher;    ///< what started its ranks (torchrun, slurm, tunebench launch); empty for one process
    std::string method;      ///< "full" or "lora"; empty when unknown
};

/// Parses a stored config; what is missing or malformed stays at its default (old runs lack keys).
RunConfig parseRunConfig(const std::string &configJson);

/// The folder of run `runId` whose stored config is `config`: as the trainer chose it (newRunFolder), or,
/// for runs recorded before output_root was, <data>/runs/<id>.
std::filesystem::path runFolderOf(int64_t runId, const RunConfig &config);

/// The checkpoints in `runFolder` (checkpoint-<step>/ holding trainer_state.json), by step.
std::vector<std::pair<int64_t, std::filesystem::path>> listCheckpoints(const std::filesystem::path &runFolder);

/// The folder of a run for --resume, export and metrics: `runOrFolder` itself when it is a folder (a
/// checkpoint folder stands for its run's folder), else the run with that id in `storePath`. Throws
/// Error(InvalidInput) naming what is not found.
std::filesystem::path resolveRunFolder(const std::string &runOrFolder, const std::string &storePath);
/// The run id of `runOrFolder` (an id, or a run's output or checkpoint folder). Throws Error(InvalidInput).
int64_t resolveRunId(const std::string &runOrFolder, const std::string &storePath);

/// Where a run stands for a resume: its newest checkpoint and the settings it was written with.
struct ResumeState {
    int64_t runId = 0;
    std::string storePath;             ///< the database the run is recorded in
    std::filesystem::path folder;      ///< the run's folder
    std::filesystem::path checkpoint;  ///< its newest checkpoint
    int64_t step = 0;                  ///< the step that checkpoint holds
    nlohmann::json training;           ///< the settings it was written with (train::readSettingsJson reads them)
};

/// The resume state of `runOrFolder` (an id in `storePath`, a run folder or a checkpoint folder). Throws
/// Error(InvalidInput) naming the run and what is missing (no such run, no checkpoint, an unreadable
/// trainer_state.json).
ResumeState readResumeState(const std::string &runOrFolder, const std::string &storePath);

} // namespace engine::store
