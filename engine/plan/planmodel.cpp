#include "engine/plan/planmodel.h"

#include "engine/core/error.h"
#include "engine/io/safetensorsheader.h"
#include "engine/io/shardindex.h"
#include "engine/model/configfields.h"
#include "engine/model/llamaconfig.h"

#include <algorithm>
#include <cctype>
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
    if (model::isLlamaFamily(tree.modelType)) {
        a.family = "llama";
        const auto embed = shapeOf("model.embed_tokens.weight");
        a.vocab = embed.size() == 2 ? embed[0] : 0;
        a.hidden = embed.size() == 2 ? embed[1] : 0;
        a.intermediate = shapeOf("model.layers.0.mlp.gate_proj.weight").empty() ? 0 : shapeOf("model.layers.0.mlp.gate_proj.weight")[0];
        const model::ModuleNode *layers = tree.find("model.layers");
        a.layers = layers ? static_cast<int64_t>(layers->children.size()) : 0;
        a.heads = intField(config, {"num_attention_heads"}, 32);
        a.kvHeads = intField(config, {"num_key_value_heads"}, a.heads);
        const auto q = shapeOf("model.layers.0.self_attn.q_proj.weight");
        a.headDim = q.empty() ? a.hidden / a.heads : q[0] / a.heads;
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
ArchInfo genericArch(const model::ModuleTree &tree, const json &config)
{
    ArchInfo a;
    a.family = "generic";
    for (const model::NamedParameter &p : tree.namedParameters(true)) {
        if (p.info.shape.size() == 2) {
            const int64_t lo = std::min(p.info.shape[0], p.info.shape[1]);
            const int64_t hi = std::max(p.info.shape[0], p.info.shape[1]);
            if (hi > a.vocab) {
                a.vocab = hi;
                a.hidden = lo;
            }
        }
    }
    a.hidden = intField(config, {"hidden_size", "n_embd", "d_model"}, a.hidden);
    a.heads = intField(config, {"num_attention_heads", "n_head", "num_heads"}, std::max<int64_t>(1, a.hidden / 128));
    a.kvHeads = a.heads;
    a.headDim = a.hidden / std::max<int64_t>(a.heads, 1);
    a.intermediate = intField(config, {"intermediate_size", "n_inner", "ffn_dim"}, 4 * a.hidden);
    return a;
}

bool hasSafetensors(const fs::path &folder)
{
    std::error_code ec;
    return fs::is_regular_file(folder / io::kSafetensorsWeightsName, ec)
        || fs::is_regular_file(folder / io::kSafetensorsIndexName, ec);
}

std::vector<io::TensorInfo> checkpointTensors(const fs::path &folder)
{
    const io::CheckpointFiles files = io::locateCheckpoint(folder);
    std::vector<io::TensorInfo> all;
    for (const fs::path &shard : files.shards) {
        io::SafetensorsHeader header = io::readSafetensorsHeader(shard);
        for (io::TensorInfo &t : header.tensors)
            all.push_back(std::move(t));
    }
    return all;
}

void overlayDtypes(model::ModuleNode &node, const std::map<std::string, const io::TensorInfo *> &byName,
                   std::vector<std::string> &warnings, int &shapeMismatches)
{
    for (model::ParameterInfo &p : node.parameters) {
        const std::string full = node.name.empty() ? p.name : node.name + "." + p.name;
        const auto it = byName.find(full);
        if (it == byName.end())
            continue;
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
        overlayDtypes(child, byName, warnings, shapeMismatches);
}

// Natural order: digit runs compare as numbers ("layers.2" < "layers.10").
bool naturalLess(const std::string &a, const std::string &b)
{
    size_t i = 0, j = 0;
    while (i < a.size() && j < b.size()) {
        if (std::isdigit(static_cast<unsigned char>(a[i])) && std::isdigit(static_cast<unsigned char>(b[j]))) {
            size_t ie = i, je = j;
            while (ie < a.size() && std::isdigit(static_cast<unsigned char>(a[ie])))
                ++ie;
            while (je < b.size() && std::isdigit(static_cast<unsigned char>(b[je])))
                ++je;
            const std::string na = a.substr(i, ie - i), nb = b.substr(j, je - j);
            if (na.size() != nb.size())
                return na.size() < nb.size();
            if (na != nb)
                return na < nb;
            i = ie;
            j = je;
        } else {
            if (a[i] != b[j])
                return a[i] < b[j];
            ++i;
            ++j;
        }
    }
    return a.size() - i < b.size() - j;
}

bool isNumber(const std::string &s)
{
    return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)); });
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

