#pragma once
// The model a plan is made for: its module tree (from config.json, with the exact dtypes of the
// checkpoint's safetensors headers when the folder has weights; no tensor data is read) and the few
// shapes the activation estimate needs. Torch-free.
//
// How to use:
//   PlanModel model = planModelFromPath("/models/chatglm-6b");   // a folder or a config.json
//   model.tree.root ...; model.arch.heads; model.warnings;       // e.g. "fell back to tensor names"

#include "engine/model/moduletree.h"

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace engine::io {
struct TensorInfo;
}

namespace engine::plan {

/// The shapes of the transformer, for activations and logits.
struct ArchInfo {
    std::string family;       ///< "llama" (RMSNorm, SwiGLU, GQA), "gpt" (LayerNorm, GELU: gpt2, chatglm), "generic"
    int64_t hidden = 0;
    int64_t heads = 0;
    int64_t kvHeads = 0;
    int64_t headDim = 0;
    int64_t intermediate = 0;
    int64_t vocab = 0;
    int64_t layers = 0;
};

/// A module tree plus what planning needs besides it.
struct PlanModel {
    model::ModuleTree tree;
    ArchInfo arch;
    std::vector<std::string> warnings;
    /// config.json's auto_map keys ("AutoConfig", "AutoModel", ...): the model's code ships with its
    /// checkpoint, so transformers loads it only with trust_remote_code=True.
    std::vector<std::string> remoteCodeClasses;
};

/// Builds the plan model of a config object (no weights).
PlanModel planModelFromConfig(const nlohmann::json &config, const std::string &source);

/// Reads a model folder or a config.json. A folder with safetensors weights gives each parameter its
/// checkpoint dtype. An unknown model_type falls back to the checkpoint's tensor names (with a
/// warning); without weights to fall back to, it throws Error(InvalidInput) naming the field.
PlanModel planModelFromPath(const std::filesystem::path &path);

/// A tree from tensor names alone: dotted prefixes become modules, numbered children of a list become
/// no-split "Block"s, names in natural order with a top-level head (lm_head, ...) last.
model::ModuleTree moduleTreeFromTensors(const std::vector<io::TensorInfo> &tensors);

/// The torch dtype name of a safetensors dtype name ("BF16" -> "bfloat16", "I8" -> "int8").
std::string torchDtypeName(const std::string &safetensorsName);

} // namespace engine::plan
