// A module tree from a checkpoint's tensor names, for models tunebench has no architecture for.
//
// Safetensors headers and index files list tensors by name (sorted, or by offset), never in the order
// the modeling class registers its modules, and they do not say which tensors are buffers. So the
// derivation guesses where it must, in the ways that keep Accelerate's device map right for the
// usual decoder-only layout:
//   - siblings: embeddings first (the largest, the token embedding, before position embeddings), then
//     numbered lists (the layers), then the rest in natural order (final norm), the output head last;
//     inside a module "weight" before "bias", as nn.Linear and nn.LayerNorm register them. Order inside
//     a numbered block stays a guess, but a block is never split, so it does not move the map;
//   - a numbered list's items (layers.N, h.N, blocks.N) become no-split "Block"s;
//   - bool tensors and the usual buffer names (inv_freq, masked_bias, position_ids) become buffers,
//     since they are never trained and Accelerate counts a bool at 1/8 byte;
//   - class names from shapes ("Embedding", "Linear", "Norm"), which the memory model and lint read.

#include "engine/plan/naturalorder.h"
#include "engine/plan/planmodel.h"

#include "engine/core/error.h"
#include "engine/io/safetensorsheader.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <memory>

namespace engine::plan {
namespace {

bool isNumber(const std::string &s)
{
    return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)); });
}

bool isBufferName(const std::string &local, const std::string &dtype)
{
    return dtype == "bool" || local == "inv_freq" || local == "masked_bias" || local == "position_ids";
}

bool isEmbeddingName(const std::string &local)
{
    return local.find("emb") != std::string::npos || local == "wte" || local == "wpe";
}

// A module while the names are read: children by local name, so 1,000s of tensors insert in n log n.
struct Draft {
    std::map<std::string, std::unique_ptr<Draft>> children;
    std::vector<model::ParameterInfo> parameters;
    std::vector<model::BufferInfo> buffers;
    int64_t numel = 0; // of the subtree, for ordering embeddings
};

bool isTensorOf(const Draft &d, const std::string &local)
{
    const auto named = [&](const auto &t) { return t.name == local; };
    return std::any_of(d.parameters.begin(), d.parameters.end(), named)
        || std::any_of(d.buffers.begin(), d.buffers.end(), named);
}

void insert(Draft &root, const io::TensorInfo &t, const std::string &dtype)
{
    Draft *node = &root;
    size_t start = 0;
    std::vector<int64_t> shape(t.shape.begin(), t.shape.end());
    const int64_t numel = model::numelOf(shape);
    for (size_t dot = t.name.find('.'); dot != std::string::npos; dot = t.name.find('.', start)) {
        node->numel += numel;
        const std::string part = t.name.substr(start, dot - start);
        if (isTensorOf(*node, part))
            throw invalidInput("tensor \"" + t.name + "\" cannot be placed in a module tree: \""
                               + t.name.substr(0, dot) + "\" is a tensor too, so the names do not nest");
        std::unique_ptr<Draft> &child = node->children[part];
        if (!child)
            child = std::make_unique<Draft>();
        node = child.get();
        start = dot + 1;
    }
    node->numel += numel;
    const std::string local = t.name.substr(start);
    if (local.empty() || node->children.count(local))
        throw invalidInput("tensor \"" + t.name + "\" cannot be placed in a module tree: "
                           + (local.empty() ? std::string("its name ends with a dot")
                                            : "another tensor's name continues it (\"" + t.name + ".…\")"));
    if (isBufferName(local, dtype))
        node->buffers.push_back({local, std::move(shape), dtype, true});
    else
        node->parameters.push_back({local, std::move(shape), dtype, {}});
}

bool isNumberedList(const Draft &d)
{
    return !d.children.empty() && d.parameters.empty()
        && std::all_of(d.children.begin(), d.children.end(), [](const auto &c) { return isNumber(c.first); });
}

