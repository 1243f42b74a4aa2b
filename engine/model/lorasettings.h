#pragma once
// LoRA settings with PEFT's meaning (adapter_config.json), and PEFT's rule for which modules they name.
// A plain value without torch: the CLI, the UI and the trainer's settings hold it; engine/model/lora.h
// attaches it to a model. Which modules an adapter targets follows PEFT's check_target_module_exists: a
// list names modules by their last name parts (a module matches when its full name equals an entry or
// ends with "." + entry); a string is a regular expression that must match the whole module name.

#include <cstdint>
#include <string>
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

} // namespace engine::model
