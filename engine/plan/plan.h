#pragma once
// A plan is a value: where every module goes, what each device then holds (weights, gradients,
// optimizer state, activations, logits, LoRA, overhead), when its peak falls, a verdict per device,
// the lint findings, and an explanation per placement. The planner makes it, the editor (Plan page)
// edits it with Planner::move, the exporter and the dispatched loader read it. Torch-free.

#include "engine/plan/device.h"
#include "engine/plan/plansettings.h"

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace engine::plan {

/// When in a training step a device's memory peaks.
enum class Phase { Load, Forward, Backward, OptimizerStep };
/// "load", "forward", "backward", "optimizer_step".
const char *phaseName(Phase phase);

/// Bytes per kind on one device, at its peak.
struct MemoryBreakdown {
    int64_t weights = 0;     ///< base model weights in their dtype (frozen or trained)
    int64_t lora = 0;        ///< LoRA A/B weights (fp32)
    int64_t gradients = 0;   ///< of trainable parameters
    int64_t optimizer = 0;   ///< AdamW moments (2 x fp32) + fp32 master weights under mixed precision
    int64_t activations = 0; ///< saved for backward (+ one layer's recompute with checkpointing, + working set)
    int64_t logits = 0;      ///< logits, log-softmax and their gradients for the loss
    int64_t overhead = 0;    ///< runtime overhead (CUDA context, allocator), GPUs in training plans
    /// The sum.
    int64_t total() const { return weights + lora + gradients + optimizer + activations + logits + overhead; }
    bool operator==(const MemoryBreakdown &) const = default;
};

/// One device of the plan.
struct DeviceUsage {
    DeviceSpec device;
    MemoryBreakdown memory;  ///< at the peak phase
    Phase peakPhase = Phase::Load;
    int64_t peakBytes = 0;   ///< memory.total()
    int64_t forwardBytes = 0, backwardBytes = 0, optimizerBytes = 0; ///< per phase (training plans)
    bool fits = true;
    std::string verdict;     ///< "fits: 9.10 GiB of 15.00 GiB (peak in backward)" / "does not fit: ..."
};

/// One entry of the device map, Accelerate's coarsest names.
struct Placement {
    std::string module;      ///< "model.layers.14"; "" = the whole model
    std::string device;      ///< Accelerate's key: "0", "1", "cpu", "disk"
    std::string explanation; ///< "model.layers.14 -> cpu: GPU 1 has 0.80 GiB left, the layer needs ..."
    bool operator==(const Placement &) const = default;
};

/// One finding of the lint.
struct LintFinding {
    std::string id;       ///< stable: "clip_grad_norm_across_devices", ...
    std::string severity; ///< "error" (the run will fail) or "warning"
    std::string message;
    std::string fix;
    bool operator==(const LintFinding &) const = default;
};

/// Where and when the plan's tightest peak falls.
struct PlanPeak {
    std::string device;   ///< key of the device with the highest peak relative to its budget
    Phase phase = Phase::Load;
    int64_t bytes = 0;
};

/// The attention of a run of consecutive decoder layers that share one window, as the estimate assumes it:
/// eager attention (tunebench's engine, transformers' "eager"), which computes every query against every key
/// and masks what a window hides, so in training a local layer saves the same scores as a global one. What the
/// window does bound is the cache of keys and values a long generation needs.
struct AttentionSpan {
    int64_t firstLayer = 0;    ///< 0-based, inclusive
    int64_t lastLayer = 0;     ///< inclusive
    int64_t window = 0;        ///< LlamaConfig::attentionWindow of these layers; 0 = full attention
    int64_t scoresBytes = 0;   ///< per layer in training: the softmax kept for backward, (4 + e') x b x heads x T x T
    int64_t kvCacheTokens = 0; ///< tokens of keys and values a layer must keep at T = the sequence length: min(T, window)
    int64_t kvCacheBytes = 0;  ///< per layer and batch: 2 (k, v) x b x kvCacheTokens x kv heads x head_dim x e
    bool operator==(const AttentionSpan &) const = default;
};

/// What the plan's attention estimate assumes, one line: "attention at 8 x 4096 tokens (eager: ...)".
std::string attentionHeadline(const PlanSettings &settings);
/// One span, one line: "layers 0-31, window 4096: scores 3.00 GiB per layer (training), KV cache 4096 tokens:
/// 16.00 MiB per layer".
std::string attentionText(const AttentionSpan &span);
/// The note a plan with a window needs: tunebench generate's cache keeps every token. "" without a window.
std::string attentionCacheNote(const std::vector<AttentionSpan> &spans);

/// The whole plan.
struct Plan {
    std::vector<DeviceSpec> devices;    ///< as planned (disk appended when missing)
    PlanSettings settings;
    std::string modelType;
    std::vector<std::string> remoteCodeClasses; ///< PlanModel::remoteCodeClasses (auto_map keys)
    std::vector<std::string> noSplit;   ///< the classes used
    std::vector<Placement> deviceMap;   ///< in module order
    std::vector<DeviceUsage> usage;     ///< one per device, same order as `devices`
    PlanPeak peak;
    bool fits = true;                   ///< every device fits and the lint has no error
    bool memoryFits = true;             ///< every device fits (a lint error may still make the plan invalid)
    std::vector<LintFinding> lint;
    std::vector<std::string> warnings;  ///< e.g. the tree came from tensor names
    std::vector<std::string> minimums;  ///< "GPU 0 would need at least 1.20 GiB", for devices that got nothing
    std::vector<AttentionSpan> attention; ///< per run of layers with one window; empty when the sizes are unknown

    /// The device map as (module prefix, torch device "cuda:N" / "cpu" / "disk"), in module order, for
    /// the dispatched loader.
    std::vector<std::pair<std::string, std::string>> placements() const;
    /// The usage of the device with Accelerate key `key`, or nullptr.
    const DeviceUsage *usageOf(const std::string &key) const;
    /// The device key of a module (walks up to the map entry that holds it); "" if unplaced.
    std::string deviceOf(const std::string &module) const;
};

} // namespace engine::plan
