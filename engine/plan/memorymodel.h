#pragma once
// Training memory per module: what each parameter costs (weights, gradients, optimizer state, LoRA)
// and what each leaf module saves for backward, from which the planner sums devices and phases.
// The formulas and their sources are in docs/memory-estimate.md; memorymodel.cpp derives the
// LLaMA block's count step by step. Torch-free.

#include "engine/plan/flattree.h"
#include "engine/plan/plan.h"
#include "engine/plan/planmodel.h"
#include "engine/plan/plansettings.h"

#include <cstdint>
#include <vector>

namespace engine::plan {

/// Costs per node of the flat tree, in bytes: each node's own (a parameter's state, a leaf module's saved
/// activations, LoRA on its Linear, the per-layer maxima on the block), not summed over subtrees.
struct NodeCosts {
    std::vector<int64_t> weights;     ///< base weights in the planned dtype (tied duplicates 0)
    std::vector<int64_t> lora;        ///< LoRA A + B, fp32
    std::vector<int64_t> gradients;   ///< of trainable parameters (LoRA's included)
    std::vector<int64_t> optimizer;   ///< AdamW moments (+ fp32 master weights for full 16-bit training)
    std::vector<int64_t> saved;       ///< activations saved for backward (with checkpointing: the block inputs)
    std::vector<int64_t> recompute;   ///< on blocks: the full saved set rebuilt during backward (checkpointing)
    std::vector<int64_t> working;     ///< on blocks: transient working set of one block's backward
    std::vector<int64_t> logitsForward;  ///< on the output head: logits + log-softmax kept for the loss
    std::vector<int64_t> logitsBackward; ///< on the output head: their gradients at the start of backward
    std::vector<int64_t> optimizerTemp;  ///< on parameters: AdamW step temporaries (2 x fp32 numel)
    std::vector<char> trainable;      ///< per parameter node: trained (full) or carries LoRA (lora)
    std::vector<char> loraTarget;     ///< per module node: a Linear that gets a LoRA adapter
    std::vector<char> block;          ///< per module node: a transformer block (no-split layer)
    int64_t activationBytes = 2;      ///< bytes per activation element (the compute dtype)
    int64_t weightBytes = 0;          ///< the planned weights' element size (0 = as stored)
    /// A node's own persistent training state plus its saved activations and logits.
    int64_t ownCost(int node) const;
    /// ownCost summed over each subtree: what the placement charges a node.
    std::vector<int64_t> placementSizes(const FlatTree &tree) const;
};

/// Computes the costs. `weightBytes` 0 keeps each tensor's dtype. Throws Error(InvalidInput) when a LoRA
/// target names no module of the model.
NodeCosts computeCosts(const FlatTree &tree, const PlanModel &model, const PlanSettings &settings,
                       int64_t weightBytes, const std::vector<char> &noSplit);

/// Bytes one block of a model planned from its tensor names (family "generic") saves for backward without
/// checkpointing, from the config's sizes: a pre-norm transformer layer (two norms, attention with
/// arch.kvHeads key/value heads, an MLP of arch.intermediate, gated when arch.gatedMlp); `full` when its
/// Linears are trained. 0 when arch has no hidden size or head count (the activations are then not counted).
int64_t genericBlockSavedBytes(const ArchInfo &arch, int64_t b, int64_t s, int64_t e, bool full);

/// Bytes a mixture-of-experts router (mixtral's, qwen3_moe's `mlp.gate`) saves for backward: B tokens, hidden h,
/// `experts` experts, top-k routing, activation element size e; `full` when its weight is trained.
int64_t moeRouterSavedBytes(int64_t B, int64_t h, int64_t experts, int64_t k, int64_t e, bool full);

/// Bytes a layer's experts (`mlp.experts`, each a SwiGLU MLP of width f) save for backward, as transformers' eager
/// experts loop runs them: every token is routed to k experts, so the experts together see k x B token rows
/// (k x B / experts each when balanced), whatever the balance. `full` when the experts and router are trained.
int64_t moeExpertsSavedBytes(int64_t B, int64_t h, int64_t f, int64_t k, int64_t e, bool full);

/// Each run of consecutive decoder layers with one attention window (arch.attentionWindows, from
/// LlamaConfig::attentionWindow; no windows = full attention), with its training scores and its generation KV
/// cache at settings.sequenceLength tokens and settings.batchSize sequences, activation element size e.
/// Empty when the architecture's layers, heads or head size are unknown.
std::vector<AttentionSpan> attentionSpans(const ArchInfo &arch, const PlanSettings &settings, int64_t e);

/// Bytes one LLaMA block saves for backward without checkpointing (see memorymodel.cpp), for docs and tests:
/// b sequences of s tokens, hidden h, a heads, g key/value heads, intermediate f, activation element size e,
/// full training.
int64_t llamaBlockSavedBytes(int64_t b, int64_t s, int64_t h, int64_t a, int64_t g, int64_t f, int64_t e);

} // namespace engine::plan