model::ModuleTree moduleTreeFromTensors(const std::vector<io::TensorInfo> &tensors)
{
    std::vector<const io::TensorInfo *> order;
    for (const io::TensorInfo &t : tensors)
        order.push_back(&t);
    const auto isHead = [](const std::string &name) {
        const std::string top = name.substr(0, name.find('.'));
        return top == "lm_head" || top == "head" || top == "output" || top == "embed_out";
    };
    std::sort(order.begin(), order.end(), [&](const io::TensorInfo *a, const io::TensorInfo *b) {
        if (isHead(a->name) != isHead(b->name))
            return !isHead(a->name);
        return naturalLess(a->name, b->name);
    });
    model::ModuleTree tree;
    tree.modelType = "unknown";
    tree.root.className = "PreTrainedModel";
    std::map<std::string, int> dtypeVotes;
    bool anyBlock = false;
    for (const io::TensorInfo *t : order) {
        model::ModuleNode *node = &tree.root;
        std::string prefix;
        size_t start = 0;
        std::string local;
        while (true) {
            const size_t dot = t->name.find('.', start);
            if (dot == std::string::npos) {
                local = t->name.substr(start);
                break;
            }
            const std::string part = t->name.substr(start, dot - start);
            prefix = prefix.empty() ? part : prefix + "." + part;
            start = dot + 1;
            model::ModuleNode *next = nullptr;
            for (model::ModuleNode &c : node->children) {
                if (c.name == prefix)
                    next = &c;
            }
            if (!next) {
                const bool block = isNumber(part);
                anyBlock = anyBlock || block;
                if (block)
                    node->className = "ModuleList";
                node->children.push_back({prefix, block ? "Block" : "Module", {}, {}, block});
                next = &node->children.back();
            }
            node = next;
        }
        const std::string dtype = torchDtypeName(std::string(io::dtypeName(t->dtype)));
        ++dtypeVotes[dtype];
        node->parameters.push_back({local, std::vector<int64_t>(t->shape.begin(), t->shape.end()), dtype, {}});
    }
    tree.dtype = "float32";
    int best = 0;
    for (const auto &[dtype, votes] : dtypeVotes) {
        if (votes > best && model::dtypeSize(dtype) > 0) {
            best = votes;
            tree.dtype = dtype;
        }
    }
    if (anyBlock)
        tree.noSplitClasses = {"Block"};
    return tree;
}

PlanModel planModelFromConfig(const json &config, const std::string &source)
{
    PlanModel out;
    out.tree = model::moduleTreeFromConfig(config, source);
    out.arch = archInfo(out.tree, config);
    return out;
}

PlanModel planModelFromPath(const fs::path &path)
{
    std::string source;
    const json config = model::configfields::readConfigFile(path, source);
    std::error_code ec;
    const fs::path folder = fs::is_directory(path, ec) ? path : path.parent_path();
    const bool weights = fs::is_directory(path, ec) && hasSafetensors(folder);
    PlanModel out;
    try {
        out = planModelFromConfig(config, source);
    } catch (const Error &error) {
        const std::string message = error.what();
        const bool unknownType = message.find("no module tree for this architecture") != std::string::npos;
        if (!unknownType)
            throw;
        if (!weights)
            throw invalidInput(message + ", and " + folder.string()
                               + " has no safetensors weights whose tensor names could stand in for it");
        out.tree = moduleTreeFromTensors(checkpointTensors(folder));
        std::string type = config.value("model_type", std::string("unknown"));
        out.tree.modelType = type;
        out.arch = genericArch(out.tree, config);
        out.warnings.push_back(source + ": model_type \"" + type
                               + "\" has no module tree; planning from the checkpoint's tensor names (registration "
                                 "order guessed; numbered layers kept whole as \"Block\")");
        return out;
    }
    if (weights) {
        const std::vector<io::TensorInfo> tensors = checkpointTensors(folder);
        std::map<std::string, const io::TensorInfo *> byName;
        for (const io::TensorInfo &t : tensors)
            byName.emplace(t.name, &t);
        int mismatches = 0;
        overlayDtypes(out.tree.root, byName, out.warnings, mismatches);
    }
    return out;
}

} // namespace engine::plan
