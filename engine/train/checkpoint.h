#pragma once
// Training checkpoints: <output>/checkpoint-<step>/ with the trainable weights (a PEFT adapter for LoRA,
// save_pretrained weights for full fine-tuning), the optimizer's moments, the random generator state and
// trainer_state.json (step, data position, the run and what must match to resume). Each checkpoint
// appears whole or not at all (written into a hidden partial folder, flushed, renamed). Engine-internal.

#include "engine/model/llamamodel.h"
#include "engine/train/optimizer.h"
#include "engine/train/trainingparams.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>

namespace engine::train {

/// trainer_state.json.
struct CheckpointState {
    int64_t step = 0;
    int64_t runId = 0;
    std::string storePath;
    int64_t samplerShuffles = 0;
    int64_t samplerCursor = 0;
    int64_t optimizerSteps = 0;
    double lossScale = 0;               ///< fp16's dynamic loss scale; 0 = no loss scaling
    int64_t lossScaleGrowthTracker = 0; ///< clean steps since the scale last changed
    /// What a resume must agree with: model config, method, LoRA settings, batch shape, seed, data.
    nlohmann::json identity;
    nlohmann::json training; ///< the settings of the run (TrainingParams::toJson)
};

/// Writes checkpoint-<state.step> into `outputDir` and removes the oldest beyond `keep` (0 = keep all).
/// Returns the checkpoint folder. Throws Error(Io); a failed write leaves no checkpoint folder behind.
std::filesystem::path writeCheckpoint(const std::filesystem::path &outputDir, const CheckpointState &state,
                                      model::LlamaForCausalLM &model, const TrainingParams &params,
                                      const Optimizer &optimizer, int64_t keep);

/// The checkpoint to resume from: `path` itself when it is a checkpoint folder, else the one with the
/// highest step in `path` (partial folders are ignored). Throws Error(InvalidInput) when there is none.
std::filesystem::path findCheckpoint(const std::filesystem::path &path);

/// Reads trainer_state.json. Throws Error(InvalidInput) naming the file.
CheckpointState readCheckpointState(const std::filesystem::path &checkpoint);

/// Restores weights (the adapter into a model with LoRA attached, or every parameter), the optimizer's
/// state and the random generator. Throws Error(InvalidInput) naming the file that does not fit.
void restoreCheckpoint(const std::filesystem::path &checkpoint, const CheckpointState &state,
                       model::LlamaForCausalLM &model, const TrainingParams &params, Optimizer &optimizer);

/// Removes partial checkpoint folders a killed process left in `outputDir` (they never became checkpoints).
/// Returns how many.
int removePartialCheckpoints(const std::filesystem::path &outputDir);

} // namespace engine::train
