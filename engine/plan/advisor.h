#pragma once
// The advisor: when a training plan does not fit, the nearest plans that do, searched over what
// tunebench can train (LoRA instead of full fine-tuning, a smaller LoRA rank, gradient checkpointing, a
// smaller batch with accumulation to keep the effective batch, a shorter sequence, bf16); when it fits,
// the largest batch that fits. Each piece of advice is a set of `tunebench plan` flags (names without
// their dashes) with the plan they give: re-planning with those flags gives that very plan. Torch-free.
//
// How to use:
//   const std::vector<Advice> advice = advise(planner, devices, settings);
//   advice[0].changes   // {"train": "lora", "checkpointing": true}
//   advice[0].plan.peak // the plan those flags give
//   PlanSettings tried = withChanges(settings, advice[0].changes);

#include "engine/plan/planner.h"

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace engine::plan {

/// One suggestion.
struct Advice {
    nlohmann::ordered_json changes; ///< flag (no dashes) -> value: "train", "lora-r", "checkpointing", "batch-size", "seq-len", "dtype"
    Plan plan;                      ///< the plan with those changes
    std::string why;                ///< what it changes and what it costs
    int cost = 0;                   ///< the advisor's ordering: lower is nearer to what was asked
};

/// At most `limit` suggestions, nearest first. A plan that does not fit gets the fitting plans nearest to it
/// (none when nothing tunebench can change makes it fit); a plan that fits gets the largest batch that
/// fits, when that is larger than the batch asked for. Weights-only plans get no advice.
std::vector<Advice> advise(const Planner &planner, const std::vector<DeviceSpec> &devices, const PlanSettings &settings,
                           size_t limit = 5);

/// `settings` with `changes` applied (the flags' meaning, as `tunebench plan` reads them). Throws
/// Error(InvalidInput) naming an unknown flag or a bad value.
PlanSettings withChanges(PlanSettings settings, const nlohmann::ordered_json &changes);

} // namespace engine::plan
