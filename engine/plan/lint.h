#pragma once
// The lint over a plan plus its training settings: each cross-device pitfall a run would hit, with a
// stable id, a message and the fix. Torch-free.
//
// Ids: clip_grad_norm_across_devices, optimizer_trainable_only, no_redispatch, data_parallel_dispatched,
// bf16_unsupported, fp16_training_loss_scaling, lora_adapters_fp32, quantized_offload_training,
// balanced_low_0_training, labels_device, trainable_on_disk, tied_parameters_split, does_not_fit.

#include "engine/plan/flattree.h"
#include "engine/plan/memorymodel.h"
#include "engine/plan/plan.h"

#include <vector>

namespace engine::plan {

/// The findings for `plan`, given the per-node devices (indices into plan.devices) and costs.
std::vector<LintFinding> lintPlan(const Plan &plan, const FlatTree &tree, const NodeCosts &costs,
                                  const std::vector<int> &deviceOfNode);

} // namespace engine::plan
