#include "engine/model/lorasettings.h"

#include "engine/core/error.h"
#include "engine/core/textutil.h"

#include <nlohmann/json.hpp>

#include <cmath>
#include <regex>

namespace engine::model {
namespace {

// PEFT's list matching: the full name, or its last dotted parts.
bool listMatches(const std::string &name, const std::vector<std::string> &entries)
{
    for (const auto &entry : entries) {
        if (name == entry || name.ends_with("." + entry))
            return true;
    }
    return false;
}

} // namespace

double LoraSettings::scale() const
{
    const double rank = static_cast<double>(r);
    return rslora ? alpha / std::sqrt(rank) : alpha / rank;
}

void LoraSettings::validate() const
{
    if (r < 1 || r > 65536)
        throw invalidInput("LoRA rank r = " + std::to_string(r) + " is outside 1 .. 65536");
    if (!(alpha > 0) || !std::isfinite(alpha))
        throw invalidInput("LoRA alpha must be a positive number (got " + std::to_string(alpha) + ")");
    if (!(dropout >= 0 && dropout < 1))
        throw invalidInput("LoRA dropout must be in [0, 1) (got " + std::to_string(dropout) + ")");
    if (targetRegex.empty() && targets.empty())
        throw invalidInput("LoRA needs target modules (e.g. q_proj,v_proj, or a regex)");
    if (!targetRegex.empty()) {
        try {
            std::regex check(targetRegex);
        } catch (const std::regex_error &e) {
            throw invalidInput("LoRA target regex \"" + targetRegex + "\" does not compile: " + e.what());
        }
    }
}

void LoraSettings::setTargetsFromText(const std::string &text)
{
    targets.clear();
    targetRegex.clear();
    if (text.find_first_of("*+?()[]{}|^$\\") != std::string::npos) {
        targetRegex = text;
        return;
    }
    size_t pos = 0;
    while (pos <= text.size()) {
        size_t end = text.find(',', pos);
        if (end == std::string::npos)
            end = text.size();
        const std::string_view item = trimWhitespace(std::string_view(text).substr(pos, end - pos));
        if (!item.empty())
            targets.emplace_back(item);
        pos = end + 1;
    }
}

nlohmann::json LoraSettings::targetModulesJson() const
{
    return targetRegex.empty() ? nlohmann::json(targets) : nlohmann::json(targetRegex);
}

nlohmann::json LoraSettings::toPeftConfig(const std::string &baseModel) const
{
    return {{"peft_type", "LORA"},
            {"task_type", "CAUSAL_LM"},
            {"base_model_name_or_path", baseModel},
            {"r", r},
            {"lora_alpha", alpha},
            {"lora_dropout", dropout},
            {"target_modules", targetModulesJson()},
            {"bias", "none"},
            {"fan_in_fan_out", false},
            {"use_rslora", rslora},
            {"use_dora", false},
            {"init_lora_weights", true},
            {"inference_mode", true},
            {"modules_to_save", modulesToSave.empty() ? nlohmann::json(nullptr) : nlohmann::json(modulesToSave)},
            {"rank_pattern", nlohmann::json::object()},
            {"alpha_pattern", nlohmann::json::object()},
            {"layers_to_transform", nullptr},
            {"revision", nullptr}};
}

LoraSettings LoraSettings::fromPeftConfig(const nlohmann::json &config, const std::string &source)
{
    auto field = [&](const char *key) -> const nlohmann::json & {
        static const nlohmann::json null;
        auto it = config.find(key);
        return it == config.end() ? null : *it;
    };
    auto isTrue = [&](const char *key) { return field(key).is_boolean() && field(key).get<bool>(); };
    if (!config.is_object())
        throw invalidInput(source + ": not a JSON object");
    if (field("peft_type") != "LORA")
        throw invalidInput(source + ": peft_type must be \"LORA\" (got " + field("peft_type").dump() + ")");
    if (!field("r").is_number_integer() || field("r").get<int64_t>() <= 0)
        throw invalidInput(source + ": field 'r' must be a positive integer");
    if (!field("lora_alpha").is_number())
        throw invalidInput(source + ": field 'lora_alpha' must be a number");
    if (isTrue("use_dora"))
        throw invalidInput(source + ": use_dora is not supported");
    if (isTrue("fan_in_fan_out"))
        throw invalidInput(source + ": fan_in_fan_out is not supported (the model's Linear weights are [out, in])");
    if (!field("bias").is_null() && field("bias") != "none")
        throw invalidInput(source + ": bias " + field("bias").dump() + " is not supported (only \"none\")");
    // Per-module ranks or alphas would give some modules another scale than alpha / r.
    for (const char *key : {"rank_pattern", "alpha_pattern"}) {
        if (field(key).is_object() && !field(key).empty())
            throw invalidInput(source + ": " + key + " is not supported");
    }
    if (!field("layers_to_transform").is_null())
        throw invalidInput(source + ": layers_to_transform is not supported");

    LoraSettings settings;
    settings.r = field("r").get<int64_t>();
    settings.alpha = field("lora_alpha").get<double>();
    settings.dropout = field("lora_dropout").is_number() ? field("lora_dropout").get<double>() : 0.0;
    settings.rslora = isTrue("use_rslora");
    const nlohmann::json &targets = field("target_modules");
    settings.targets.clear();
    if (targets.is_string()) {
        settings.targetRegex = targets.get<std::string>();
    } else if (targets.is_array()) {
        for (const auto &item : targets) {
            if (!item.is_string())
                throw invalidInput(source + ": target_modules must hold module names (strings)");
            settings.targets.push_back(item.get<std::string>());
        }
    } else {
        throw invalidInput(source + ": target_modules must be a list of module names or a regex string");
    }
    if (const nlohmann::json &save = field("modules_to_save"); save.is_array()) {
        for (const auto &item : save) {
            if (!item.is_string())
                throw invalidInput(source + ": modules_to_save must hold module names (strings)");
            settings.modulesToSave.push_back(item.get<std::string>());
        }
    } else if (!save.is_null()) {
        throw invalidInput(source + ": modules_to_save must be a list of module names");
    }
    try {
        settings.validate();
    } catch (const Error &e) {
        throw invalidInput(source + ": " + e.what());
    }
    return settings;
}

bool peftTargetMatches(const std::string &name, const LoraSettings &settings)
{
    if (!settings.targetRegex.empty())
        return std::regex_match(name, std::regex(settings.targetRegex));
    return listMatches(name, settings.targets);
}

bool isModuleToSave(const std::string &name, const LoraSettings &settings)
{
    return listMatches(name, settings.modulesToSave);
}

} // namespace engine::model
