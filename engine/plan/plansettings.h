#pragma once
// What a plan is asked for: strategy, dtype, and the training run it must hold. Torch-free.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace engine::plan {

/// Accelerate's device_map strategies.
enum class Strategy { Auto, Balanced, BalancedLow0, Sequential };

/// What is trained.
enum class TrainMode { None, Lora, Full };

/// "auto", "balanced", "balanced_low_0", "sequential".
const char *strategyName(Strategy strategy);
/// Parses a strategy name; throws Error(InvalidInput) naming `what`.
Strategy parseStrategy(const std::string &text, const std::string &what);
/// "none", "lora", "full".
const char *trainModeName(TrainMode mode);
/// Parses a training mode; throws Error(InvalidInput) naming `what`.
TrainMode parseTrainMode(const std::string &text, const std::string &what);

/// Everything the planner needs besides the module tree and the devices.
struct PlanSettings {
    Strategy strategy = Strategy::Auto;
    /// no_split_module_classes; nothing = the architecture's decoder-layer class (the tree's).
    std::optional<std::vector<std::string>> noSplit;
    /// Weights dtype ("float16", "bfloat16", "float32"); empty = each tensor's own (config/checkpoint).
    std::string dtype;
    TrainMode train = TrainMode::None;
    int64_t loraRank = 8;
    /// LoRA alpha (the update is scaled by alpha / r); no effect on memory, carried for the exported
    /// script. `tunebench train`'s default (LoraSettings::alpha).
    double loraAlpha = 16;
    /// Module names (last component) LoRA adapts; empty = the architecture's attention projections.
    std::vector<std::string> loraTargets;
    /// LoRA dropout probability (`tunebench train`'s default, LoraSettings::dropout). Above 0 every adapted
    /// Linear keeps its own dropped input and dropout mask for backward (memorymodel.cpp).
    double loraDropout = 0.05;
    int64_t batchSize = 8;        ///< as `tunebench train`
    int64_t sequenceLength = 128; ///< as `tunebench train`
    bool checkpointing = false;   ///< gradient checkpointing of each decoder layer
    /// Quantized base weights ("", "int8", "nf4"), for the lint only.
    std::string quantization;
    /// The user intends data parallel (DDP / accelerator.prepare) over the dispatched model; lint only.
    bool dataParallel = false;
    /// Accelerate's fallback_allocation (AutoMapInput::fallbackAllocation).
    bool fallbackAllocation = false;
};

/// The LoRA targets used when none are given: q_proj,v_proj (llama family, PEFT's default),
/// query_key_value (chatglm), c_attn (gpt2), qkv_proj (phi3).
std::vector<std::string> defaultLoraTargets(const std::string &modelType);

} // namespace engine::plan
