#pragma once
// Exporting what a run trained in the formats Python users load: a PEFT adapter folder
// (adapter_config.json + adapter_model.safetensors) or a merged model in save_pretrained's layout
// (config.json + model.safetensors, with the tokenizer.model the run used).

#include <filesystem>
#include <string>

namespace engine::train {

enum class ExportKind { Peft, Merged };

struct ExportResult {
    std::filesystem::path folder; ///< the written folder
    std::filesystem::path source; ///< what was exported: the run's adapter/model folder or a checkpoint
};

/// Exports the run in `runFolder` (its final adapter or model, else its newest checkpoint) to `target`,
/// which must not exist; the folder appears whole or not at all. Throws Error(InvalidInput) for a target
/// that exists, a run with nothing to export, --peft of a full fine-tune; Error(Io) for write failures.
ExportResult exportRun(const std::filesystem::path &runFolder, ExportKind kind, const std::filesystem::path &target);

} // namespace engine::train
