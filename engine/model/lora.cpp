#include "engine/model/lora.h"

#include "engine/core/atomicfile.h"
#include "engine/core/error.h"
#include "engine/io/safetensorsfile.h"
#include "engine/model/pretrained.h"

#include <torch/torch.h>

#include <nlohmann/json.hpp>

#include <cmath>
#include <regex>
#include <set>

namespace engine::model {
namespace {

bool endsWith(const std::string &text, const std::string &suffix)
{
    return text.size() >= suffix.size() && text.compare(text.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// PEFT's list matching: the full name, or its last dotted parts.
bool listMatches(const std::string &name, const std::vector<std::string> &entries)
{
    for (const auto &entry : entries) {
        if (name == entry || endsWith(name, "." + entry))
            return true;
    }
    return false;
}

std::string joined(const std::vector<std::string> &items, const std::string &separator = ", ")
{
    std::string text;
    for (const auto &item : items)
        text += (text.empty() ? "" : separator) + item;
    return text;
}

std::string lastPart(const std::string &name)
{
    const size_t dot = name.rfind('.');
    return dot == std::string::npos ? name : name.substr(dot + 1);
}

std::string describeTargets(const LoraSettings &settings)
{
    return settings.targetRegex.empty() ? "target_modules [" + joined(settings.targets) + "]"
                                        : "target_modules regex \"" + settings.targetRegex + "\"";
}

std::vector<std::string> linearNames(LlamaForCausalLM &model)
{
    std::vector<std::string> names;
    std::set<std::string> seen;
    for (const auto &site : model->linearSites()) {
        if (seen.insert(lastPart(site.name)).second)
            names.push_back(lastPart(site.name));
    }
    return names;
}

const std::string kPrefix = "base_model.model.";

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
        std::string item = text.substr(pos, end - pos);
        item.erase(0, item.find_first_not_of(" \t"));
        item.erase(item.find_last_not_of(" \t") + 1);
        if (!item.empty())
            targets.push_back(item);
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

std::vector<std::string> resolveLoraTargets(LlamaForCausalLM &model, const LoraSettings &settings)
{
    settings.validate();
    std::set<std::string> linear;
    std::vector<std::string> adapted;
    for (const auto &site : model->linearSites()) {
        linear.insert(site.name);
        if (peftTargetMatches(site.name, settings))
            adapted.push_back(site.name);
    }
    // Modules that match but are no decoder Linear (embeddings, lm_head, norms, containers).
    std::vector<std::string> unsupported;
    bool anySave = settings.modulesToSave.empty();
    for (const auto &item : model->named_modules("", /*include_self=*/false)) {
        const std::string &name = item.key();
        if (!linear.count(name) && peftTargetMatches(name, settings))
            unsupported.push_back(name);
        anySave = anySave || isModuleToSave(name, settings);
    }
    if (!unsupported.empty()) {
        throw invalidInput(describeTargets(settings) + " match modules that are not decoder Linear layers: "
                           + joined(unsupported) + "; LoRA adapts " + joined(linearNames(model))
                           + " (train embeddings or lm_head in full with modules_to_save)");
    }
    if (adapted.empty()) {
        throw invalidInput(describeTargets(settings) + " match no module of the model; its Linear modules are "
                           + joined(linearNames(model)) + " (in every layer, e.g. model.layers.0.self_attn.q_proj)");
    }
    if (!anySave) {
        throw invalidInput("modules_to_save [" + joined(settings.modulesToSave)
                           + "] names no module of the model (e.g. lm_head, model.embed_tokens, model.norm)");
    }
    return adapted;
}

LoraAttachment attachLora(LlamaForCausalLM &model, const LoraSettings &settings)
{
    const std::vector<std::string> targets = resolveLoraTargets(model, settings);
    if (hasLora(model))
        throw invalidInput("the model already has LoRA branches attached");
    LoraAttachment attachment;
    for (auto &parameter : model->parameters())
        parameter.set_requires_grad(false);
    for (auto &site : model->linearSites()) {
        if (!peftTargetMatches(site.name, settings))
            continue;
        const torch::Tensor &weight = site.linear->weight;
        const int64_t out = weight.size(0);
        const int64_t in = weight.size(1);
        const auto options = torch::TensorOptions().dtype(torch::kFloat32).device(weight.device());
        torch::nn::Linear a(torch::nn::LinearOptions(in, settings.r).bias(false));
        torch::nn::Linear b(torch::nn::LinearOptions(settings.r, out).bias(false));
        {
            torch::NoGradGuard noGrad;
            // Drawn on the CPU so that a seed gives the same adapter on every device.
            torch::Tensor init = torch::empty({settings.r, in}, torch::kFloat32);
            torch::nn::init::kaiming_uniform_(init, std::sqrt(5.0));
            a->weight.set_data(init.to(options));
            b->weight.set_data(torch::zeros({out, settings.r}, options));
        }
        site.linear->register_module("lora_A", a);
        site.linear->register_module("lora_B", b);
        *site.lora = LoraBranch{a, b, settings.scale(), settings.dropout};
        attachment.adapted.push_back(site.name);
        attachment.trainableParameters += settings.r * (in + out);
    }
    for (const auto &item : model->named_modules("", /*include_self=*/false)) {
        if (!isModuleToSave(item.key(), settings))
            continue;
        attachment.savedWhole.push_back(item.key());
        for (auto &parameter : item.value()->parameters()) {
            parameter.set_requires_grad(true);
            attachment.trainableParameters += parameter.numel();
        }
    }
    return attachment;
}

bool hasLora(LlamaForCausalLM &model)
{
    for (const auto &site : model->linearSites()) {
        if (site.lora->attached())
            return true;
    }
    return false;
}

std::vector<std::pair<std::string, torch::Tensor>> peftAdapterTensors(LlamaForCausalLM &model,
                                                                       const LoraSettings &settings)
{
    std::vector<std::pair<std::string, torch::Tensor>> tensors;
    for (const auto &site : model->linearSites()) {
        if (!site.lora->attached())
            continue;
        tensors.emplace_back(kPrefix + site.name + ".lora_A.weight", site.lora->a->weight.detach().to(torch::kCPU));
        tensors.emplace_back(kPrefix + site.name + ".lora_B.weight", site.lora->b->weight.detach().to(torch::kCPU));
    }
    for (const auto &item : model->named_modules("", /*include_self=*/false)) {
        if (!isModuleToSave(item.key(), settings))
            continue;
        for (const auto &parameter : item.value()->named_parameters(/*recurse=*/true))
            tensors.emplace_back(kPrefix + item.key() + "." + parameter.key(), parameter.value().detach().to(torch::kCPU));
    }
    return tensors;
}

void savePeftAdapter(LlamaForCausalLM &model, const LoraSettings &settings, const std::string &baseModel,
                     const std::filesystem::path &folder)
{
    std::error_code ec;
    std::filesystem::create_directories(folder, ec);
    if (ec)
        throw ioError("cannot create " + folder.string() + ": " + ec.message());
    io::writeSafetensors(folder / "adapter_model.safetensors", peftAdapterTensors(model, settings),
                         {{"format", "pt"}});
    writeFileAtomically(folder / "adapter_config.json", settings.toPeftConfig(baseModel).dump(2) + "\n");
}

void loadPeftAdapterTensors(LlamaForCausalLM &model, const LoraSettings &settings,
                            const std::map<std::string, torch::Tensor> &tensors, const std::string &source)
{
    const auto expected = peftAdapterTensors(model, settings);
    std::map<std::string, torch::Tensor> targets;
    for (const auto &site : model->linearSites()) {
        if (!site.lora->attached())
            continue;
        targets[kPrefix + site.name + ".lora_A.weight"] = site.lora->a->weight;
        targets[kPrefix + site.name + ".lora_B.weight"] = site.lora->b->weight;
    }
    for (const auto &item : model->named_modules("", false)) {
        if (!isModuleToSave(item.key(), settings))
            continue;
        for (const auto &parameter : item.value()->named_parameters(true))
            targets[kPrefix + item.key() + "." + parameter.key()] = parameter.value();
    }
    for (const auto &[name, target] : targets) {
        auto it = tensors.find(name);
        if (it == tensors.end())
            throw invalidInput(source + ": tensor '" + name + "' is missing");
        if (it->second.sizes() != target.sizes())
            throw invalidInput(source + ": tensor '" + name + "' has shape " + shapeText(it->second.sizes())
                               + ", the model's is " + shapeText(target.sizes()));
    }
    for (const auto &[name, tensor] : tensors) {
        if (!targets.count(name))
            throw invalidInput(source + ": tensor '" + name + "' belongs to no adapted module of the model");
    }
    torch::NoGradGuard noGrad;
    for (auto &[name, target] : targets)
        target.copy_(tensors.at(name));
}

int mergeLora(LlamaForCausalLM &model)
{
    torch::NoGradGuard noGrad;
    int merged = 0;
    for (auto &site : model->linearSites()) {
        LoraBranch &lora = *site.lora;
        if (!lora.attached())
            continue;
        torch::Tensor &weight = site.linear->weight;
        const torch::Tensor delta = torch::matmul(lora.b->weight.to(torch::kFloat32), lora.a->weight.to(torch::kFloat32)) * lora.scale;
        weight.add_(delta.to(weight.device(), weight.scalar_type()));
        site.linear->unregister_module("lora_A");
        site.linear->unregister_module("lora_B");
        lora = LoraBranch{};
        ++merged;
    }
    return merged;
}

} // namespace engine::model
