#include "engine/model/pretrained.h"

#include "engine/core/jsonnesting.h"
#include "engine/model/lora.h"

#include "engine/core/atomicfile.h"
#include "engine/core/error.h"
#include "engine/core/textutil.h"
#include "engine/io/pytorchbin.h"
#include "engine/io/safetensorsfile.h"
#include "engine/io/shardindex.h"
#include "engine/io/shardindexio.h"

#include <nlohmann/json.hpp>
#include <torch/torch.h>

#include <cmath>
#include <map>
#include <regex>
#include <set>

namespace engine::model {
namespace fs = std::filesystem;
namespace {

bool hasSafetensors(const fs::path &folder)
{
    std::error_code ec;
    return fs::exists(folder / io::kSafetensorsWeightsName, ec) || fs::exists(folder / io::kSafetensorsIndexName, ec);
}

bool hasPytorchBin(const fs::path &folder)
{
    std::error_code ec;
    return fs::exists(folder / io::kPytorchBinName, ec) || fs::exists(folder / io::kPytorchBinIndexName, ec);
}

} // namespace

std::string shapeText(c10::IntArrayRef shape)
{
    std::string text = "[";
    for (size_t i = 0; i < shape.size(); ++i)
        text += (i ? ", " : "") + std::to_string(shape[i]);
    return text + "]";
}

bool isIgnorableCheckpointTensor(const std::string &name, const LlamaConfig &config)
{
    // Non-persistent buffers that older transformers versions saved.
    if (name.size() > 29 && name.ends_with("self_attn.rotary_emb.inv_freq"))
        return true;
    // A tied model's lm_head (some writers keep the duplicate).
    return config.tieWordEmbeddings && name == "lm_head.weight";
}

bool holdsWeights(const fs::path &folder) { return hasSafetensors(folder) || hasPytorchBin(folder); }

LlamaForCausalLM loadPretrained(const fs::path &folder, const LoadOptions &options)
{
    std::error_code ec;
    if (!fs::is_directory(folder, ec))
        throw ioError(folder.string() + ": not a model folder (expected a folder with config.json and weights)");
    const LlamaConfig config = LlamaConfig::fromFile(folder);
    LlamaForCausalLM model(config);
    model->to(options.dtype);

    std::map<std::string, torch::Tensor> parameters;
    for (auto &item : model->named_parameters(true))
        parameters.emplace(item.key(), item.value());
    std::set<std::string> loaded;
    std::string weightsName;

    torch::NoGradGuard noGrad;
    auto assign = [&](const std::string &name, const torch::Tensor &tensor) {
        auto it = parameters.find(name);
        if (it == parameters.end()) {
            if (isIgnorableCheckpointTensor(name, config))
                return;
            throw invalidInput(weightsName + ": tensor '" + name + "' is not a parameter of this " + config.modelType
                               + " model (config.json and weights disagree)");
        }
        if (it->second.sizes() != tensor.sizes()) {
            throw invalidInput(weightsName + ": tensor '" + name + "' has shape " + shapeText(tensor.sizes())
                               + " but config.json gives " + shapeText(it->second.sizes()));
        }
        if (!loaded.insert(name).second)
            throw invalidInput(weightsName + ": tensor '" + name + "' appears twice");
        it->second.copy_(tensor);
    };

    if (hasSafetensors(folder)) {
        const io::CheckpointFiles files = io::locateCheckpoint(folder);
        weightsName = (files.index ? *files.index : files.shards.front()).string();
        io::forEachCheckpointTensor(folder, {}, assign);
    } else if (hasPytorchBin(folder)) {
        weightsName = (folder / io::kPytorchBinName).string();
        for (const auto &[name, tensor] : io::loadPytorchBin(folder))
            assign(name, tensor.to(options.dtype));
    } else {
        throw ioError(folder.string() + ": no weights found (expected model.safetensors, "
                      "model.safetensors.index.json or pytorch_model.bin)");
    }

    for (const auto &[name, tensor] : parameters) {
        if (!loaded.count(name))
            throw invalidInput(weightsName + ": parameter '" + name + "' is missing");
    }
    return model;
}

void savePretrained(LlamaForCausalLM &model, const fs::path &folder, std::uint64_t maxShardBytes)
{
    if (hasLora(model))
        throw Error(ErrorKind::Internal, "savePretrained: the model has LoRA branches attached; merge them first");
    nlohmann::json config = model->config().toJson(); // architectures: LlamaForCausalLM, Qwen2ForCausalLM, ...
    const auto dtype = model->parameters().front().scalar_type();
    config["torch_dtype"] = dtype == torch::kBFloat16 ? "bfloat16" : dtype == torch::kHalf ? "float16" : "float32";

    std::vector<std::pair<std::string, torch::Tensor>> tensors;
    for (auto &item : model->named_parameters(true))
        tensors.emplace_back(item.key(), item.value().detach().to(torch::kCPU)); // no copy on the CPU
    std::error_code ec;
    fs::create_directories(folder, ec);
    if (ec)
        throw ioError("cannot create " + folder.string() + ": " + ec.message());
    io::writeShardedSafetensors(folder, tensors, maxShardBytes);
    writeFileAtomically(folder / "config.json", config.dump(2) + "\n");
}

int applyPeftLoraAdapter(LlamaForCausalLM &model, const fs::path &adapterFolder)
{
    const fs::path configPath = adapterFolder / "adapter_config.json";
    const fs::path weightsPath = adapterFolder / "adapter_model.safetensors";
    nlohmann::json config;
    const std::string configText = readFile(configPath);
    checkJsonNesting(configText, configPath.string());
    try {
        config = nlohmann::json::parse(configText);
    } catch (const nlohmann::json::exception &e) {
        throw invalidInput(configPath.string() + ": not valid JSON (" + e.what() + ")");
    }
    const LoraSettings settings = LoraSettings::fromPeftConfig(config, configPath.string());
    // The modules PEFT adapts: target_modules that match nothing are refused, as PEFT refuses them.
    std::set<std::string> targets;
    try {
        for (auto &name : resolveLoraTargets(model, settings))
            targets.insert(std::move(name));
    } catch (const Error &e) {
        throw invalidInput(configPath.string() + ": " + e.what());
    }

    const io::SafetensorsFile weights = io::SafetensorsFile::open(weightsPath);
    std::map<std::string, torch::Tensor> parameters;
    for (auto &item : model->named_parameters(true))
        parameters.emplace(item.key(), item.value());
    std::map<std::string, std::string> savedParameters; // parameter -> its modules_to_save module
    for (const auto &item : model->named_modules("", false)) {
        if (!isModuleToSave(item.key(), settings))
            continue;
        for (const auto &parameter : item.value()->named_parameters(true))
            savedParameters.emplace(item.key() + "." + parameter.key(), item.key());
    }

    // base_model.model.<module>.lora_A.weight [r, in], ....lora_B.weight [out, r]; modules_to_save as
    // base_model.model.<module>.<parameter>.
    static const std::regex key(R"(^base_model\.model\.(.+)\.lora_([AB])(?:\.[^.]+)?\.weight$)");
    std::map<std::string, std::pair<torch::Tensor, torch::Tensor>> pairs;
    std::map<std::string, torch::Tensor> saved;
    std::vector<std::string> untargeted;
    for (const auto &info : weights.header().tensors) {
        std::smatch match;
        const bool prefixed = info.name.rfind("base_model.model.", 0) == 0;
        const std::string local = prefixed ? info.name.substr(17) : info.name;
        if (std::regex_match(info.name, match, key)) {
            const std::string module = match[1].str();
            if (!targets.count(module)) {
                if (untargeted.empty() || untargeted.back() != module)
                    untargeted.push_back(module);
                continue;
            }
            auto &slot = pairs[module];
            (match[2] == "A" ? slot.first : slot.second) = weights.tensor(info.name, {.dtype = torch::kFloat32, .copy = true});
        } else if (prefixed && savedParameters.count(local)) {
            saved[local] = weights.tensor(info.name, {.dtype = torch::kFloat32, .copy = true});
        } else {
            throw invalidInput(weightsPath.string() + ": tensor '" + info.name
                               + "' is neither a LoRA A/B weight nor a parameter of a module in modules_to_save");
        }
    }
    if (!untargeted.empty()) {
        throw invalidInput(weightsPath.string() + ": holds LoRA weights for modules that target_modules "
                           + settings.targetModulesJson().dump() + " does not name (PEFT never applies them): "
                           + joined(untargeted));
    }
    if (pairs.empty())
        throw invalidInput(weightsPath.string() + ": holds no LoRA weights");

    // Check every module before merging any, so that a refused adapter leaves the model unchanged.
    for (const auto &[module, ab] : pairs) {
        const auto &[a, b] = ab;
        if (!a.defined() || !b.defined())
            throw invalidInput(weightsPath.string() + ": module '" + module + "' has only one of lora_A and lora_B");
        const torch::Tensor &w = parameters.at(module + ".weight");
        if (a.dim() != 2 || b.dim() != 2 || a.size(0) != b.size(1) || b.size(0) != w.size(0) || a.size(1) != w.size(1)) {
            throw invalidInput(weightsPath.string() + ": module '" + module + "': lora_A " + shapeText(a.sizes())
                               + " and lora_B " + shapeText(b.sizes()) + " do not fit its weight " + shapeText(w.sizes()));
        }
        if (a.size(0) != settings.r) {
            throw invalidInput(weightsPath.string() + ": module '" + module + "' has rank " + std::to_string(a.size(0))
                               + " but adapter_config.json gives r = " + std::to_string(settings.r));
        }
    }
    for (const auto &[name, tensor] : saved) {
        const torch::Tensor &p = parameters.at(name);
        if (tensor.sizes() != p.sizes())
            throw invalidInput(weightsPath.string() + ": '" + name + "' (modules_to_save) has shape "
                               + shapeText(tensor.sizes()) + ", the model's is " + shapeText(p.sizes()));
    }
    torch::NoGradGuard noGrad;
    const double scale = settings.scale();
    for (const auto &[module, ab] : pairs) {
        const auto &[a, b] = ab;
        torch::Tensor &w = parameters.at(module + ".weight");
        w.add_(torch::matmul(b, a).mul_(scale).to(w.device(), w.scalar_type()));
    }
    for (const auto &[name, tensor] : saved)
        parameters.at(name).copy_(tensor);
    return static_cast<int>(pairs.size());
}

} // namespace engine::model