// 0 embeddings, 1 numbered lists, 2 the rest, 3 the output head (top level only).
int siblingRank(const std::string &local, const Draft &d, bool topLevel)
{
    if (topLevel && isOutputHeadName(local))
        return 3;
    if (isEmbeddingName(local))
        return 0;
    return isNumberedList(d) ? 1 : 2;
}

std::string classNameOf(const std::string &local, const Draft &d, bool inList, bool outputHead)
{
    if (inList)
        return "Block";
    if (isNumberedList(d))
        return "ModuleList";
    if (!d.children.empty())
        return "Module";
    const auto weight = std::find_if(d.parameters.begin(), d.parameters.end(), [](const auto &p) { return p.name == "weight"; });
    if (weight == d.parameters.end())
        return "Module";
    if (weight->shape.size() == 2)
        return isEmbeddingName(local) && !outputHead && d.parameters.size() == 1 ? "Embedding" : "Linear"; // embed_out
    return weight->shape.size() == 1 ? "Norm" : "Module";
}

void orderParameters(std::vector<model::ParameterInfo> &parameters)
{
    std::sort(parameters.begin(), parameters.end(), [](const auto &a, const auto &b) {
        if ((a.name == "weight") != (b.name == "weight"))
            return a.name == "weight";
        return naturalLess(a.name, b.name);
    });
}

model::ModuleNode build(Draft &d, const std::string &name, const std::string &local, bool inList)
{
    const bool outputHead = name == local && isOutputHeadName(local); // top level
    model::ModuleNode node{name, classNameOf(local, d, inList, outputHead), std::move(d.parameters), {}, inList};
    orderParameters(node.parameters);
    node.buffers = std::move(d.buffers);
    std::vector<std::pair<const std::string *, Draft *>> kids;
    for (auto &[childLocal, child] : d.children)
        kids.emplace_back(&childLocal, child.get());
    const bool topLevel = name.empty();
    std::stable_sort(kids.begin(), kids.end(), [&](const auto &a, const auto &b) {
        const int ra = siblingRank(*a.first, *a.second, topLevel), rb = siblingRank(*b.first, *b.second, topLevel);
        if (ra != rb)
            return ra < rb;
        if (ra == 0 && a.second->numel != b.second->numel) // the token embedding before position embeddings
            return a.second->numel > b.second->numel;
        return naturalLess(*a.first, *b.first);
    });
    const bool list = isNumberedList(d);
    for (auto &[childLocal, child] : kids)
        node.children.push_back(build(*child, name.empty() ? *childLocal : name + "." + *childLocal, *childLocal, list));
    return node;
}

// The dtype most tensors have (ties: the first name in sort order), float32 when none is a float.
std::string majorityDtype(const std::vector<io::TensorInfo> &tensors)
{
    std::map<std::string, int> votes;
    for (const io::TensorInfo &t : tensors)
        ++votes[torchDtypeName(std::string(io::dtypeName(t.dtype)))];
    std::string best = "float32";
    int most = 0;
    for (const auto &[dtype, count] : votes) {
        if (count > most && model::dtypeSize(dtype) > 0) {
            most = count;
            best = dtype;
        }
    }
    return best;
}

bool anyBlock(const model::ModuleNode &node)
{
    return node.noSplit || std::any_of(node.children.begin(), node.children.end(), anyBlock);
}

} // namespace

bool isOutputHeadName(const std::string &topLevelName)
{
    return topLevelName == "lm_head" || topLevelName == "head" || topLevelName == "output" || topLevelName == "embed_out";
}

model::ModuleTree moduleTreeFromTensors(const std::vector<io::TensorInfo> &tensors)
{
    Draft root;
    for (const io::TensorInfo &t : tensors)
        insert(root, t, torchDtypeName(std::string(io::dtypeName(t.dtype))));
    model::ModuleTree tree;
    tree.modelType = "unknown";
    tree.dtype = majorityDtype(tensors);
    tree.root = build(root, "", "", false);
    tree.root.className = "PreTrainedModel";
    if (anyBlock(tree.root))
        tree.noSplitClasses = {"Block"};
    return tree;
}

} // namespace engine::plan
