#pragma once
// A module tree flattened into one array in preorder (a module, then its direct parameters, then its
// children), the shape Accelerate's planner walks. Parameters are nodes too, because Accelerate
// places a split module's direct parameters one by one. Built once per model; torch-free.

#include "engine/model/moduletree.h"

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace engine::plan {

/// One module or parameter.
struct FlatNode {
    std::string name;            ///< full name ("" for the root)
    std::string localName;       ///< last component
    std::string className;       ///< module class; "Parameter" for parameters
    int parent = -1;
    int end = 0;                 ///< one past the last node of this subtree (preorder interval)
    bool isParam = false;
    std::vector<int> items;      ///< Accelerate's split order: direct parameters, then child modules
    std::vector<int> childModules;
    // Parameters only:
    std::vector<int64_t> shape;
    int64_t numel = 0;
    int64_t elementBytes = 0;    ///< of its stored dtype
    bool isFloat = true;         ///< integer/bool tensors are never converted (Accelerate keeps their size)
    bool tiedDuplicate = false;  ///< shares another parameter's storage and comes later: size 0
};

/// The flattened tree plus lookups.
struct FlatTree {
    std::vector<FlatNode> nodes; ///< nodes[0] is the root
    std::vector<std::vector<std::string>> tiedGroups;
    std::unordered_map<std::string, int> byName;

    /// Node index of `name`, or -1.
    int find(std::string_view name) const;
    /// `inner` is `outer` or inside it.
    bool within(int inner, int outer) const { return inner >= outer && inner < nodes[outer].end; }
    /// The parameters of the subtree of `node` (itself when a parameter).
    template <typename F> void forEachParam(int node, F &&f) const
    {
        for (int i = node; i < nodes[node].end; ++i) {
            if (nodes[i].isParam)
                f(i);
        }
    }
};

/// Flattens `tree`.
FlatTree flatten(const model::ModuleTree &tree);

/// Accelerate's compute_module_sizes for every node: numel × min(target, stored) bytes for floating
/// tensors (never upcast), stored bytes for integer ones, 0 for tied duplicates. `targetBytes` 0 = keep
/// each tensor's dtype.
std::vector<int64_t> moduleSizes(const FlatTree &tree, int64_t targetBytes);

} // namespace engine::plan
