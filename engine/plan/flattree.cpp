#include "engine/plan/flattree.h"

#include <algorithm>
#include <functional>

namespace engine::plan {
namespace {

// Bytes per element and whether it is floating, for the dtype names a tree can hold.
void dtypeTraits(const std::string &dtype, int64_t &bytes, bool &isFloat)
{
    isFloat = true;
    bytes = model::dtypeSize(dtype);
    if (bytes != 0)
        return;
    isFloat = false;
    if (dtype == "int8" || dtype == "uint8" || dtype == "bool")
        bytes = 1;
    else if (dtype == "int16")
        bytes = 2;
    else if (dtype == "int32")
        bytes = 4;
    else if (dtype == "int64")
        bytes = 8;
    else if (dtype.rfind("float8", 0) == 0) {
        bytes = 1;
        isFloat = true;
    } else
        bytes = 4;
}

TensorBytes tensorBytes(const std::vector<int64_t> &shape, const std::string &dtype)
{
    TensorBytes t;
    t.numel = model::numelOf(shape);
    dtypeTraits(dtype, t.elementBytes, t.isFloat);
    t.isBool = dtype == "bool";
    return t;
}

} // namespace

int64_t TensorBytes::bytes(int64_t targetBytes) const
{
    if (isBool)
        return (numel + 7) / 8;
    if (targetBytes > 0 && isFloat)
        return numel * std::min(elementBytes, targetBytes);
    return numel * elementBytes;
}

int64_t FlatNode::bufferBytes(int64_t targetBytes) const
{
    int64_t total = 0;
    for (const Buffer &b : buffers)
        total += b.size.bytes(targetBytes);
    return total;
}

int64_t TensorBytes::loadedBytes(int64_t targetBytes) const
{
    if (isBool)
        return (numel + 7) / 8;
    if (targetBytes > 0 && isFloat && elementBytes >= 2)
        return numel * targetBytes;
    return numel * elementBytes;
}

int FlatTree::find(std::string_view name) const
{
    const auto it = byName.find(std::string(name));
    return it == byName.end() ? -1 : it->second;
}

FlatTree flatten(const model::ModuleTree &tree)
{
    FlatTree flat;
    flat.tiedGroups = tree.tiedParameters;
    const std::function<int(const model::ModuleNode &, int)> visit = [&](const model::ModuleNode &module, int parent) {
        const int index = static_cast<int>(flat.nodes.size());
        FlatNode node;
        node.name = module.name;
        node.localName = module.name.substr(module.name.rfind('.') == std::string::npos ? 0 : module.name.rfind('.') + 1);
        node.className = module.className;
        node.parent = parent;
        for (const model::BufferInfo &b : module.buffers)
            node.buffers.push_back({b.name, tensorBytes(b.shape, b.dtype)});
        flat.nodes.push_back(std::move(node));
        for (const model::ParameterInfo &p : module.parameters) {
            FlatNode param;
            param.name = module.name.empty() ? p.name : module.name + "." + p.name;
            param.localName = p.name;
            param.className = "Parameter";
            param.parent = index;
            param.isParam = true;
            param.shape = p.shape;
            const TensorBytes traits = tensorBytes(p.shape, p.dtype);
            param.numel = traits.numel;
            param.elementBytes = traits.elementBytes;
            param.isFloat = traits.isFloat;
            param.tiedDuplicate = !p.tiedTo.empty();
            const int paramIndex = static_cast<int>(flat.nodes.size());
            param.end = paramIndex + 1;
            flat.nodes.push_back(std::move(param));
            flat.nodes[index].items.push_back(paramIndex);
        }
        for (const model::ModuleNode &child : module.children) {
            const int childIndex = visit(child, index);
            flat.nodes[index].items.push_back(childIndex);
            flat.nodes[index].childModules.push_back(childIndex);
        }
        flat.nodes[index].end = static_cast<int>(flat.nodes.size());
        return index;
    };
    visit(tree.root, -1);
    flat.byName.reserve(flat.nodes.size());
    for (size_t i = 0; i < flat.nodes.size(); ++i)
        flat.byName.emplace(flat.nodes[i].name, static_cast<int>(i));
    return flat;
}

std::vector<int64_t> moduleSizes(const FlatTree &tree, int64_t targetBytes)
{
    std::vector<int64_t> sizes(tree.nodes.size(), 0);
    for (size_t i = tree.nodes.size(); i-- > 0;) {
        const FlatNode &node = tree.nodes[i];
        if (node.isParam && !node.tiedDuplicate)
            sizes[i] = TensorBytes{node.numel, node.elementBytes, node.isFloat, false}.loadedBytes(targetBytes);
        sizes[i] += node.bufferBytes(targetBytes);
        if (node.parent >= 0)
            sizes[node.parent] += sizes[i];
    }
    return sizes;
}

} // namespace engine::plan
