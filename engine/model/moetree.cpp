#include "engine/model/moetree.h"

#include "engine/core/error.h"
#include "engine/model/configfields.h"

#include <regex>

#include <nlohmann/json.hpp>

namespace engine::model {
namespace {

using nlohmann::json;
using configfields::checkRange;
using configfields::describe;
using configfields::fieldError;
using configfields::readInt;

constexpr int64_t kMaxExperts = 65'536;

// Each MoE architecture: its class prefix, the family whose attention it reuses (and that family's class
// prefix, renamed in the tree), and the config keys of its expert count and width.
struct MoeArchitecture {
    const char *modelType;
    const char *classPrefix;
    const char *denseType;
    const char *densePrefix;
    const char *expertsKey;
    const char *expertWidthKey;
    bool routerFirst; // the sparse block registers gate before experts
};

constexpr MoeArchitecture kArchitectures[] = {
    {"mixtral", "Mixtral", "mistral", "Mistral", "num_local_experts", "intermediate_size", true},
    {"qwen3_moe", "Qwen3Moe", "qwen3", "Qwen3", "num_experts", "moe_intermediate_size", false},
};

const MoeArchitecture *architectureOf(const std::string &modelType)
{
    for (const MoeArchitecture &a : kArchitectures) {
        if (modelType == a.modelType)
            return &a;
    }
    return nullptr;
}

void setDefault(json &object, const char *key, json value)
{
    if (!object.contains(key))
        object[key] = std::move(value);
}

// The config as the dense family's reader sees it: its model_type, and the MoE config class's defaults
// where they differ from that family's (MixtralConfig: rope_theta 1e6, no sliding window; Qwen3MoeConfig:
// smaller sizes, head_dim hidden / heads when absent).
json denseView(const json &config, const MoeArchitecture &arch)
{
    json dense = config;
    dense["model_type"] = arch.denseType;
    if (std::string(arch.modelType) == "mixtral") {
        setDefault(dense, "rope_theta", 1e6);
        setDefault(dense, "sliding_window", nullptr);
    } else {
        setDefault(dense, "hidden_size", 2048);
        setDefault(dense, "intermediate_size", 6144);
        setDefault(dense, "num_hidden_layers", 24);
        setDefault(dense, "num_attention_heads", 32);
        setDefault(dense, "num_key_value_heads", 4);
        if (!dense.contains("head_dim") || dense["head_dim"].is_null()) {
            const json &hidden = dense["hidden_size"], &heads = dense["num_attention_heads"];
            if (hidden.is_number_integer() && heads.is_number_integer() && heads.get<int64_t>() > 0)
                dense["head_dim"] = hidden.get<int64_t>() / heads.get<int64_t>();
        }
    }
    return dense;
}

void refuseNonZero(const json &config, const char *key, const std::string &source, const std::string &why)
{
    const auto it = config.find(key);
    if (it == config.end() || it->is_null())
        return;
    if (!it->is_number())
        throw fieldError(source, key, "must be a number, got " + describe(*it));
    if (it->get<double>() != 0.0)
        throw fieldError(source, key, "is " + it->dump() + ": " + why + " is not supported");
}

// Qwen3MoeDecoderLayer: experts unless the layer is in mlp_only_layers, or num_experts is 0, or
// (layer + 1) is not a multiple of decoder_sparse_step.
std::vector<char> qwen3SparseLayers(const json &config, int64_t layers, int64_t experts, const std::string &source)
{
    int64_t step = 1;
    readInt(config, "decoder_sparse_step", step, source);
    checkRange(source, "decoder_sparse_step", step, 1, configfields::kMaxLayers);
    std::vector<char> sparse(static_cast<size_t>(layers), 0);
    for (int64_t i = 0; i < layers; ++i)
        sparse[static_cast<size_t>(i)] = experts > 0 && (i + 1) % step == 0;
    const auto it = config.find("mlp_only_layers");
    if (it == config.end() || it->is_null())
        return sparse;
    if (!it->is_array())
        throw fieldError(source, "mlp_only_layers", "must be a list of layer indices, got " + describe(*it));
    for (const json &index : *it) {
        if (!index.is_number_integer() || index.get<int64_t>() < 0 || index.get<int64_t>() >= layers) {
            throw fieldError(source, "mlp_only_layers",
                             "holds " + index.dump() + ": each entry must be a layer index 0.." + std::to_string(layers - 1));
        }
        sparse[static_cast<size_t>(index.get<int64_t>())] = 0;
    }
    return sparse;
}

void markNoSplit(ModuleNode &node, const std::string &noSplitClass)
{
    node.noSplit = node.className == noSplitClass;
    for (ModuleNode &child : node.children)
        markNoSplit(child, noSplitClass);
}

// Renames the dense family's classes ("MistralAttention") to the MoE model's ("MixtralAttention").
void renameClasses(ModuleNode &node, const std::string &from, const std::string &to)
{
    if (node.className.rfind(from, 0) == 0)
        node.className = to + node.className.substr(from.size());
    for (ModuleNode &child : node.children)
        renameClasses(child, from, to);
}

ModuleNode parameterModule(const std::string &name, const std::string &className, const std::string &dtype,
                           std::vector<std::pair<std::string, std::vector<int64_t>>> parameters)
{
    ModuleNode node{name, className, {}, {}, false};
    for (auto &[local, shape] : parameters)
        node.parameters.push_back({local, std::move(shape), dtype, {}});
    return node;
}

// The sparse block that replaces a layer's dense MLP: the router and the experts as transformers 5 builds them.
ModuleNode sparseBlock(const MoeConfig &config, const MoeArchitecture &arch, const std::string &path,
                       const std::string &dtype)
{
    const int64_t e = config.numExperts, h = config.dense.hiddenSize, f = config.expertIntermediate;
    ModuleNode block{path, config.className("SparseMoeBlock"), {}, {}, false};
    ModuleNode router = parameterModule(path + ".gate", config.className("TopKRouter"), dtype, {{"weight", {e, h}}});
    ModuleNode experts = parameterModule(path + ".experts", config.className("Experts"), dtype,
                                         {{"gate_up_proj", {e, 2 * f, h}}, {"down_proj", {e, h, f}}});
    if (arch.routerFirst) {
        block.children.push_back(std::move(router));
        block.children.push_back(std::move(experts));
    } else {
        block.children.push_back(std::move(experts));
        block.children.push_back(std::move(router));
    }
    return block;
}

} // namespace

bool isMoeModelType(const std::string &modelType)
{
    return architectureOf(modelType) != nullptr;
}

bool MoeConfig::isSparse(int64_t layer) const
{
    return layer >= 0 && layer < static_cast<int64_t>(sparseLayers.size()) && sparseLayers[static_cast<size_t>(layer)];
}

std::string MoeConfig::className(const std::string &suffix) const
{
    const MoeArchitecture *arch = architectureOf(modelType);
    return std::string(arch ? arch->classPrefix : "Mixtral") + suffix;
}

MoeConfig MoeConfig::fromJson(const json &config, const std::string &source)
{
    if (!config.is_object())
        throw invalidInput(source + ": a model config must be a JSON object, got " + describe(config));
    const std::string type = configfields::stringOrEmpty(config, "model_type");
    const MoeArchitecture *arch = architectureOf(type);
    if (!arch)
        throw fieldError(source, "model_type", "is \"" + type + "\": not a mixture-of-experts model (mixtral, qwen3_moe)");

    MoeConfig out;
    out.modelType = type;
    const bool mixtral = type == "mixtral";
    if (!mixtral) {
        // Qwen3MoeConfig slides every layer when use_sliding_window is true; tunebench's attention is full.
        bool sliding = false;
        configfields::readBool(config, "use_sliding_window", sliding, source);
        if (sliding)
            throw fieldError(source, "use_sliding_window", "is true: Qwen3-MoE's sliding-window attention is not supported yet");
        // Qwen2-MoE's shared expert (a dense MLP beside the routed ones, with its own sigmoid gate); Qwen3-MoE
        // has none, so a config that sets one describes another architecture.
        refuseNonZero(config, "shared_expert_intermediate_size", source, "a shared expert (Qwen2-MoE's layout)");
    } else {
        refuseNonZero(config, "router_jitter_noise", source,
                      "the router's jitter noise (it multiplies each layer's input in training)");
    }
    out.dense = LlamaConfig::fromJson(denseView(config, *arch), source);
    out.dense.validate(source);

    out.numExperts = mixtral ? 8 : 128;
    out.expertsPerToken = mixtral ? 2 : 8;
    out.expertIntermediate = mixtral ? out.dense.intermediateSize : 768;
    readInt(config, arch->expertsKey, out.numExperts, source);
    readInt(config, "num_experts_per_tok", out.expertsPerToken, source);
    readInt(config, arch->expertWidthKey, out.expertIntermediate, source);
    checkRange(source, arch->expertsKey, out.numExperts, mixtral ? 1 : 0, kMaxExperts);
    if (out.numExperts > 0) // qwen3_moe with no experts is a dense model: top-k is never read
        checkRange(source, "num_experts_per_tok", out.expertsPerToken, 1, out.numExperts);
    checkRange(source, arch->expertWidthKey, out.expertIntermediate, 1, configfields::kMaxIntermediate);

    const int64_t layers = out.dense.numHiddenLayers;
    if (mixtral)
        out.sparseLayers.assign(static_cast<size_t>(layers), 1);
    else
        out.sparseLayers = qwen3SparseLayers(config, layers, out.numExperts, source);
    return out;
}

ModuleTree moeModuleTree(const MoeConfig &config, const std::string &dtype)
{
    const MoeArchitecture *arch = architectureOf(config.modelType);
    if (!arch)
        throw invalidInput("moeModuleTree: model_type \"" + config.modelType + "\" is not mixtral or qwen3_moe");
    ModuleTree tree = llamaModuleTree(config.dense, dtype);
    tree.modelType = config.modelType;
    renameClasses(tree.root, arch->densePrefix, arch->classPrefix);
    ModuleNode *layers = nullptr;
    for (ModuleNode &child : tree.root.children.front().children) {
        if (child.name == "model.layers")
            layers = &child;
    }
    for (size_t i = 0; layers && i < layers->children.size(); ++i) {
        if (!config.isSparse(static_cast<int64_t>(i)))
            continue;
        for (ModuleNode &child : layers->children[i].children) {
            if (child.name == layers->children[i].name + ".mlp")
                child = sparseBlock(config, *arch, child.name, dtype);
        }
    }
    tree.noSplitClasses = noSplitModuleClasses(config.modelType);
    markNoSplit(tree.root, config.className("DecoderLayer"));
    return tree;
}

std::optional<LegacyExpertTensor> legacyExpertTensor(const std::string &modelType, const std::string &name)
{
    // (prefix).block_sparse_moe.experts.N.w1.weight (mixtral), (prefix).mlp.experts.N.gate_proj.weight (qwen3_moe)
    static const std::regex mixtralExpert(R"((.*)\.block_sparse_moe\.experts\.(\d+)\.(w1|w2|w3)\.weight)");
    static const std::regex mixtralRouter(R"((.*)\.block_sparse_moe\.gate\.weight)");
    static const std::regex qwenExpert(R"((.*)\.mlp\.experts\.(\d+)\.(gate_proj|up_proj|down_proj)\.weight)");
    std::smatch m;
    if (modelType == "mixtral" && std::regex_match(name, m, mixtralRouter))
        return LegacyExpertTensor{m[1].str() + ".mlp.gate.weight", -1, ExpertPart::Whole};
    const bool mixtral = modelType == "mixtral" && std::regex_match(name, m, mixtralExpert);
    const bool qwen = !mixtral && modelType == "qwen3_moe" && std::regex_match(name, m, qwenExpert);
    if (!mixtral && !qwen)
        return std::nullopt;
    const std::string which = m[3].str();
    const ExpertPart part = (which == "w1" || which == "gate_proj") ? ExpertPart::Gate
        : (which == "w3" || which == "up_proj")                     ? ExpertPart::Up
                                                                    : ExpertPart::Down;
    const std::string fused = part == ExpertPart::Down ? "down_proj" : "gate_up_proj";
    return LegacyExpertTensor{m[1].str() + ".mlp.experts." + fused, std::stoll(m[2].str()), part};
}

} // namespace engine::model
