#pragma once
// The one accounting of a plan: what each device holds at each phase of a training step, from which
// parts of the model it holds. The training placement asks it whether a module still fits on a device,
// and the verdict, the table and every explanation read the same figures from it, so that a plan never
// says a module did not fit where its own table shows room. Torch-free.
//
// How to use:
//   DeviceLedger ledger(flat, costs, devices, settings);
//   ledger.assign(node, device);                         // a subtree (preorder range) onto a device
//   DeviceUsage now = ledger.usage(device);              // peak, phase, breakdown (no verdict text)
//   DeviceUsage tried = ledger.usageWith(device, {n});   // as if subtree n were there too
//
// A device's usage at each phase (docs/memory-estimate.md has the formulas of each term):
//   load/forward  weights + LoRA + optimizer state + saved activations + logits (+ runtime overhead)
//   backward      the start of backward (logits and their gradients, or the head's weight gradient)
//                 or, walking the blocks from the last, the worst block: what forward saved up to its
//                 end, the gradients of every parameter from it on, its recompute and working set
//   optimizer     weights + LoRA + gradients + optimizer state + AdamW's temporaries
// Layers on disk compute on the CPU: their activations count there. The runtime overhead (CUDA
// context and allocator on a GPU; libtorch's code and allocator caches in the process on the CPU)
// counts on every GPU that holds part of the model and on the CPU, in training plans.

#include "engine/plan/flattree.h"
#include "engine/plan/memorymodel.h"
#include "engine/plan/plan.h"

#include <cstdint>
#include <vector>

namespace engine::plan {

/// The nodes [begin, end) of the flat tree (preorder indices): a subtree, or a run of them.
struct NodeRange {
    int begin = 0;
    int end = 0;
};

class DeviceLedger {
public:
    DeviceLedger(const FlatTree &tree, const NodeCosts &costs, std::vector<DeviceSpec> devices,
                 const PlanSettings &settings);

    /// Puts the subtree of `node` on `device`.
    void assign(int node, int device);
    /// Puts the nodes of `range` on `device` (nodes already placed elsewhere move).
    void assignRange(NodeRange range, int device);
    /// Builds the ledger of a whole assignment (per node device, -1 = nowhere).
    void assignAll(const std::vector<int> &deviceOfNode);

    /// What `device` holds now: breakdown at its peak, the phase, and the three phase totals. The verdict
    /// fields are left empty (the planner words them).
    DeviceUsage usage(int device) const;
    /// The same, as if the subtrees of `nodes` were on `device` too.
    DeviceUsage usageWith(int device, const std::vector<int> &nodes) const;

    /// Device of a node, -1 if unplaced.
    int deviceOf(int node) const { return m_deviceOfNode[static_cast<size_t>(node)]; }
    const std::vector<int> &deviceOfNode() const { return m_deviceOfNode; }
    const std::vector<DeviceSpec> &devices() const { return m_devices; }
    /// Where a device's layers compute (disk -> cpu when there is one).
    int executionDevice(int device) const { return m_exec[static_cast<size_t>(device)]; }
    /// Whether anything in the subtree of `node` is trained (parameters, LoRA adapters).
    bool trainsAnything(int node) const;

private:
    struct Sums; // the per-node quantities summed over a set of ranges
    void rebuildRuns(int device);
    DeviceUsage compute(int device, const std::vector<NodeRange> &extra) const;

    const FlatTree &m_tree;
    const NodeCosts &m_costs;
    std::vector<DeviceSpec> m_devices;
    PlanSettings m_settings;
    std::vector<int> m_exec;
    std::vector<int> m_deviceOfNode;
    std::vector<std::vector<NodeRange>> m_runs; // per device, sorted, maximal
    // Prefix sums over preorder (index i: sum over nodes < i).
    std::vector<int64_t> m_weights, m_lora, m_grads, m_optimizer, m_saved, m_logitsF, m_logitsB, m_trained;
    std::vector<int64_t> m_subtreeTemp; // max optimizer temporary within each subtree
    std::vector<int> m_blocks;          // block nodes, ascending
    std::vector<int> m_heads;           // nodes holding the output head's logits
};

} // namespace engine::plan
