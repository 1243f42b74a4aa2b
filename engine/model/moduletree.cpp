#include "engine/model/moduletree.h"

#include "engine/core/error.h"
#include "engine/model/configfields.h"
#include "engine/model/llamaconfig.h"
#include "engine/model/moetree.h"

#include <algorithm>
#include <functional>

#include <nlohmann/json.hpp>

namespace engine::model {
namespace {

using nlohmann::json;
using configfields::checkRange;
using configfields::kMaxHidden;
using configfields::kMaxLayers;
using configfields::kMaxPositions;
using configfields::kMaxVocab;
using configfields::describe;
using configfields::fieldError;
using configfields::readBool;
using configfields::readInt;
using configfields::readString;


// Builds nodes with full paths and the config's dtype.
class TreeBuilder {
public:
    explicit TreeBuilder(std::string dtype) : m_dtype(std::move(dtype)) {}

    ModuleNode node(const std::string &name, const std::string &className) const { return {name, className, {}, {}, false}; }

    // A child of `parent` named `local`; returns it for filling in.
    ModuleNode &child(ModuleNode &parent, const std::string &local, const std::string &className) const
    {
        parent.children.push_back(node(parent.name.empty() ? local : parent.name + "." + local, className));
        return parent.children.back();
    }

    void parameter(ModuleNode &module, const std::string &local, std::vector<int64_t> shape) const
    {
        module.parameters.push_back({local, std::move(shape), m_dtype, {}});
    }

    // A buffer in its own dtype (buffers are not cast to the config's torch_dtype at construction).
    static void buffer(ModuleNode &module, const std::string &local, std::vector<int64_t> shape, const std::string &dtype,
                       bool persistent)
    {
        module.buffers.push_back({local, std::move(shape), dtype, persistent});
    }

    // nn.Linear(in, out): weight [out, in], bias [out].
    ModuleNode &linear(ModuleNode &parent, const std::string &local, int64_t in, int64_t out, bool bias) const
    {
        ModuleNode &module = child(parent, local, "Linear");
        parameter(module, "weight", {out, in});
        if (bias)
            parameter(module, "bias", {out});
        return module;
    }

    // transformers' Conv1D(nf = out, nx = in): weight [in, out], bias [out].
    void conv1d(ModuleNode &parent, const std::string &local, int64_t in, int64_t out) const
    {
        ModuleNode &module = child(parent, local, "Conv1D");
        parameter(module, "weight", {in, out});
        parameter(module, "bias", {out});
    }

    void embedding(ModuleNode &parent, const std::string &local, int64_t count, int64_t dim) const
    {
        parameter(child(parent, local, "Embedding"), "weight", {count, dim});
    }

    void layerNorm(ModuleNode &parent, const std::string &local, int64_t size) const
    {
        ModuleNode &module = child(parent, local, "LayerNorm");
        parameter(module, "weight", {size});
        parameter(module, "bias", {size});
    }

    void rmsNorm(ModuleNode &parent, const std::string &local, int64_t size, const std::string &className) const
    {
        parameter(child(parent, local, className), "weight", {size});
    }

