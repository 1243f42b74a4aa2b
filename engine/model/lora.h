#pragma once
// LoRA on the LLaMA model with PEFT's semantics, for training, saving and reading adapters.
// Engine-internal (torch). Which modules an adapter targets follows PEFT's check_target_module_exists:
// a list names modules by their last name parts (a module matches when its full name equals an entry or
// ends with "." + entry); a string is a regular expression that must match the whole module name.
//
// How to use:
//   LoraSettings lora;  lora.r = 8;  lora.targets = {"q_proj", "v_proj"};
//   LoraAttachment attached = attachLora(model, lora);   // base frozen, A/B trainable (fp32)
//   ... train ...
//   savePeftAdapter(model, lora, "my-base-model", outFolder);   // adapter_config.json + adapter_model.safetensors
//   mergeLora(model);                                     // W += scale * B A; the branches are gone

#include "engine/model/llamamodel.h"
#include "engine/model/lorasettings.h"

#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace engine::model {

struct LoraAttachment {
    std::vector<std::string> adapted;     ///< full names of the Linear modules that got a branch
    std::vector<std::string> savedWhole;  ///< modules_to_save that are trained in full
    int64_t trainableParameters = 0;
};

/// The modules `settings` adapts, checked against the model: throws Error(InvalidInput) when the targets
/// match no module (listing the Linear modules that exist) or name a module that is not a Linear
/// (embeddings, norms), and when modules_to_save names no module.
std::vector<std::string> resolveLoraTargets(LlamaForCausalLM &model, const LoraSettings &settings);

/// Freezes every parameter, attaches a branch to each target (A ~ kaiming_uniform(a = sqrt 5) as PEFT's
/// default init, B = 0, both float32 on the base weight's device; A drawn from torch's default generator)
/// and makes modules_to_save trainable. The model computes exactly what it did until B changes.
LoraAttachment attachLora(LlamaForCausalLM &model, const LoraSettings &settings);

/// Whether any branch is attached.
bool hasLora(LlamaForCausalLM &model);

/// The adapter's tensors under PEFT's names, on the CPU: base_model.model.<module>.lora_A.weight /
/// lora_B.weight, and base_model.model.<module>.<param> for modules_to_save.
std::vector<std::pair<std::string, torch::Tensor>> peftAdapterTensors(LlamaForCausalLM &model,
                                                                       const LoraSettings &settings);

/// Writes adapter_config.json and adapter_model.safetensors into `folder` (created; each file atomic).
void savePeftAdapter(LlamaForCausalLM &model, const LoraSettings &settings, const std::string &baseModel,
                     const std::filesystem::path &folder);

/// Copies adapter tensors (PEFT names, as peftAdapterTensors gives) into an attached model. Every adapter
/// tensor of the model must be present with its shape; throws Error(InvalidInput) naming `source`.
void loadPeftAdapterTensors(LlamaForCausalLM &model, const LoraSettings &settings,
                            const std::map<std::string, torch::Tensor> &tensors, const std::string &source);

/// W += scale * B A in each adapted Linear (in W's dtype), then removes the branches. Returns how many.
int mergeLora(LlamaForCausalLM &model);

} // namespace engine::model
