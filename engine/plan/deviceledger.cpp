#include "engine/plan/deviceledger.h"

#include <algorithm>

namespace engine::plan {
namespace {

int64_t rangeSum(const std::vector<int64_t> &prefix, NodeRange r) { return prefix[r.end] - prefix[r.begin]; }

// Sorted union of disjoint ranges (no two overlap), adjacent ones merged.
std::vector<NodeRange> merged(std::vector<NodeRange> ranges)
{
    std::sort(ranges.begin(), ranges.end(), [](NodeRange a, NodeRange b) { return a.begin < b.begin; });
    std::vector<NodeRange> out;
    for (const NodeRange r : ranges) {
        if (!out.empty() && out.back().end == r.begin)
            out.back().end = r.end;
        else
            out.push_back(r);
    }
    return out;
}

// Sum of `prefix`'s quantity over the part of `runs` (sorted, disjoint) before node `x`.
int64_t sumBefore(const std::vector<NodeRange> &runs, const std::vector<int64_t> &cumulative,
                  const std::vector<int64_t> &prefix, int x)
{
    const auto it = std::lower_bound(runs.begin(), runs.end(), x, [](NodeRange r, int v) { return r.begin < v; });
    const size_t idx = static_cast<size_t>(it - runs.begin()); // runs [0, idx) start before x
    if (idx == 0)
        return 0;
    const NodeRange last = runs[idx - 1];
    return cumulative[idx - 1] + rangeSum(prefix, {last.begin, std::min(last.end, x)});
}

// cumulative[j]: the quantity over runs [0, j).
std::vector<int64_t> cumulativeOver(const std::vector<NodeRange> &runs, const std::vector<int64_t> &prefix)
{
    std::vector<int64_t> out(runs.size() + 1, 0);
    for (size_t j = 0; j < runs.size(); ++j)
        out[j + 1] = out[j] + rangeSum(prefix, runs[j]);
    return out;
}

std::vector<int64_t> prefixOf(const std::vector<int64_t> &values)
{
    std::vector<int64_t> out(values.size() + 1, 0);
    for (size_t i = 0; i < values.size(); ++i)
        out[i + 1] = out[i] + values[i];
    return out;
}

} // namespace

DeviceLedger::DeviceLedger(const FlatTree &tree, const NodeCosts &costs, std::vector<DeviceSpec> devices,
                           const PlanSettings &settings)
    : m_tree(tree), m_costs(costs), m_devices(std::move(devices)), m_settings(settings)
{
    const int cpu = findDevice(m_devices, "cpu");
    for (size_t i = 0; i < m_devices.size(); ++i)
        m_exec.push_back(m_devices[i].kind == DeviceKind::Disk && cpu >= 0 ? cpu : static_cast<int>(i));
    const size_t n = tree.nodes.size();
    m_deviceOfNode.assign(n, -1);
    m_runs.assign(m_devices.size(), {});
    m_weights = prefixOf(costs.weights);
    m_lora = prefixOf(costs.lora);
    m_grads = prefixOf(costs.gradients);
    m_optimizer = prefixOf(costs.optimizer);
    m_saved = prefixOf(costs.saved);
    m_logitsF = prefixOf(costs.logitsForward);
    m_logitsB = prefixOf(costs.logitsBackward);
    std::vector<int64_t> trained(n, 0);
    m_subtreeTemp = costs.optimizerTemp;
    for (size_t i = n; i-- > 0;) {
        trained[i] = costs.gradients[i] > 0 || costs.lora[i] > 0 ? 1 : 0;
        const int parent = tree.nodes[i].parent;
        if (parent >= 0)
            m_subtreeTemp[static_cast<size_t>(parent)] = std::max(m_subtreeTemp[static_cast<size_t>(parent)], m_subtreeTemp[i]);
        if (costs.block[i])
            m_blocks.push_back(static_cast<int>(i));
        if (costs.logitsForward[i] > 0)
            m_heads.push_back(static_cast<int>(i));
    }
    std::reverse(m_blocks.begin(), m_blocks.end());
    std::reverse(m_heads.begin(), m_heads.end());
    m_trained = prefixOf(trained);
}

bool DeviceLedger::trainsAnything(int node) const
{
    return rangeSum(m_trained, {node, m_tree.nodes[static_cast<size_t>(node)].end}) > 0;
}

void DeviceLedger::assign(int node, int device) { assignRange({node, m_tree.nodes[static_cast<size_t>(node)].end}, device); }

void DeviceLedger::assignRange(NodeRange range, int device)
{
    std::vector<char> touched(m_devices.size(), 0);
    touched[static_cast<size_t>(device)] = 1;
    bool wasPlaced = false;
    for (int i = range.begin; i < range.end; ++i) {
        int &d = m_deviceOfNode[static_cast<size_t>(i)];
        if (d >= 0) {
            touched[static_cast<size_t>(d)] = 1;
            wasPlaced = true;
        }
        d = device;
    }
    if (!wasPlaced) { // the common case (the placement walk): insert the range, no rescan
        std::vector<NodeRange> &runs = m_runs[static_cast<size_t>(device)];
        runs.push_back(range);
        runs = merged(std::move(runs));
        return;
    }
    for (size_t d = 0; d < touched.size(); ++d) {
        if (touched[d])
            rebuildRuns(static_cast<int>(d));
    }
}

void DeviceLedger::assignAll(const std::vector<int> &deviceOfNode)
{
    m_deviceOfNode = deviceOfNode;
    for (size_t d = 0; d < m_devices.size(); ++d)
        rebuildRuns(static_cast<int>(d));
}

void DeviceLedger::rebuildRuns(int device)
{
    std::vector<NodeRange> &runs = m_runs[static_cast<size_t>(device)];
    runs.clear();
    const int n = static_cast<int>(m_deviceOfNode.size());
    for (int i = 0; i < n; ++i) {
        if (m_deviceOfNode[static_cast<size_t>(i)] != device)
            continue;
        if (!runs.empty() && runs.back().end == i)
            ++runs.back().end;
        else
            runs.push_back({i, i + 1});
    }
}

DeviceUsage DeviceLedger::usage(int device) const { return compute(device, {}); }

DeviceUsage DeviceLedger::usageWith(int device, const std::vector<int> &nodes) const
{
    std::vector<NodeRange> extra;
    for (const int node : nodes)
        extra.push_back({node, m_tree.nodes[static_cast<size_t>(node)].end});
    return compute(device, extra);
}

DeviceUsage DeviceLedger::compute(int d, const std::vector<NodeRange> &extra) const
{
    const FlatTree &t = m_tree;
    const NodeCosts &c = m_costs;
    const DeviceSpec &spec = m_devices[static_cast<size_t>(d)];
    const bool training = m_settings.train != TrainMode::None;
    std::vector<NodeRange> own = m_runs[static_cast<size_t>(d)];
    own.insert(own.end(), extra.begin(), extra.end());
    own = merged(std::move(own));

    int64_t W = 0, L = 0, G = 0, O = 0, T = 0;
    for (const NodeRange r : own) {
        W += rangeSum(m_weights, r);
        L += rangeSum(m_lora, r);
        G += rangeSum(m_grads, r);
        O += rangeSum(m_optimizer, r);
        for (int i = r.begin; i < r.end;) { // the largest AdamW temporary: whole subtrees at a time
            const int end = t.nodes[static_cast<size_t>(i)].end;
            if (end <= r.end) {
                T = std::max(T, m_subtreeTemp[static_cast<size_t>(i)]);
                i = end;
            } else {
                T = std::max(T, c.optimizerTemp[static_cast<size_t>(i)]);
                ++i;
            }
        }
    }
    DeviceUsage u;
    u.device = spec;
    if (!training) {
        u.memory.weights = W;
        u.peakPhase = Phase::Load;
        u.peakBytes = W;
        return u;
    }

    // What computes here: this device's layers, and the disk's when this is the CPU.
    std::vector<NodeRange> computing;
    if (m_exec[static_cast<size_t>(d)] == d) {
        computing = own;
        for (size_t x = 0; x < m_devices.size(); ++x) {
            if (static_cast<int>(x) != d && m_exec[x] == d)
                computing.insert(computing.end(), m_runs[x].begin(), m_runs[x].end());
        }
        computing = merged(std::move(computing));
    }
    int64_t A = 0, Lf = 0, Lb = 0;
    for (const NodeRange r : computing) {
        A += rangeSum(m_saved, r);
        Lf += rangeSum(m_logitsF, r);
        Lb += rangeSum(m_logitsB, r);
    }

    const auto deviceOf = [&](int node) {
        for (const NodeRange r : extra) {
            if (node >= r.begin && node < r.end)
                return d;
        }
        return m_deviceOfNode[static_cast<size_t>(node)];
    };
    // Backward starts at the head: its weight gradient (a tied head's lands on its partner's device).
    int64_t H = 0, Htied = 0;
    if (m_settings.train == TrainMode::Full) {
        for (const int head : m_heads) {
            const int headDevice = deviceOf(head);
            if (headDevice < 0)
                continue;
            for (const int item : t.nodes[static_cast<size_t>(head)].items) {
                const FlatNode &p = t.nodes[static_cast<size_t>(item)];
                if (!p.isParam)
                    continue;
                int where = headDevice;
                if (p.tiedDuplicate) {
                    for (const auto &group : t.tiedGroups) {
                        if (std::find(group.begin(), group.end(), p.name) == group.end())
                            continue;
                        for (const std::string &other : group) {
                            const int o = t.find(other);
                            if (o >= 0 && !t.nodes[static_cast<size_t>(o)].tiedDuplicate && deviceOf(o) >= 0)
                                where = deviceOf(o);
                        }
                    }
                }
                if (where != d)
                    continue;
                H += p.numel * 4;
                if (p.tiedDuplicate)
                    Htied += p.numel * 4;
            }
        }
    }

    // Backward through the blocks computing here, walked from the last: while block k runs backward this
    // device holds what forward saved up to the end of k, the gradients of its parameters from k on (a tied
    // head's on its partner), k's recompute and working set, and the logits the caller still holds.
    MemoryBreakdown blocks;
    {
        const std::vector<int64_t> savedCum = cumulativeOver(computing, m_saved);
        const std::vector<int64_t> gradsCum = cumulativeOver(own, m_grads);
        for (const NodeRange r : computing) {
            auto k = std::lower_bound(m_blocks.begin(), m_blocks.end(), r.begin);
            for (; k != m_blocks.end() && *k < r.end; ++k) {
                const size_t b = static_cast<size_t>(*k);
                const int64_t savedUpTo = sumBefore(computing, savedCum, m_saved, t.nodes[b].end);
                const int64_t gradsBefore = sumBefore(own, gradsCum, m_grads, *k);
                const MemoryBreakdown at{W, L, G - gradsBefore + Htied, O, savedUpTo + c.recompute[b] + c.working[b],
                                         Lf / 2, 0};
                if (at.total() > blocks.total())
                    blocks = at;
            }
        }
    }

    const bool holdsModel = W + A + Lf > 0;
    const int64_t overhead = spec.kind == DeviceKind::Cpu || (spec.isGpu() && holdsModel) ? spec.overheadBytes : 0;
    const MemoryBreakdown fwd{W, L, 0, O, A, Lf, overhead};
    // Start of backward: every saved set, and the loss's tensors: the logits, log-probabilities and both
    // their gradients (Lf + Lb) in log_softmax's backward; then in the head's backward the logits, their
    // gradient and the head's weight gradient ((Lf + Lb) / 2 + H).
    MemoryBreakdown bwd{W, L, 0, O, A, Lf + Lb, overhead};
    if ((Lf + Lb) / 2 + H > Lf + Lb) {
        bwd.gradients = H;
        bwd.logits = (Lf + Lb) / 2;
    }
    blocks.overhead = overhead;
    if (blocks.total() > bwd.total())
        bwd = blocks;
    const MemoryBreakdown opt{W, L, G, O, T, 0, overhead};
    u.forwardBytes = fwd.total();
    u.backwardBytes = bwd.total();
    u.optimizerBytes = opt.total();
    u.memory = fwd;
    u.peakPhase = Phase::Forward;
    if (u.backwardBytes > u.memory.total()) {
        u.memory = bwd;
        u.peakPhase = Phase::Backward;
    }
    if (u.optimizerBytes > u.memory.total()) {
        u.memory = opt;
        u.peakPhase = Phase::OptimizerStep;
    }
    u.peakBytes = u.memory.total();
    return u;
}

} // namespace engine::plan
