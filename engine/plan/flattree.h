#pragma once
// A module tree flattened into one array in preorder (a module, then its direct parameters, then its
// children), the shape Accelerate's planner walks. Parameters are nodes too, because Accelerate
// places a split module's direct parameters one by one; buffers are not (Accelerate never places a
// split module's buffers by themselves): a module carries their sizes and they go where it goes.
// Built once per model; torch-free.

#include "engine/model/moduletree.h"

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace engine::plan {

/// A tensor's size traits, for Accelerate's compute_module_sizes.
struct TensorBytes {
    int64_t numel = 0;
    int64_t elementBytes = 0; ///< of its stored dtype (bool: 1, counted as 1/8)
    bool isFloat = true;      ///< integer/bool tensors are never converted (Accelerate keeps their size)
    bool isBool = false;

    /// Its size when loaded in a dtype of `targetBytes` per element (0 = keep its own): never upcast;
    /// bool at 1/8 byte an element, as accelerate's dtype_byte_size.
    int64_t bytes(int64_t targetBytes) const;
    /// Its size as a parameter of a model loaded in a dtype of `targetBytes` per element
    /// (`from_pretrained(torch_dtype=...)`; 0 = as stored): floating tensors take that dtype, up or down
    /// (float8 ones stay); integer and bool ones keep theirs.
    int64_t loadedBytes(int64_t targetBytes) const;
};

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
    // Modules only:
    struct Buffer {
        std::string name; ///< local name
        TensorBytes size;
    };
    std::vector<Buffer> buffers; ///< direct buffers

    /// Bytes of this module's direct buffers at `targetBytes` (see TensorBytes::bytes).
    int64_t bufferBytes(int64_t targetBytes) const;
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

/// Accelerate's compute_module_sizes for every node, on the model as loaded in the dtype of `targetBytes`
/// (TensorBytes::loadedBytes for parameters; buffers, which transformers keeps in their own dtype, at
/// numel × min(target, stored) as Accelerate counts them); 0 for tied duplicates; a module's size holds
/// its buffers. `targetBytes` 0 = keep each tensor's dtype.
std::vector<int64_t> moduleSizes(const FlatTree &tree, int64_t targetBytes);

} // namespace engine::plan
