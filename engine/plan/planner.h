#pragma once
// The planner: a pure function from (module tree, devices, settings) to a Plan value, plus the cheap
// edits the Plan page makes on every drag. Torch-free, so ui/ can include it.
//
// How to use:
//   const Planner planner(planModelFromPath("/models/chatglm-6b"));     // flattens the tree once
//   PlanSettings settings;  settings.train = TrainMode::Lora;  settings.loraRank = 32;
//   Plan plan = planner.plan(parseMaxMemory("0=15GiB,1=15GiB,cpu=13GiB"), settings);
//   plan.fits; plan.usage[0].memory.activations; plan.lint; plan.deviceMap[3].explanation;
//   Plan edited = planner.move(plan, "transformer.layers.14", "cpu");  // re-sums devices, verdicts, lint
//
// Weights-only plans (TrainMode::None) are Accelerate's infer_auto_device_map (with get_balanced_memory
// for auto / balanced / balanced_low_0), entry for entry. Training plans place by the training cost of
// each module (weights, gradients, optimizer state, saved activations, logits) within each device's
// budget less its runtime overhead and the largest transient working set, with the same greedy walk
// but without Accelerate's reserve (tunebench computes each layer where it lives, so nothing is brought
// back to GPU 0). Layers on disk compute on the CPU.

#include "engine/plan/flattree.h"
#include "engine/plan/plan.h"
#include "engine/plan/planmodel.h"

#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace engine::plan {

/// Holds one model's flattened tree; plans and edits are const calls.
class Planner {
public:
    explicit Planner(PlanModel model);

    const PlanModel &model() const { return m_model; }
    /// The model's warnings for a plan with `settings`: what the tree guessed, and for training plans what the
    /// activation estimate assumes or leaves out.
    std::vector<std::string> modelWarnings(const PlanSettings &settings) const;
    const FlatTree &flatTree() const { return m_flat; }

    /// Plans `devices` (GPUs, then cpu, then disk, as parseMaxMemory gives them). Throws Error(InvalidInput)
    /// for a bad dtype, LoRA target, batch size, sequence length or rank.
    Plan plan(const std::vector<DeviceSpec> &devices, const PlanSettings &settings) const;

    /// Moves `module` (any module of the tree, or a map entry) to the device with Accelerate key `device`
    /// and recomputes the breakdown, verdicts, peak and lint. The map stays in Accelerate's cleaned form.
    /// Throws Error(InvalidInput) for an unknown module or device.
    Plan move(const Plan &plan, const std::string &module, const std::string &device) const;

    /// Recomputes everything derived from `plan.deviceMap` (after an import or an edit), and puts the model's
    /// warnings (modelWarnings) first where the plan lacks them. Throws
    /// Error(InvalidInput) when an entry names an unknown module or device, entries overlap, or a
    /// parameter is left unplaced.
    Plan revalidate(Plan plan) const;

private:
    PlanModel m_model;
    FlatTree m_flat;
};

/// Validates a settings value: dtype name, positive batch, length and rank. Throws Error(InvalidInput).
void checkSettings(const PlanSettings &settings);

/// Bytes per element of a planning dtype name ("" = 0 = as stored). Throws Error(InvalidInput).
int64_t planDtypeBytes(const std::string &dtype);

/// "GPU 0", "cpu", "disk".
std::string deviceLabel(const DeviceSpec &device);

} // namespace engine::plan
