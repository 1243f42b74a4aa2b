#include "engine/model/lora.h"

#include "engine/core/atomicfile.h"
#include "engine/core/error.h"
#include "engine/core/textutil.h"
#include "engine/io/safetensorsfile.h"
#include "engine/model/pretrained.h"

#include <torch/torch.h>

#include <nlohmann/json.hpp>

#include <cmath>
#include <set>

namespace engine::model {
namespace {

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
    // Modules that match but are no Linear (embeddings, norms, containers).
    std::vector<std::string> unsupported;
    bool anySave = settings.modulesToSave.empty();
    for (const auto &item : model->named_modules("", /*include_self=*/false)) {
        const std::string &name = item.key();
        if (!linear.count(name) && peftTargetMatches(name, settings))
            unsupported.push_back(name);
        anySave = anySave || isModuleToSave(name, settings);
    }
    if (!unsupported.empty()) {
        throw invalidSetting("lora.target_modules", describeTargets(settings) + " match modules that are not Linear layers: "
                           + joined(unsupported) + "; LoRA adapts " + joined(linearNames(model))
                           + " (train embeddings or norms in full with modules_to_save)");
    }
    if (adapted.empty()) {
        throw invalidSetting("lora.target_modules", describeTargets(settings) + " match no module of the model; its Linear modules are "
                           + joined(linearNames(model)) + " (e.g. model.layers.0.self_attn.q_proj)");
    }
    if (!anySave) {
        throw invalidSetting("lora.modules_to_save", "modules_to_save [" + joined(settings.modulesToSave)
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

namespace {

/// The adapter's live parameters under PEFT's names (A/B of each branch, then the modules_to_save
/// parameters), in file order: what is saved, and what a load must fill.
std::vector<std::pair<std::string, torch::Tensor>> adapterParameters(LlamaForCausalLM &model, const LoraSettings &settings)
{
    std::vector<std::pair<std::string, torch::Tensor>> parameters;
    for (const auto &site : model->linearSites()) {
        if (!site.lora->attached())
            continue;
        parameters.emplace_back(kPrefix + site.name + ".lora_A.weight", site.lora->a->weight);
        parameters.emplace_back(kPrefix + site.name + ".lora_B.weight", site.lora->b->weight);
    }
    for (const auto &item : model->named_modules("", /*include_self=*/false)) {
        if (!isModuleToSave(item.key(), settings))
            continue;
        for (const auto &parameter : item.value()->named_parameters(/*recurse=*/true))
            parameters.emplace_back(kPrefix + item.key() + "." + parameter.key(), parameter.value());
    }
    return parameters;
}

} // namespace

std::vector<std::pair<std::string, torch::Tensor>> peftAdapterTensors(LlamaForCausalLM &model,
                                                                       const LoraSettings &settings)
{
    std::vector<std::pair<std::string, torch::Tensor>> tensors = adapterParameters(model, settings);
    for (auto &item : tensors)
        item.second = item.second.detach().to(torch::kCPU);
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
    std::map<std::string, torch::Tensor> targets;
    for (auto &[name, parameter] : adapterParameters(model, settings))
        targets[name] = parameter;
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
