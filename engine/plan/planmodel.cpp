#include "engine/plan/planmodel.h"

#include "engine/core/error.h"
#include "engine/io/safetensorsheader.h"
#include "engine/io/shardindex.h"
#include "engine/model/configfields.h"
#include "engine/model/llamaconfig.h"
#include "engine/model/moetree.h"

#include <algorithm>
#include <map>
#include <set>

#include <nlohmann/json.hpp>

namespace engine::plan {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

int64_t intField(const json &config, std::initializer_list<const char *> keys, int64_t fallback)
{
    for (const char *key : keys) {
        const auto it = config.find(key);
        if (it != config.end() && it->is_number_integer() && it->get<int64_t>() > 0)
            return it->get<int64_t>();
    }
    return fallback;
}

// Shapes from the tree (exact) and head counts from the config.
ArchInfo archInfo(const model::ModuleTree &tree, const json &config)
{
    ArchInfo a;
    const auto shapeOf = [&](const std::string &param) -> std::vector<int64_t> {
        const size_t dot = param.rfind('.');
        const model::ModuleNode *m = tree.find(param.substr(0, dot));
        if (!m)
            return {};
        for (const model::ParameterInfo &p : m->parameters) {
            if (p.name == param.substr(dot + 1))
                return p.shape;
        }
        return {};
    };
    const bool moe = model::isMoeModelType(tree.modelType);
    if (model::isLlamaFamily(tree.modelType) || moe) {
        a.family = "llama";
        const auto embed = shapeOf("model.embed_tokens.weight");
        a.vocab = embed.size() == 2 ? embed[0] : 0;
        a.hidden = embed.size() == 2 ? embed[1] : 0;
        const model::ModuleNode *layers = tree.find("model.layers");
        a.layers = layers ? static_cast<int64_t>(layers->children.size()) : 0;
        // Each layer's attention window, declared once by the config (LlamaConfig::attentionWindow).
        // (The tree was built from the same config, so neither reader throws here.)
        const model::MoeConfig moeConfig = moe ? model::MoeConfig::fromJson(config, "config.json") : model::MoeConfig();
        const model::LlamaConfig attention = moe ? moeConfig.dense : model::LlamaConfig::fromJson(config, "config.json");
        for (int64_t i = 0; i < a.layers; ++i)
            a.attentionWindows.push_back(attention.attentionWindow(i));
        // The MLP's width as the config declares it (Phi-3 fuses gate and up into one gate_up_proj); a
        // mixture of experts' from its experts ([experts, hidden, width]).
        const auto experts = shapeOf("model.layers.0.mlp.experts.down_proj");
        a.intermediate = moe && experts.size() == 3 ? experts[2] : attention.intermediateSize;
        a.attentionSoftcap = attention.attnLogitSoftcapping > 0;
        a.logitSoftcap = attention.finalLogitSoftcapping > 0;
        if (moe) {
            a.experts = moeConfig.numExperts;
            a.expertsPerToken = moeConfig.expertsPerToken;
        }
        a.heads = intField(config, {"num_attention_heads"}, 32);
        a.kvHeads = intField(config, {"num_key_value_heads"}, a.heads);
        a.headDim = attention.effectiveHeadDim();
    } else if (tree.modelType == "gpt2" || tree.modelType == "chatglm") {
        a.family = "gpt";
        const bool glm = tree.modelType == "chatglm";
        const auto embed = shapeOf(glm ? "transformer.word_embeddings.weight" : "transformer.wte.weight");
        a.vocab = embed.size() == 2 ? embed[0] : 0;
        a.hidden = embed.size() == 2 ? embed[1] : 0;
        const auto fc = shapeOf(glm ? "transformer.layers.0.mlp.dense_h_to_4h.weight" : "transformer.h.0.mlp.c_fc.weight");
        a.intermediate = fc.size() == 2 ? (glm ? fc[0] : fc[1]) : 4 * a.hidden;
        const model::ModuleNode *layers = tree.find(glm ? "transformer.layers" : "transformer.h");
        a.layers = layers ? static_cast<int64_t>(layers->children.size()) : 0;
        a.heads = intField(config, {"num_attention_heads", "n_head"}, 12);
        a.kvHeads = a.heads;
        a.headDim = a.hidden / std::max<int64_t>(a.heads, 1);
    }
    return a;
}

// Generic shapes for a tree built from tensor names: the widest 2-D weight's smaller side as hidden.
// A model whose code ships with its checkpoint names its classes in auto_map; transformers then needs
// trust_remote_code=True whatever its model_type.
std::vector<std::string> autoMapClasses(const json &config)
{
    std::vector<std::string> out;
    const auto it = config.find("auto_map");
    if (it != config.end() && it->is_object()) {
        for (const auto &[key, value] : it->items())
            out.push_back(key);
    }
    return out;
}

bool hasSafetensors(const fs::path &folder)
{
    std::error_code ec;
    return fs::is_regular_file(folder / io::kSafetensorsWeightsName, ec)
        || fs::is_regular_file(folder / io::kSafetensorsIndexName, ec);
}

// Every tensor of every shard, headers only. A name in two shards counts once (the first shard's), as
// loading would overwrite it rather than hold both.
std::vector<io::TensorInfo> checkpointTensors(const fs::path &folder)
{
    const io::CheckpointFiles files = io::locateCheckpoint(folder);
    std::vector<io::TensorInfo> all;
    std::set<std::string> seen;
    for (const fs::path &shard : files.shards) {
        io::SafetensorsHeader header = io::readSafetensorsHeader(shard);
        for (io::TensorInfo &t : header.tensors) {
            if (seen.insert(t.name).second)
                all.push_back(std::move(t));
        }
    }
    return all;
}

// model_type names an architecture tunebench builds a tree for (its errors are then about the config).
bool hasArchitecture(const json &config)
{
    const auto it = config.is_object() ? config.find("model_type") : config.end();
    if (it != config.end() && !it->is_string() && !it->is_null())
        return true; // a bad value: let the config reader's error stand
    return it != config.end() && it->is_string() && !model::noSplitModuleClasses(it->get<std::string>()).empty();
}

// Why the tree comes from the headers: no tree for the model_type, none given, or (a known model_type whose
// config the tree builder refuses: ChatGLM2 under "chatglm", a quantized ChatGLM) the builder's own error.
std::string fallbackReason(const json &config, const std::string &source, const Error &error)
{
    if (hasArchitecture(config))
        return error.what();
    const auto it = config.is_object() ? config.find("model_type") : config.end();
    if (it == config.end() || !it->is_string() || it->get<std::string>().empty())
        return source + " has no model_type";
    return source + ": model_type \"" + it->get<std::string>() + "\" has no module tree in tunebench";
}

// The fallback for a model without a tree: its safetensors headers, `why` said first.
PlanModel planFromHeaders(const fs::path &folder, const json &config, const std::string &source, const std::string &why)
{
    const std::vector<io::TensorInfo> tensors = checkpointTensors(folder);
    if (tensors.empty())
        throw invalidInput(why + ", and the safetensors weights of " + folder.string() + " hold no tensors to plan from");
    PlanModel out = planModelFromTensors(tensors, config, source);
    out.remoteCodeClasses = autoMapClasses(config);
    out.warnings.insert(out.warnings.begin(),
                        why + ": planning from the checkpoint's tensor names (safetensors headers only, no weights read)");
    return out;
}

// Older per-expert tensors of a checkpoint (legacyExpertTensor), gathered under the fused parameter they load into.
using ExpertPieces = std::map<std::string, std::vector<std::pair<model::LegacyExpertTensor, const io::TensorInfo *>>>;

// The dtype of a fused expert parameter from its per-expert pieces: every expert's gate and up halves
// ([width, hidden] each, gate_up_proj being [experts, 2 x width, hidden]) or down ([hidden, width]), one dtype.
// "" (and a warning) when the pieces do not make the parameter.
std::string fusedDtype(const std::string &full, const model::ParameterInfo &p,
                       const std::vector<std::pair<model::LegacyExpertTensor, const io::TensorInfo *>> &pieces,
                       std::vector<std::string> &warnings)
{
    if (p.shape.size() != 3)
        return {};
    const bool gateUp = p.name == "gate_up_proj";
    const std::vector<int64_t> pieceShape = gateUp ? std::vector<int64_t>{p.shape[1] / 2, p.shape[2]}
                                                   : std::vector<int64_t>{p.shape[1], p.shape[2]};
    const size_t expected = static_cast<size_t>(p.shape[0]) * (gateUp ? 2 : 1);
    std::string dtype;
    bool consistent = pieces.size() == expected;
    for (const auto &[piece, tensor] : pieces) {
        const std::string name = torchDtypeName(std::string(io::dtypeName(tensor->dtype)));
        consistent = consistent && piece.expert >= 0 && piece.expert < p.shape[0]
            && std::vector<int64_t>(tensor->shape.begin(), tensor->shape.end()) == pieceShape
            && (dtype.empty() || dtype == name);
        dtype = name;
    }
    if (!consistent) {
        warnings.push_back("checkpoint's per-expert tensors for " + full + " (" + std::to_string(pieces.size()) + " of "
                           + std::to_string(expected) + " expected) do not make its shape in one dtype; planning with "
                                                        "config.json's dtype");
        return {};
    }
    return dtype;
}

void overlayDtypes(model::ModuleNode &node, const std::map<std::string, const io::TensorInfo *> &byName,
                   const ExpertPieces &pieces, std::vector<std::string> &warnings, int &shapeMismatches)
{
    for (model::ParameterInfo &p : node.parameters) {
        const std::string full = node.name.empty() ? p.name : node.name + "." + p.name;
        const auto it = byName.find(full);
        if (it == byName.end()) {
            if (const auto piece = pieces.find(full); piece != pieces.end()) {
                if (std::string dtype = fusedDtype(full, p, piece->second, warnings); !dtype.empty())
                    p.dtype = std::move(dtype);
            }
            continue;
        }
        std::vector<int64_t> shape(it->second->shape.begin(), it->second->shape.end());
        if (shape != p.shape) {
            if (shapeMismatches++ == 0)
                warnings.push_back("checkpoint tensor " + full + " has another shape than config.json implies; "
                                   "planning with the config's shapes");
            continue;
        }
        p.dtype = torchDtypeName(std::string(io::dtypeName(it->second->dtype)));
    }
    for (model::BufferInfo &b : node.buffers) { // persistent buffers are in checkpoints too
        const auto it = byName.find(node.name.empty() ? b.name : node.name + "." + b.name);
        if (it != byName.end() && std::vector<int64_t>(it->second->shape.begin(), it->second->shape.end()) == b.shape)
            b.dtype = torchDtypeName(std::string(io::dtypeName(it->second->dtype)));
    }
    for (model::ModuleNode &child : node.children)
        overlayDtypes(child, byName, pieces, warnings, shapeMismatches);
}

} // namespace

