#include "engine/model/pretrained.h"

#include "engine/core/atomicfile.h"
#include "engine/core/error.h"
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
    try {
        config = nlohmann::json::parse(readFile(configPath));
    } catch (const nlohmann::json::exception &e) {
        throw invalidInput(configPath.string() + ": not valid JSON (" + e.what() + ")");
    }
    auto field = [&](const char *key) -> const nlohmann::json & {
        static const nlohmann::json null;
        auto it = config.find(key);
        return it == config.end() ? null : *it;
    };
    if (field("peft_type") != "LORA")
        throw invalidInput(configPath.string() + ": peft_type must be \"LORA\" (got " + field("peft_type").dump() + ")");
    if (!field("r").is_number_integer() || field("r").get<int64_t>() <= 0)
        throw invalidInput(configPath.string() + ": field 'r' must be a positive integer");
    if (!field("lora_alpha").is_number())
        throw invalidInput(configPath.string() + ": field 'lora_alpha' must be a number");
    if (field("use_dora").is_boolean() && field("use_dora").get<bool>())
        throw invalidInput(configPath.string() + ": use_dora is not supported");
    if (field("fan_in_fan_out").is_boolean() && field("fan_in_fan_out").get<bool>())
        throw invalidInput(configPath.string() + ": fan_in_fan_out is not supported (the model's Linear weights are [out, in])");
    if (!field("bias").is_null() && field("bias") != "none")
        throw invalidInput(configPath.string() + ": bias " + field("bias").dump() + " is not supported (only \"none\")");
    if (field("modules_to_save").is_array() && !field("modules_to_save").empty())
        throw invalidInput(configPath.string() + ": modules_to_save is not supported");
    // Per-module ranks or alphas would give some modules another scale than alpha / r.
    for (const char *pattern : {"rank_pattern", "alpha_pattern"}) {
        if (field(pattern).is_object() && !field(pattern).empty())
            throw invalidInput(configPath.string() + ": " + pattern + " is not supported");
    }
    const double r = static_cast<double>(field("r").get<int64_t>());
    const double alpha = field("lora_alpha").get<double>();
    const bool rslora = field("use_rslora").is_boolean() && field("use_rslora").get<bool>();
    const double scale = rslora ? alpha / std::sqrt(r) : alpha / r;

    const io::SafetensorsFile weights = io::SafetensorsFile::open(weightsPath);
    std::map<std::string, torch::Tensor> parameters;
    for (auto &item : model->named_parameters(true))
        parameters.emplace(item.key(), item.value());

    // base_model.model.<module>.lora_A.weight [r, in], ....lora_B.weight [out, r]
    static const std::regex key(R"(^base_model\.model\.(.+)\.lora_([AB])(?:\.[^.]+)?\.weight$)");
    std::map<std::string, std::pair<torch::Tensor, torch::Tensor>> pairs;
    for (const auto &info : weights.header().tensors) {
        std::smatch match;
        if (!std::regex_match(info.name, match, key))
            throw invalidInput(weightsPath.string() + ": tensor '" + info.name + "' is not a LoRA A/B weight");
        auto &slot = pairs[match[1].str()];
        (match[2] == "A" ? slot.first : slot.second) = weights.tensor(info.name, {.dtype = torch::kFloat32, .copy = true});
    }
    if (pairs.empty())
        throw invalidInput(weightsPath.string() + ": holds no LoRA weights");

    // Check every module before merging any, so that a refused adapter leaves the model unchanged.
    for (const auto &[module, ab] : pairs) {
        const auto &[a, b] = ab;
        if (!a.defined() || !b.defined())
            throw invalidInput(weightsPath.string() + ": module '" + module + "' has only one of lora_A and lora_B");
        auto it = parameters.find(module + ".weight");
        if (it == parameters.end())
            throw invalidInput(weightsPath.string() + ": module '" + module + "' is not in the model");
        torch::Tensor &w = it->second;
        if (a.dim() != 2 || b.dim() != 2 || a.size(0) != b.size(1) || b.size(0) != w.size(0) || a.size(1) != w.size(1)) {
            throw invalidInput(weightsPath.string() + ": module '" + module + "': lora_A " + shapeText(a.sizes())
                               + " and lora_B " + shapeText(b.sizes()) + " do not fit its weight " + shapeText(w.sizes()));
        }
        if (a.size(0) != static_cast<int64_t>(r)) {
            throw invalidInput(weightsPath.string() + ": module '" + module + "' has rank " + std::to_string(a.size(0))
                               + " but adapter_config.json gives r = " + std::to_string(static_cast<int64_t>(r)));
        }
    }
    torch::NoGradGuard noGrad;
    for (const auto &[module, ab] : pairs) {
        const auto &[a, b] = ab;
        torch::Tensor &w = parameters.at(module + ".weight");
        w.add_(torch::matmul(b, a).mul_(scale).to(w.scalar_type()));
    }
    return static_cast<int>(pairs.size());
}

} // namespace engine::model
