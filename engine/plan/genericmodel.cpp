// Planning a model tunebench has no architecture for: the tree comes from the checkpoint's tensor
// names (tensortree.cpp), the activation sizes from config.json's usual keys, and every guess is said
// in a warning, so a plan never looks more exact than it is.

#include "engine/plan/planmodel.h"

#include "engine/io/safetensorsheader.h"

#include <algorithm>
#include <functional>

#include <nlohmann/json.hpp>

namespace engine::plan {
namespace {

using nlohmann::json;
using Keys = std::vector<const char *>;

const Keys kHiddenKeys = {"hidden_size", "n_embd", "d_model"};
const Keys kHeadKeys = {"num_attention_heads", "n_head", "num_heads"};
const Keys kKvHeadKeys = {"num_key_value_heads", "multi_query_group_num", "n_head_kv"};
const Keys kIntermediateKeys = {"intermediate_size", "ffn_hidden_size", "n_inner", "ffn_dim", "inner_hidden_size"};
const Keys kVocabKeys = {"vocab_size", "padded_vocab_size", "n_vocab"};
const Keys kLayerKeys = {"num_hidden_layers", "n_layer", "num_layers"};

// A config size: the first key holding a positive integer; `used` names it.
int64_t configSize(const json &config, const Keys &keys, std::string &used)
{
    if (!config.is_object())
        return 0;
    for (const char *key : keys) {
        const auto it = config.find(key);
        if (it != config.end() && it->is_number_integer() && it->get<int64_t>() > 0) {
            used = key;
            return it->get<int64_t>();
        }
    }
    return 0;
}

// "hidden_size (nor n_embd, d_model)"
std::string keyList(const Keys &keys)
{
    std::string out = keys.front();
    for (size_t i = 1; i < keys.size(); ++i)
        out += (i == 1 ? " (nor " : ", ") + std::string(keys[i]);
    return keys.size() > 1 ? out + ")" : out;
}

// The outermost no-split modules: the layers.
std::vector<const model::ModuleNode *> outermostBlocks(const model::ModuleNode &root)
{
    std::vector<const model::ModuleNode *> out;
    const std::function<void(const model::ModuleNode &)> visit = [&](const model::ModuleNode &n) {
        if (n.noSplit) {
            out.push_back(&n);
            return;
        }
        for (const model::ModuleNode &c : n.children)
            visit(c);
    };
    visit(root);
    return out;
}

// The output projection: a top-level lm_head/head/output/embed_out, else (ChatGLM2's transformer.output_layer)
// the last module outside the blocks whose 2-D weight has the embedding's shape, [vocab, hidden]. nullptr
// when there is none.
const model::ModuleNode *outputHead(const model::ModuleTree &tree)
{
    for (const model::ModuleNode &c : tree.root.children) {
        if (isOutputHeadName(c.name) && !c.parameters.empty() && c.parameters.front().shape.size() == 2)
            return &c;
    }
    std::vector<std::vector<int64_t>> embeddingShapes;
    std::vector<const model::ModuleNode *> candidates;
    const std::function<void(const model::ModuleNode &)> visit = [&](const model::ModuleNode &n) {
        if (n.noSplit)
            return;
        if (n.className == "Embedding")
            embeddingShapes.push_back(n.parameters.front().shape);
        else if (n.className == "Linear" && n.parameters.front().shape.size() == 2)
            candidates.push_back(&n);
        for (const model::ModuleNode &c : n.children)
            visit(c);
    };
    visit(tree.root);
    for (auto it = candidates.rbegin(); it != candidates.rend(); ++it) {
        if (std::find(embeddingShapes.begin(), embeddingShapes.end(), (*it)->parameters.front().shape) != embeddingShapes.end())
            return *it;
    }
    return nullptr;
}

// The embedding an absent output head shares its weight with: the one with `vocab` rows, else (vocabularies
// padded to a multiple of 64 or 128, as GPT-NeoX's) the largest.
const model::ModuleNode *tokenEmbedding(const model::ModuleNode &root, int64_t vocab)
{
    const model::ModuleNode *exact = nullptr, *largest = nullptr;
    const std::function<void(const model::ModuleNode &)> visit = [&](const model::ModuleNode &n) {
        if (n.className == "Embedding" && n.parameters.front().shape.size() == 2) {
            const int64_t numel = n.parameters.front().numel();
            if (!largest || numel > largest->parameters.front().numel())
                largest = &n;
            if (n.parameters.front().shape[0] == vocab && (!exact || numel > exact->parameters.front().numel()))
                exact = &n;
        }
        for (const model::ModuleNode &c : n.children)
            visit(c);
    };
    visit(root);
    return exact ? exact : largest;
}

// transformers' PretrainedConfig defaults tie_word_embeddings to true; a causal LM whose checkpoint has no
// lm_head tensor had it tied (save_pretrained drops the duplicate). Accelerate sees that lm_head and places
// it with the embedding, so the tree needs it too.
void addTiedHead(model::ModuleTree &tree, const json &config, int64_t vocab, std::vector<std::string> &warnings)
{
    const auto tied = config.is_object() ? config.find("tie_word_embeddings") : config.end();
    if (!config.is_object() || outputHead(tree) || (tied != config.end() && *tied == false))
        return;
    const model::ModuleNode *embedding = tokenEmbedding(tree.root, vocab);
    if (!embedding)
        return;
    const std::string tiedTo = embedding->name + ".weight";
    model::ParameterInfo weight = embedding->parameters.front();
    weight.tiedTo = tiedTo;
    tree.root.children.push_back({"lm_head", "Linear", {weight}, {}, false});
    std::vector<std::string> group{"lm_head.weight", tiedTo};
    std::sort(group.begin(), group.end());
    tree.tiedParameters.push_back(group);
    warnings.push_back("lm_head is not in the checkpoint: taken as tied to " + tiedTo
                       + " (tie_word_embeddings is true or unset), placed with it and counted once");
}

// SwiGLU-like MLPs have three projections of the intermediate width (gate, up, down), GELU MLPs two.
bool gatedMlp(const model::ModuleNode &block, int64_t intermediate)
{
    int wide = 0;
    const std::function<void(const model::ModuleNode &)> visit = [&](const model::ModuleNode &n) {
        for (const model::ParameterInfo &p : n.parameters)
            wide += p.shape.size() == 2 && (p.shape[0] == intermediate || p.shape[1] == intermediate);
        for (const model::ModuleNode &c : n.children)
            visit(c);
    };
    visit(block);
    return wide >= 3;
}

// Family "generic": sizes from the config's usual keys, the layer count from the tree's blocks. Without
// hidden size or head count the blocks' activations are not estimated, and the warning names the key.
ArchInfo genericArch(const model::ModuleTree &tree, const json &config, const std::string &source,
                     std::vector<std::string> &notes)
{
    ArchInfo a;
    a.family = "generic";
    const std::vector<const model::ModuleNode *> blocks = outermostBlocks(tree.root);
    a.layers = static_cast<int64_t>(blocks.size());
    std::string hiddenKey, headKey, kvKey, ffKey, vocabKey, layerKey;
    a.hidden = configSize(config, kHiddenKeys, hiddenKey);
    a.heads = configSize(config, kHeadKeys, headKey);
    a.kvHeads = configSize(config, kKvHeadKeys, kvKey);
    a.intermediate = configSize(config, kIntermediateKeys, ffKey);
    a.vocab = configSize(config, kVocabKeys, vocabKey);
    const int64_t configLayers = configSize(config, kLayerKeys, layerKey);

    if (blocks.empty())
        notes.push_back("activations of the layers not counted: the tensor names have no numbered list of blocks");
    if (!config.is_object()) {
        notes.push_back("activations of the layers not counted: there is no config.json to give " + std::string(kHiddenKeys[0])
                        + " and " + kHeadKeys[0]);
    } else if (a.hidden == 0 || a.heads == 0) {
        notes.push_back("activations of the layers not counted: " + source + " has no "
                        + keyList(a.hidden == 0 ? kHiddenKeys : kHeadKeys));
    }
    if (a.hidden == 0 || a.heads == 0 || blocks.empty()) {
        a.hidden = a.heads = 0; // the memory model then counts no block activations
        return a;
    }
    if (a.kvHeads == 0)
        a.kvHeads = a.heads;
    a.headDim = a.hidden / a.heads;
    if (a.intermediate == 0) {
        a.intermediate = 4 * a.hidden;
        notes.push_back(source + " has no " + keyList(kIntermediateKeys) + ": the MLP width is taken as 4 x " + hiddenKey);
    }
    a.gatedMlp = gatedMlp(*blocks.front(), a.intermediate);
    if (configLayers > 0 && configLayers != a.layers)
        notes.push_back(source + "'s " + layerKey + " is " + std::to_string(configLayers) + " but the checkpoint has "
                        + std::to_string(a.layers) + " numbered blocks: planning with the blocks");
    notes.push_back("activations estimated with a generic transformer layer (memorymodel.cpp) from " + source + "'s "
                    + hiddenKey + " " + std::to_string(a.hidden) + ", " + headKey + " " + std::to_string(a.heads)
                    + (kvKey.empty() ? "" : ", " + kvKey + " " + std::to_string(a.kvHeads)) + ", "
                    + (ffKey.empty() ? "MLP width" : ffKey) + " " + std::to_string(a.intermediate)
                    + (a.gatedMlp ? " (gated MLP: three projections of that width)" : "")
                    + "; the architecture's own operations are not known");
    return a;
}

// The output head's rows are the vocabulary; logits are counted on it.
void noteLogits(const model::ModuleTree &tree, ArchInfo &arch, std::vector<std::string> &notes)
{
    if (const model::ModuleNode *head = outputHead(tree)) {
        arch.outputHead = head->name;
        if (arch.vocab == 0)
            arch.vocab = head->parameters.front().shape[0];
        return;
    }
    notes.push_back("logits not counted: the checkpoint has no output head (lm_head, head, output, embed_out, or a "
                    "projection of the embedding's shape) and no embedding it could be tied to");
}

void noteTreeGuesses(const model::ModuleTree &tree, size_t tensorCount, std::vector<std::string> &warnings)
{
    warnings.push_back("module tree from the " + std::to_string(tensorCount)
                       + " tensor names of the checkpoint's headers: sizes and dtypes exact; registration order guessed "
                         "(embeddings, numbered lists, the rest, the output head last); buffers that checkpoints leave "
                         "out (rotary inv_freq, ...) not counted");
    const std::vector<const model::ModuleNode *> blocks = outermostBlocks(tree.root);
    if (blocks.empty()) {
        warnings.push_back("no numbered list (layers.N, h.N, blocks.N) among the tensor names: no unit is kept whole, "
                           "any module may be split across devices");
    } else {
        const std::string list = blocks.front()->name.substr(0, blocks.front()->name.rfind('.'));
        warnings.push_back("the " + std::to_string(blocks.size()) + " numbered blocks (" + list
                           + ".N, ...) are the unit never split (\"Block\")");
    }
    std::string loose;
    for (const model::ParameterInfo &p : tree.root.parameters)
        loose += (loose.empty() ? "" : ", ") + p.name;
    if (!loose.empty())
        warnings.push_back("tensors at the top level, in no module: " + loose + " (placed like a module's own parameters)");
}

} // namespace

PlanModel planModelFromTensors(const std::vector<io::TensorInfo> &tensors, const json &config, const std::string &source)
{
    PlanModel out;
    out.tree = moduleTreeFromTensors(tensors);
    if (config.is_object() && config.contains("model_type") && config["model_type"].is_string())
        out.tree.modelType = config["model_type"].get<std::string>();
    noteTreeGuesses(out.tree, tensors.size(), out.warnings);
    std::string vocabKey;
    addTiedHead(out.tree, config, configSize(config, kVocabKeys, vocabKey), out.warnings);
    out.arch = genericArch(out.tree, config, source, out.activationWarnings);
    noteLogits(out.tree, out.arch, out.activationWarnings);
    return out;
}

} // namespace engine::plan