std::string torchDtypeName(const std::string &n)
{
    static const std::map<std::string, std::string> names = {
        {"F16", "float16"}, {"BF16", "bfloat16"}, {"F32", "float32"}, {"F64", "float64"}, {"I8", "int8"},
        {"U8", "uint8"},    {"I16", "int16"},     {"I32", "int32"},   {"I64", "int64"},   {"BOOL", "bool"},
        {"F8_E4M3", "float8_e4m3fn"}, {"F8_E5M2", "float8_e5m2"},
    };
    const auto it = names.find(n);
    return it == names.end() ? "int8" : it->second;
}

PlanModel planModelFromConfig(const json &config, const std::string &source)
{
    PlanModel out;
    out.tree = model::moduleTreeFromConfig(config, source);
    out.arch = archInfo(out.tree, config);
    out.remoteCodeClasses = autoMapClasses(config);
    return out;
}

PlanModel planModelFromPath(const fs::path &path)
{
    std::error_code ec;
    const bool isFolder = fs::is_directory(path, ec);
    const fs::path folder = isFolder ? path : path.parent_path();
    const bool weights = isFolder && hasSafetensors(folder);
    if (isFolder && !fs::exists(path / "config.json", ec)) {
        if (!weights)
            throw invalidInput(folder.string() + " has neither a config.json nor safetensors weights ("
                               + io::kSafetensorsWeightsName + " or " + io::kSafetensorsIndexName + ")");
        return planFromHeaders(folder, json(), (folder / "config.json").string(),
                               folder.string() + " has no config.json");
    }
    std::string source;
    const json config = model::configfields::readConfigFile(path, source);
    PlanModel out;
    try {
        out = planModelFromConfig(config, source);
    } catch (const Error &error) {
        if (!weights && hasArchitecture(config))
            throw;
        if (!weights)
            throw invalidInput(std::string(error.what()) + ", and " + folder.string()
                               + " has no safetensors weights whose tensor names could stand in for it");
        if (error.kind() != ErrorKind::InvalidInput)
            throw;
        return planFromHeaders(folder, config, source, fallbackReason(config, source, error));
    }
    if (weights) {
        const std::vector<io::TensorInfo> tensors = checkpointTensors(folder);
        std::map<std::string, const io::TensorInfo *> byName;
        ExpertPieces pieces;
        for (const io::TensorInfo &t : tensors) {
            // Checkpoints saved before transformers 5 name each expert (and Mixtral's router) the old way.
            const std::optional<model::LegacyExpertTensor> legacy = model::legacyExpertTensor(out.tree.modelType, t.name);
            if (legacy && legacy->part == model::ExpertPart::Whole)
                byName.emplace(legacy->parameter, &t);
            else if (legacy)
                pieces[legacy->parameter].emplace_back(*legacy, &t);
            else
                byName.emplace(t.name, &t);
        }
        int mismatches = 0;
        overlayDtypes(out.tree.root, byName, pieces, out.warnings, mismatches);
    }
    return out;
}

} // namespace engine::plan
