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

#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace engine::model {

struct LoraSettings {
    int64_t r = 8;
    double alpha = 16;
    double dropout = 0.05;
    bool rslora = false; ///< scale alpha / sqrt(r) instead of alpha / r
    /// PEFT's target_modules as a list: "q_proj" matches model.layers.0.self_attn.q_proj.
    std::vector<std::string> targets = {"q_proj", "v_proj"};
    /// PEFT's target_modules as a string: a regex over the whole module name. Used when not empty.
    std::string targetRegex;
    /// PEFT's modules_to_save: modules trained in full and saved whole in the adapter (e.g. "lm_head").
    std::vector<std::string> modulesToSave;

    /// alpha / r, or alpha / sqrt(r) with rsLoRA.
    double scale() const;
    /// Throws Error(InvalidInput) naming the first bad setting (r >= 1, alpha > 0, 0 <= dropout < 1,
    /// a regex that compiles, targets not empty).
    void validate() const;
    /// "q_proj,v_proj" as a list; anything with regex syntax (e.g. ".*\.(q|v)_proj") as a regex.
    void setTargetsFromText(const std::string &text);
    /// The targets as PEFT writes them: a list, or the regex string.
    nlohmann::json targetModulesJson() const;
    /// adapter_config.json as PEFT's LoraConfig.save_pretrained writes it.
    nlohmann::json toPeftConfig(const std::string &baseModel) const;
    /// Reads adapter_config.json. Refuses by name what tunebench cannot apply exactly: another peft_type,
    /// DoRA, fan_in_fan_out, biases other than "none", rank_pattern / alpha_pattern, layers_to_transform.
    static LoraSettings fromPeftConfig(const nlohmann::json &config, const std::string &source);
};

/// Whether PEFT would adapt module `name` (a full module name) under `settings`' target_modules.
bool peftTargetMatches(const std::string &name, const LoraSettings &settings);
/// Whether `name` is one of modules_to_save (the same list matching as target_modules).
bool isModuleToSave(const std::string &name, const LoraSettings &settings);

struct LoraAttachment {
    std::vector<std::string> adapted;     ///< full names of the Linear modules that got a branch
    std::vector<std::string> savedWhole;  ///< modules_to_save that are trained in full
    int64_t trainableParameters = 0;
};

/// The modules `settings` adapts, checked against the model: throws Error(InvalidInput) when the targets
/// match no module (listing the Linear modules that exist) or name a module LoRA cannot adapt here
/// (embeddings, lm_head), and when modules_to_save names no module.
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
