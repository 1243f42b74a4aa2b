#pragma once
// Mixture-of-experts causal LMs for planning: mixtral (MixtralForCausalLM) and qwen3_moe
// (Qwen3MoeForCausalLM), in the layout of transformers 5: a sparse layer's `mlp` holds a router
// (`mlp.gate`, a TopKRouter with one [experts, hidden] weight) and all its experts as one module
// (`mlp.experts`) of two 3-D parameters, gate_up_proj [experts, 2 x width, hidden] and down_proj
// [experts, hidden, width]. Everything else (embeddings, attention, norms, a dense MLP, the rotary
// buffer at model.rotary_emb) is the LLaMA-family tree of the model whose attention it reuses: Mistral's
// for Mixtral, Qwen3's (q/k norms) for Qwen3-MoE, read by LlamaConfig and renamed to the MoE classes.
// Planning only: tunebench's engine does not train or run these models.
//
// How to use:
//   MoeConfig config = MoeConfig::fromJson(json, "config.json");
//   ModuleTree tree = moeModuleTree(config, "bfloat16");   // or moduleTreeFromConfig(json, source)
//   tree.find("model.layers.0.mlp.experts");               // MixtralExperts
//   legacyExpertTensor("mixtral", "model.layers.0.block_sparse_moe.experts.3.w1.weight");
//       // -> {"model.layers.0.mlp.experts.gate_up_proj", expert 3, ExpertPart::Gate}

#include "engine/model/llamaconfig.h"
#include "engine/model/moduletree.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace engine::model {

/// What a mixtral or qwen3_moe config.json declares. The attention, norms, embeddings and any dense MLP
/// are `dense`, read as that model's attention family (mistral for mixtral, qwen3 for qwen3_moe) with the
/// MoE config class's defaults; so `dense.attentionWindow(layer)` is each layer's window here too.
struct MoeConfig {
    std::string modelType = "mixtral";  ///< "mixtral" or "qwen3_moe"
    LlamaConfig dense;                  ///< modelType "mistral" or "qwen3"; intermediateSize = a dense MLP's width
    int64_t numExperts = 8;             ///< num_local_experts (mixtral) / num_experts (qwen3_moe)
    int64_t expertsPerToken = 2;        ///< num_experts_per_tok: the top-k each token is routed to
    int64_t expertIntermediate = 14336; ///< one expert's gate/up width (mixtral: intermediate_size; qwen3_moe:
                                        ///< moe_intermediate_size)
    std::vector<char> sparseLayers;     ///< per decoder layer: 1 = router + experts, 0 = a dense MLP (qwen3_moe's
                                        ///< mlp_only_layers and decoder_sparse_step)

    /// Whether decoder layer `layer` holds experts.
    bool isSparse(int64_t layer) const;
    /// The transformers class name: "MixtralForCausalLM", "Qwen3MoeExperts", ...
    std::string className(const std::string &suffix) const;

    /// Reads a config.json object of model_type mixtral or qwen3_moe. Keys that change the parameters or the
    /// planned memory and are not implemented are refused by name (qwen3_moe's use_sliding_window, a shared
    /// expert, mixtral's router_jitter_noise above 0, ...); the attention keys are refused as LlamaConfig
    /// refuses them. Throws Error(InvalidInput) naming `source` and the field.
    static MoeConfig fromJson(const nlohmann::json &json, const std::string &source);
};

/// "mixtral" or "qwen3_moe".
bool isMoeModelType(const std::string &modelType);

/// The module tree of `config` in transformers 5's registration order: MixtralSparseMoeBlock registers
/// gate then experts, Qwen3MoeSparseMoeBlock experts then gate. `dtype` is a torch dtype name.
ModuleTree moeModuleTree(const MoeConfig &config, const std::string &dtype);

/// Which slice of a fused expert parameter an older per-expert checkpoint tensor fills.
enum class ExpertPart { Gate, Up, Down, Whole };

/// A checkpoint tensor under its older name, and the parameter of the current tree it loads into.
struct LegacyExpertTensor {
    std::string parameter; ///< full name in the tree: "model.layers.0.mlp.experts.gate_up_proj"
    int64_t expert = -1;   ///< the expert's index (-1 for a renamed router weight)
    ExpertPart part = ExpertPart::Whole;
};

/// transformers 5's conversion of older checkpoints: mixtral's block_sparse_moe.experts.N.w1 / w3 (gate,
/// up) and w2 (down), and block_sparse_moe.gate; qwen3_moe's mlp.experts.N.gate_proj / up_proj / down_proj.
/// Gate and up halves are concatenated on dim 1 of gate_up_proj and the experts stacked on dim 0.
/// nullopt for a name that needs no mapping.
std::optional<LegacyExpertTensor> legacyExpertTensor(const std::string &modelType, const std::string &name);

} // namespace engine::model