    // The output projection: its own weight, or tied to `embeddingName` (full name of the embedding weight).
    void lmHead(ModuleNode &root, int64_t hidden, int64_t vocab, bool tied, const std::string &embeddingName,
                ModuleTree &tree) const
    {
        ModuleNode &head = linear(root, "lm_head", hidden, vocab, false);
        if (tied) {
            head.parameters.front().tiedTo = embeddingName;
            std::vector<std::string> group{"lm_head.weight", embeddingName};
            std::sort(group.begin(), group.end());
            tree.tiedParameters.push_back(group);
        }
    }

private:
    std::string m_dtype;
};

void markNoSplit(ModuleNode &node, const std::vector<std::string> &classes)
{
    node.noSplit = std::find(classes.begin(), classes.end(), node.className) != classes.end();
    for (ModuleNode &child : node.children)
        markNoSplit(child, classes);
}

ModuleTree finish(ModuleTree tree)
{
    tree.noSplitClasses = noSplitModuleClasses(tree.modelType);
    markNoSplit(tree.root, tree.noSplitClasses);
    return tree;
}

// torch_dtype (transformers 4) or dtype (transformers 5); float32 when neither is given, as
// from_pretrained loads by default.
std::string readDtype(const json &config, const std::string &source)
{
    const char *key = config.contains("torch_dtype") ? "torch_dtype" : "dtype";
    const auto it = config.find(key);
    if (it == config.end() || it->is_null())
        return "float32";
    if (!it->is_string())
        throw fieldError(source, key, "must be a string such as \"bfloat16\", got " + describe(*it));
    std::string dtype = it->get<std::string>();
    if (dtype.rfind("torch.", 0) == 0)
        dtype = dtype.substr(6);
    if (dtype == "half")
        dtype = "float16";
    if (dtype == "float")
        dtype = "float32";
    if (dtypeSize(dtype) == 0) {
        throw fieldError(source, key,
                         "is \"" + it->get<std::string>() + "\": supported are float32, float16, bfloat16, float64");
    }
    return dtype;
}

bool tieWordEmbeddings(const json &config, bool classDefault, const std::string &source)
{
    bool tied = classDefault;
    readBool(config, "tie_word_embeddings", tied, source);
    return tied;
}

// GPT2LMHeadModel (transformers' modeling_gpt2.py).
ModuleTree gpt2Tree(const json &config, const std::string &source, const std::string &dtype)
{
    int64_t vocab = 50257, positions = 1024, embd = 768, layers = 12, heads = 12, inner = 0;
    readInt(config, "vocab_size", vocab, source);
    readInt(config, "n_positions", positions, source);
    readInt(config, "n_embd", embd, source);
    readInt(config, "n_layer", layers, source);
    readInt(config, "n_head", heads, source);
    readInt(config, "n_inner", inner, source, /*nullAllowed=*/true);
    checkRange(source, "vocab_size", vocab, 1, kMaxVocab);
    checkRange(source, "n_positions", positions, 1, kMaxPositions / 1000);
    checkRange(source, "n_embd", embd, 1, kMaxHidden);
    checkRange(source, "n_layer", layers, 1, kMaxLayers);
    checkRange(source, "n_head", heads, 1, embd);
    if (embd % heads != 0) {
        throw fieldError(source, "n_head",
                         "is " + std::to_string(heads) + ", which does not divide n_embd " + std::to_string(embd));
    }
    if (inner == 0)
        inner = 4 * embd;
    checkRange(source, "n_inner", inner, 1, 10 * kMaxHidden);
    bool crossAttention = false;
    readBool(config, "add_cross_attention", crossAttention, source);
    if (crossAttention)
        throw fieldError(source, "add_cross_attention", "is true: GPT-2 with cross-attention is not supported");

    const TreeBuilder b(dtype);
    ModuleTree tree;
    tree.modelType = "gpt2";
    tree.dtype = dtype;
    tree.root = b.node("", "GPT2LMHeadModel");
    ModuleNode &transformer = b.child(tree.root, "transformer", "GPT2Model");
    b.embedding(transformer, "wte", vocab, embd);
    b.embedding(transformer, "wpe", positions, embd);
    ModuleNode &h = b.child(transformer, "h", "ModuleList");
    for (int64_t i = 0; i < layers; ++i) {
        ModuleNode &block = b.child(h, std::to_string(i), "GPT2Block");
        b.layerNorm(block, "ln_1", embd);
        ModuleNode &attn = b.child(block, "attn", "GPT2Attention");
        // The causal mask and the masked value, registered in GPT2Attention.__init__.
        TreeBuilder::buffer(attn, "bias", {1, 1, positions, positions}, "bool", true);
        TreeBuilder::buffer(attn, "masked_bias", {}, "float32", true);
        b.conv1d(attn, "c_attn", embd, 3 * embd);
        b.conv1d(attn, "c_proj", embd, embd);
        b.layerNorm(block, "ln_2", embd);
        ModuleNode &mlp = b.child(block, "mlp", "GPT2MLP");
        b.conv1d(mlp, "c_fc", embd, inner);
        b.conv1d(mlp, "c_proj", inner, embd);
    }
    b.layerNorm(transformer, "ln_f", embd);
    b.lmHead(tree.root, embd, vocab, tieWordEmbeddings(config, true, source), "transformer.wte.weight", tree);
    return finish(std::move(tree));
}

// ChatGLMForConditionalGeneration of THUDM/chatglm-6b (modeling_chatglm.py shipped with the checkpoint).
ModuleTree chatglmTree(const json &config, const std::string &source, const std::string &dtype)
{
    // ChatGLM2/3 share model_type "chatglm" but have another layout (transformer.encoder.layers, ...).
    for (const char *key : {"padded_vocab_size", "ffn_hidden_size", "kv_channels", "multi_query_attention"}) {
        if (config.contains(key)) {
            throw fieldError(source, key,
                             "is present: this is a ChatGLM2/ChatGLM3 config, whose layout is not supported "
                             "(only ChatGLM-6B)");
        }
    }
    int64_t vocab = 150528, hidden = 4096, layers = 28, heads = 32, inner = 16384, quantizationBit = 0;
    readInt(config, "vocab_size", vocab, source);
    readInt(config, "hidden_size", hidden, source);
    readInt(config, "num_layers", layers, source);
    readInt(config, "num_attention_heads", heads, source);
    if (const auto it = config.find("inner_hidden_size"); it != config.end() && it->is_null())
        inner = 4 * hidden;
    else
        readInt(config, "inner_hidden_size", inner, source);
    checkRange(source, "vocab_size", vocab, 1, kMaxVocab);
    checkRange(source, "hidden_size", hidden, 1, kMaxHidden);
    checkRange(source, "num_layers", layers, 1, kMaxLayers);
    checkRange(source, "num_attention_heads", heads, 1, hidden);
    checkRange(source, "inner_hidden_size", inner, 1, 10 * kMaxHidden);
    if (hidden % heads != 0) {
        throw fieldError(source, "num_attention_heads",
                         "is " + std::to_string(heads) + ", which does not divide hidden_size " + std::to_string(hidden));
    }
    readInt(config, "quantization_bit", quantizationBit, source, true);
    if (quantizationBit != 0) {
        throw fieldError(source, "quantization_bit",
                         "is " + std::to_string(quantizationBit) + ": quantized ChatGLM checkpoints are not supported");
    }
    if (const auto it = config.find("pre_seq_len"); it != config.end() && !it->is_null())
        throw fieldError(source, "pre_seq_len", "is " + it->dump() + ": ChatGLM's P-tuning prefix encoder is not supported");
    bool twoDimensional = true;
    readBool(config, "position_encoding_2d", twoDimensional, source);
    // RotaryEmbedding(dim) keeps inv_freq = 1 / base^(arange(0, dim, 2) / dim) in float16, a persistent buffer
    // (it is in the checkpoint); dim is half a head with the 2D position encoding.
    const int64_t rotaryDim = hidden / heads / (twoDimensional ? 2 : 1);

    const TreeBuilder b(dtype);
    ModuleTree tree;
    tree.modelType = "chatglm";
    tree.dtype = dtype;
    tree.root = b.node("", "ChatGLMForConditionalGeneration");
    ModuleNode &transformer = b.child(tree.root, "transformer", "ChatGLMModel");
    b.embedding(transformer, "word_embeddings", vocab, hidden);
    ModuleNode &list = b.child(transformer, "layers", "ModuleList");
    for (int64_t i = 0; i < layers; ++i) {
        ModuleNode &block = b.child(list, std::to_string(i), "GLMBlock");
        b.layerNorm(block, "input_layernorm", hidden);
        ModuleNode &attention = b.child(block, "attention", "SelfAttention");
        TreeBuilder::buffer(b.child(attention, "rotary_emb", "RotaryEmbedding"), "inv_freq", {(rotaryDim + 1) / 2},
                            "float16", true);
        b.linear(attention, "query_key_value", hidden, 3 * hidden, true);
        b.linear(attention, "dense", hidden, hidden, true);
        b.layerNorm(block, "post_attention_layernorm", hidden);
        ModuleNode &mlp = b.child(block, "mlp", "GLU");
        b.linear(mlp, "dense_h_to_4h", hidden, inner, true);
        b.linear(mlp, "dense_4h_to_h", inner, hidden, true);
    }
    b.layerNorm(transformer, "final_layernorm", hidden);
    b.lmHead(tree.root, hidden, vocab, tieWordEmbeddings(config, true, source), "transformer.word_embeddings.weight",
             tree);
    return finish(std::move(tree));
}

void countInto(const ModuleNode &node, bool includeTied, bool bytes, int64_t &total)
{
    for (const ParameterInfo &p : node.parameters) {
        if (includeTied || p.tiedTo.empty())
            total += bytes ? p.bytes() : p.numel();
    }
    for (const ModuleNode &child : node.children)
        countInto(child, includeTied, bytes, total);
}

} // namespace

int64_t numelOf(const std::vector<int64_t> &shape)
{
    int64_t n = 1;
    for (const int64_t d : shape)
        n *= d;
    return n;
}

int64_t ParameterInfo::numel() const
{
    return numelOf(shape);
}

int64_t ParameterInfo::bytes() const
{
    return numel() * dtypeSize(dtype);
}

int64_t ModuleNode::parameterCount(bool includeTied) const
{
    int64_t total = 0;
    countInto(*this, includeTied, false, total);
    return total;
}

int64_t ModuleNode::parameterBytes(bool includeTied) const
{
    int64_t total = 0;
    countInto(*this, includeTied, true, total);
    return total;
}

const ModuleNode *ModuleNode::find(std::string_view path) const
{
    if (path == name)
        return this;
    for (const ModuleNode &child : children) {
        const std::string_view childName = child.name;
        if (path == childName)
            return &child;
        if (path.size() > childName.size() && path.substr(0, childName.size()) == childName
            && path[childName.size()] == '.')
            return child.find(path);
    }
    return nullptr;
}

bool ModuleNode::holdsOnlyBuffers() const
{
    bool anyBuffer = false;
    const std::function<bool(const ModuleNode &)> visit = [&](const ModuleNode &node) {
        if (!node.parameters.empty())
            return false;
        anyBuffer = anyBuffer || !node.buffers.empty();
        return std::all_of(node.children.begin(), node.children.end(), visit);
    };
    return visit(*this) && anyBuffer;
}

int64_t ModuleTree::parameterCount() const
{
    return root.parameterCount(false);
}

int64_t ModuleTree::parameterBytes() const
{
    return root.parameterBytes(false);
}

const ModuleNode *ModuleTree::find(std::string_view path) const
{
    return root.find(path);
}

std::vector<NamedParameter> ModuleTree::namedParameters(bool includeTied) const
{
    std::vector<NamedParameter> out;
    const std::function<void(const ModuleNode &)> visit = [&](const ModuleNode &node) {
        for (const ParameterInfo &p : node.parameters) {
            if (includeTied || p.tiedTo.empty())
                out.push_back({node.name.empty() ? p.name : node.name + "." + p.name, p});
        }
        for (const ModuleNode &child : node.children)
            visit(child);
    };
    visit(root);
    return out;
}

std::vector<std::string> ModuleTree::bufferOnlyModules() const
{
    std::vector<std::string> out;
    const std::function<void(const ModuleNode &)> visit = [&](const ModuleNode &node) {
        if (node.holdsOnlyBuffers()) {
            out.push_back(node.name);
            return;
        }
        for (const ModuleNode &child : node.children)
            visit(child);
    };
    visit(root);
    return out;
}

int64_t dtypeSize(const std::string &dtype)
{
    if (dtype == "float32")
        return 4;
    if (dtype == "float16" || dtype == "bfloat16")
        return 2;
    if (dtype == "float64")
        return 8;
    return 0;
}

std::vector<std::string> noSplitModuleClasses(const std::string &modelType)
{
    if (isLlamaFamily(modelType)) {
        LlamaConfig config;
        config.modelType = modelType;
        return {config.className("DecoderLayer")};
    }
    if (modelType == "mixtral")
        return {"MixtralDecoderLayer"};
    if (modelType == "qwen3_moe")
        return {"Qwen3MoeDecoderLayer"};
    if (modelType == "chatglm")
        return {"GLMBlock"};
    if (modelType == "gpt2")
        return {"GPT2Block"};
    return {};
}

ModuleTree llamaModuleTree(const LlamaConfig &config, const std::string &dtype)
{
    const TreeBuilder b(dtype);
    const int64_t hidden = config.hiddenSize;
    const int64_t qWidth = config.numAttentionHeads * config.effectiveHeadDim();
    const int64_t kvWidth = config.numKeyValueHeads * config.effectiveHeadDim();
    const std::string norm = config.className("RMSNorm");

    ModuleTree tree;
    tree.modelType = config.modelType.empty() ? std::string("llama") : config.modelType;
    tree.dtype = dtype;
    tree.root = b.node("", config.className("ForCausalLM"));
    ModuleNode &model = b.child(tree.root, "model", config.className("Model"));
    const std::string embeddingClass = config.embeddingClassName();
    ModuleNode &embedding = b.child(model, "embed_tokens", embeddingClass);
    b.parameter(embedding, "weight", {config.vocabSize, hidden});
    if (embeddingClass != "Embedding") // Gemma3TextScaledWordEmbedding: torch.tensor(sqrt(hidden)), non-persistent
        TreeBuilder::buffer(embedding, "embed_scale", {}, "float32", false);
    ModuleNode &layers = b.child(model, "layers", "ModuleList");
    for (int64_t i = 0; i < config.numHiddenLayers; ++i) {
        ModuleNode &layer = b.child(layers, std::to_string(i), config.className("DecoderLayer"));
        ModuleNode &attention = b.child(layer, "self_attn", config.className("Attention"));
        if (config.hasFusedProjections()) { // Phi3Attention registers o_proj first
            b.linear(attention, "o_proj", qWidth, hidden, false);
            b.linear(attention, "qkv_proj", hidden, qWidth + 2 * kvWidth, false);
        } else {
            b.linear(attention, "q_proj", hidden, qWidth, config.hasQkvBias());
            b.linear(attention, "k_proj", hidden, kvWidth, config.hasQkvBias());
            b.linear(attention, "v_proj", hidden, kvWidth, config.hasQkvBias());
            b.linear(attention, "o_proj", qWidth, hidden, config.hasOutputBias());
        }
        if (config.hasQkNorm()) { // Qwen3Attention and Gemma3Attention register q_norm and k_norm after the projections
            b.rmsNorm(attention, "q_norm", config.effectiveHeadDim(), norm);
            b.rmsNorm(attention, "k_norm", config.effectiveHeadDim(), norm);
        }
        ModuleNode &mlp = b.child(layer, "mlp", config.className("MLP"));
        if (config.hasFusedProjections()) {
            b.linear(mlp, "gate_up_proj", hidden, 2 * config.intermediateSize, false);
        } else {
            b.linear(mlp, "gate_proj", hidden, config.intermediateSize, config.mlpBias);
            b.linear(mlp, "up_proj", hidden, config.intermediateSize, config.mlpBias);
        }
        b.linear(mlp, "down_proj", config.intermediateSize, hidden, config.mlpBias);
        b.rmsNorm(layer, "input_layernorm", hidden, norm);
        b.rmsNorm(layer, "post_attention_layernorm", hidden, norm);
        if (config.hasFeedforwardNorms()) {
            b.rmsNorm(layer, "pre_feedforward_layernorm", hidden, norm);
            b.rmsNorm(layer, "post_feedforward_layernorm", hidden, norm);
        }
    }
    b.rmsNorm(model, "norm", hidden, norm);
    // LlamaRotaryEmbedding: inv_freq = 1 / base^(arange(0, dim, 2) / dim), float32, register_buffer(persistent=False).
    // Gemma3RotaryEmbedding (transformers 5) holds one per layer type present, "<type>_inv_freq" (its order
    // follows a Python set; full_attention first here).
    const int64_t rotaryDim = config.rotaryDim();
    ModuleNode &rotary = b.child(model, "rotary_emb", config.className("RotaryEmbedding"));
    if (config.ropeLocalBaseFreq > 0) {
        for (const bool sliding : {false, true}) {
            bool present = false;
            for (int64_t i = 0; i < config.numHiddenLayers; ++i)
                present = present || config.isSlidingLayer(i) == sliding;
            if (present) {
                TreeBuilder::buffer(rotary, sliding ? "sliding_attention_inv_freq" : "full_attention_inv_freq",
                                    {(rotaryDim + 1) / 2}, "float32", false);
            }
        }
    } else {
        TreeBuilder::buffer(rotary, "inv_freq", {(rotaryDim + 1) / 2}, "float32", false);
    }
    b.lmHead(tree.root, hidden, config.vocabSize, config.tieWordEmbeddings, "model.embed_tokens.weight", tree);
    return finish(std::move(tree));
}

ModuleTree moduleTreeFromConfig(const json &config, const std::string &source)
{
    if (!config.is_object())
        throw invalidInput(source + ": a model config must be a JSON object, got " + describe(config));
    std::string modelType;
    readString(config, "model_type", modelType, source);
    const std::string dtype = readDtype(config, source);
    if (isLlamaFamily(modelType))
        return llamaModuleTree(LlamaConfig::fromJson(config, source), dtype);
    if (isMoeModelType(modelType))
        return moeModuleTree(MoeConfig::fromJson(config, source), dtype);
    if (modelType == "chatglm")
        return chatglmTree(config, source, dtype);
    if (modelType == "gpt2")
        return gpt2Tree(config, source, dtype);
    if (modelType.empty())
        throw fieldError(source, "model_type", "is missing: cannot tell the architecture");
    throw fieldError(source, "model_type",
                     "is \"" + modelType + "\": no module tree for this architecture (supported: llama, mistral, qwen2, qwen3, "
                                           "gemma2, gemma3_text, phi3, mixtral, qwen3_moe, chatglm, gpt2)");
}

ModuleTree moduleTreeFromFolder(const std::filesystem::path &path)
{
    std::string source;
    const json config = configfields::readConfigFile(path, source);
    return moduleTreeFromConfig(config, source);
}

} // namespace engine::model
