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
    bool gatedMlp = false;    ///< "generic": three intermediate-wide projections per block (SwiGLU-like)
    int64_t experts = 0;          ///< mixture of experts (mixtral, qwen3_moe): experts per sparse layer; 0 = dense
    int64_t expertsPerToken = 0;  ///< the top-k experts each token is routed to
    /// Per decoder layer, its attention window (LlamaConfig::attentionWindow: a query sees itself and the
    /// window - 1 keys before it); 0 = full attention. Empty when the architecture declares none.
    std::vector<int64_t> attentionWindows = {};
    bool attentionSoftcap = false; ///< gemma2: scores go through tanh (its output is kept for backward)
    bool logitSoftcap = false;     ///< gemma: logits go through tanh (its output is kept for backward)
    std::string outputHead;   ///< "generic": the module whose output is the logits ("" = none found)
};

/// A module tree plus what planning needs besides it.
struct PlanModel {
    model::ModuleTree tree;
    ArchInfo arch;
    std::vector<std::string> warnings;
    /// config.json's auto_map keys ("AutoConfig", "AutoModel", ...): the model's code ships with its
    /// checkpoint, so transformers loads it only with trust_remote_code=True.
    std::vector<std::string> remoteCodeClasses;
    /// What the activation estimate assumes or leaves out; the planner adds these to training plans only.
    std::vector<std::string> activationWarnings;
};

/// Builds the plan model of a config object (no weights).
PlanModel planModelFromConfig(const nlohmann::json &config, const std::string &source);

/// Reads a model folder or a config.json. A folder with safetensors weights gives each parameter its
/// checkpoint dtype. Where config.json gives no tree (no config.json, no or an unknown model_type, a config
/// the tree builder refuses) a folder with weights is planned from its headers (planModelFromTensors), the
/// first warning saying why; without weights it throws Error(InvalidInput) naming the file and field. A
/// missing shard or a corrupt header throws the reader's error, which names the file.
PlanModel planModelFromPath(const std::filesystem::path &path);

/// A tree from tensor names alone (tensortree.cpp): dotted prefixes become modules, numbered children of a
/// list become no-split "Block"s; siblings ordered embeddings, numbered lists, the rest, a top-level head
/// (lm_head, ...) last. Throws Error(InvalidInput) naming a tensor whose name does not nest ("a" and "a.b").
model::ModuleTree moduleTreeFromTensors(const std::vector<io::TensorInfo> &tensors);

/// Plans a model tunebench has no architecture for from its checkpoint's tensors (genericmodel.cpp): the tree
/// of moduleTreeFromTensors, a tied lm_head when the checkpoint leaves it out, family "generic" sizes from
/// `config`'s usual keys (null when there is no config.json), and warnings saying what is estimated.
PlanModel planModelFromTensors(const std::vector<io::TensorInfo> &tensors, const nlohmann::json &config,
                               const std::string &source);

/// lm_head, head, output, embed_out: the top-level names of a causal LM's output projection.
bool isOutputHeadName(const std::string &topLevelName);

/// The torch dtype name of a safetensors dtype name ("BF16" -> "bfloat16", "I8" -> "int8").
std::string torchDtypeName(const std::string &safetensorsName);

} // namespace engine::plan
