// The rules below follow accelerate/utils/modeling.py (infer_auto_device_map, get_balanced_memory,
// get_max_layer_size, get_module_size_with_ties, clean_device_map, compute_module_sizes); each step
// names the rule it keeps. Our own code, written from the published algorithm.

#include "engine/plan/accelerate.h"

#include <algorithm>
#include <limits>
#include <optional>
#include <set>

namespace engine::plan {
namespace {

// get_max_layer_size: walk `items` depth first; a "layer" is a parameter, a module without child
// modules, or a no-split module; return the largest size and every item of that size.
int64_t maxLayer(const AutoMapInput &in, const std::vector<int> &queueReversed, bool modulesOnly, std::vector<int> &names)
{
    const FlatTree &t = *in.tree;
    int64_t best = 0;
    names.clear();
    std::vector<int> stack;
    for (const int item : queueReversed) { // back of queueReversed = head: push in reverse keeps head on top
        if (!modulesOnly || !t.nodes[item].isParam)
            stack.push_back(item);
    }
    while (!stack.empty()) {
        const int n = stack.back();
        stack.pop_back();
        const FlatNode &node = t.nodes[n];
        if (node.isParam || node.childModules.empty() || in.noSplit[n]) {
            const int64_t size = in.sizes[n];
            if (size > best) {
                best = size;
                names.assign(1, n);
            } else if (size == best) {
                names.push_back(n);
            }
        } else {
            for (auto it = node.childModules.rbegin(); it != node.childModules.rend(); ++it)
                stack.push_back(*it);
        }
    }
    return best;
}

bool containsDotted(const std::string &name, const std::string &param)
{
    // Accelerate tests `name + "." in param + "."` (a substring test, not a prefix test).
    return (param + ".").find(name + ".") != std::string::npos;
}

// Tied parameters outside `item` whose partner is inside it (infer_auto_device_map's tied_params).
std::vector<int> tiedOutside(const FlatTree &t, int item)
{
    const std::string &name = t.nodes[item].name;
    std::vector<int> tiedParams;
    for (const std::vector<std::string> &group : t.tiedGroups) {
        bool any = false, all = true;
        for (const std::string &k : group) {
            const bool inside = containsDotted(name, k);
            any = any || inside;
            all = all && inside;
        }
        if (!any || all)
            continue;
        for (const std::string &k : group) {
            if (!containsDotted(name, k)) {
                const int p = t.find(k);
                if (p >= 0)
                    tiedParams.push_back(p);
            }
        }
    }
    return tiedParams;
}

// get_module_size_with_ties: `size` plus, per tied parameter, the size of the first entry of [first, last)
// (head first) that holds it, less the parameter's own; those entries go to `holders`.
template <typename It>
int64_t sizeWithTies(const AutoMapInput &in, int64_t size, const std::vector<int> &tiedParams, It first, It last,
                     std::vector<int> &holders)
{
    const FlatTree &t = *in.tree;
    holders.clear();
    for (const int p : tiedParams) {
        for (It it = first; it != last; ++it) {
            const int n = *it;
            if (n != p && n != 0 && t.within(p, n)) { // tied_param.startswith(n + ".")
                holders.push_back(n);
                size += in.sizes[n] - in.sizes[p];
                break;
            }
        }
    }
    return size;
}

// fallback_allocate's search: the first entry of `modules` (head first), looking depth first into the
// parameters and children of the entries that may be split, whose size with ties is at most `limit`;
// -1 when none is (or when `limit` is negative: Accelerate's size check refuses it).
int fallbackFind(const AutoMapInput &in, const std::vector<int> &modules, int64_t limit)
{
    if (limit < 0)
        return -1;
    const FlatTree &t = *in.tree;
    std::vector<int> search(modules.rbegin(), modules.rend()); // reversed: back() is the head
    std::vector<int> holders;
    while (!search.empty()) {
        const int n = search.back();
        search.pop_back();
        if (sizeWithTies(in, in.sizes[n], tiedOutside(t, n), search.rbegin(), search.rend(), holders) <= limit)
            return n;
        const FlatNode &node = t.nodes[n];
        if (node.isParam || node.childModules.empty() || in.noSplit[n])
            continue;
        for (auto c = node.items.rbegin(); c != node.items.rend(); ++c)
            search.push_back(*c);
    }
    return -1;
}

// `modules` (head first) without `found`: each of its ancestors that is an entry is first replaced by its
// direct parameters and children, the shallowest first, as fallback_allocate does.
std::vector<int> withoutFound(const FlatTree &t, std::vector<int> modules, int found)
{
    std::vector<int> ancestors;
    for (int a = t.nodes[found].parent; a > 0; a = t.nodes[a].parent)
        ancestors.push_back(a);
    for (auto a = ancestors.rbegin(); a != ancestors.rend(); ++a) {
        const auto it = std::find(modules.begin(), modules.end(), *a);
        if (it == modules.end())
            continue;
        const auto pos = it - modules.begin();
        modules.erase(it);
        modules.insert(modules.begin() + pos, t.nodes[*a].items.begin(), t.nodes[*a].items.end());
    }
    modules.erase(std::find(modules.begin(), modules.end(), found));
    return modules;
}

} // namespace

std::vector<int> tiedParamsOutside(const FlatTree &tree, int item) { return tiedOutside(tree, item); }

std::vector<char> noSplitFlags(const FlatTree &tree, const std::vector<std::string> &classes)
{
    std::vector<char> flags(tree.nodes.size(), 0);
    for (size_t i = 0; i < tree.nodes.size(); ++i) {
        const FlatNode &n = tree.nodes[i];
        flags[i] = !n.isParam && std::find(classes.begin(), classes.end(), n.className) != classes.end();
    }
    return flags;
}

std::vector<int64_t> plainMemory(const std::vector<DeviceSpec> &devices)
{
    std::vector<int64_t> out;
    for (const DeviceSpec &d : devices)
        out.push_back(d.kind == DeviceKind::Disk ? -1 : d.budget);
    return out;
}

std::vector<int64_t> balancedMemory(const AutoMapInput &in, const std::vector<DeviceSpec> &devices, bool lowZero)
{
    const FlatTree &t = *in.tree;
    std::vector<int64_t> memory = plainMemory(devices);
    std::vector<int> gpus;
    for (size_t i = 0; i < devices.size(); ++i) {
        if (devices[i].isGpu() && devices[i].budget > 0)
            gpus.push_back(static_cast<int>(i));
    }
    if (gpus.empty())
        return memory;
    if (gpus.size() == 1)
        lowZero = false; // an explicit budget is given, so no 90 % rule
    const int64_t total = in.sizes[0];
    const int64_t perGpuBase = total / static_cast<int64_t>(lowZero ? gpus.size() - 1 : gpus.size());

    // The size of the first module of each no-split class, in compute_module_sizes' key order (the
    // order parameters first reach a module: preorder, skipping modules with nothing counted; a module
    // that holds only buffers would come after all of those, and no no-split class here is one).
    int64_t buffer = 0;
    {
        std::set<std::string> seen;
        for (size_t i = 1; i < t.nodes.size(); ++i) {
            const FlatNode &n = t.nodes[i];
            if (n.isParam || !in.noSplit[i] || seen.count(n.className))
                continue;
            bool counted = false; // a key of module_sizes: holds a parameter that is not a tied duplicate
            t.forEachParam(static_cast<int>(i), [&](int p) { counted = counted || !t.nodes[p].tiedDuplicate; });
            if (!counted)
                continue;
            seen.insert(n.className);
            buffer = std::max(buffer, in.sizes[i]);
        }
    }
    // Mean of the "final modules": after dropping the tensors (the leaves of module_sizes), the
    // modules none of whose child modules hold a counted tensor (a parameter that is not a tied
    // duplicate, or a buffer: named_module_tensors yields both).
    int64_t leafSum = 0, leafCount = 0;
    {
        std::vector<char> counted(t.nodes.size(), 0);
        for (size_t i = t.nodes.size(); i-- > 0;) {
            const FlatNode &n = t.nodes[i];
            if (n.isParam)
                counted[i] = !n.tiedDuplicate;
            if (!n.buffers.empty())
                counted[i] = 1;
            if (counted[i] && n.parent >= 0)
                counted[n.parent] = 1;
        }
        for (size_t i = 1; i < t.nodes.size(); ++i) {
            const FlatNode &n = t.nodes[i];
            if (n.isParam || !counted[i])
                continue;
            bool hasCountedChildModule = false;
            for (const int c : n.childModules)
                hasCountedChildModule = hasCountedChildModule || counted[c];
            if (!hasCountedChildModule) {
                leafSum += in.sizes[i];
                ++leafCount;
            }
        }
    }
    const int64_t meanLeaves = static_cast<int64_t>(static_cast<double>(leafSum) / static_cast<double>(std::max<int64_t>(leafCount, 1)));
    buffer = static_cast<int64_t>(1.25 * static_cast<double>(std::max(buffer, meanLeaves)));
    const int64_t perGpu = perGpuBase + buffer;

    // Every GPU but the last gets min(per_gpu, its budget); with low_zero, GPU 0 keeps its own here.
    for (size_t k = 0; k + 1 < gpus.size(); ++k) {
        const int idx = gpus[k];
        const int64_t cap = (lowZero && devices[idx].index == 0) ? memory[gpus[0]] : perGpu;
        memory[idx] = std::min(cap, memory[idx]);
    }
    if (lowZero) {
        int64_t others = 0;
        for (size_t k = 1; k < gpus.size(); ++k)
            others += memory[gpus[k]];
        const int64_t minZero = std::max<int64_t>(0, total - others);
        memory[gpus[0]] = std::min(minZero, memory[gpus[0]]);
    }
    return memory;
}

AutoMapResult inferAutoDeviceMap(const AutoMapInput &in, const std::vector<DeviceSpec> &devicesIn,
                                 const std::vector<int64_t> &budgetsIn)
{
    const FlatTree &t = *in.tree;
    AutoMapResult result;
    result.devices = devicesIn;
    result.budgets = budgetsIn;
    if (result.devices.empty() || result.devices.back().kind != DeviceKind::Disk) {
        DeviceSpec disk;
        disk.kind = DeviceKind::Disk;
        disk.name = "disk";
        result.devices.push_back(disk);
        result.budgets.push_back(-1);
    }
    const std::vector<DeviceSpec> &devices = result.devices;
    std::vector<char> mainDevice(devices.size(), 0);
    {
        int firstGpu = -1, cpu = -1;
        for (size_t i = 0; i < devices.size(); ++i) {
            if (devices[i].isGpu() && firstGpu < 0)
                firstGpu = static_cast<int>(i);
            if (devices[i].kind == DeviceKind::Cpu)
                cpu = static_cast<int>(i);
        }
        if (firstGpu >= 0)
            mainDevice[firstGpu] = 1;
        if (cpu >= 0)
            mainDevice[cpu] = 1;
    }
    result.deviceOfNode.assign(t.nodes.size(), -1);

    // The queue, reversed: back() is the head.
    std::vector<int> queue(t.nodes[0].items.rbegin(), t.nodes[0].items.rend());
    const auto prepend = [&](const std::vector<int> &items) {
        for (auto it = items.rbegin(); it != items.rend(); ++it)
            queue.push_back(*it);
    };
    std::vector<int64_t> used(devices.size(), 0);
    size_t current = 0;
    std::vector<int> maxNames;
    int64_t maxLayerSize = maxLayer(in, queue, false, maxNames);


    while (!queue.empty()) {
        const int item = queue.back();
        queue.pop_back();
        maxNames.erase(std::remove_if(maxNames.begin(), maxNames.end(), [&](int n) { return t.within(n, item); }),
                       maxNames.end());
        if (maxNames.empty())
            maxLayerSize = maxLayer(in, queue, true, maxNames);
        const int64_t moduleSize = in.sizes[item];
        const std::vector<int> tiedParams = tiedOutside(t, item);

        const bool unbounded = result.budgets[current] < 0;
        int64_t maxSize = unbounded ? 0 : result.budgets[current];
        int64_t reserved = 0;
        if (mainDevice[current] && in.reserveMainDevices) {
            maxSize -= maxLayerSize;
            reserved = maxLayerSize;
        }
        std::vector<int> tiedHolders; // queue entries (node ids)
        const int64_t withTies = sizeWithTies(in, moduleSize, tiedParams, queue.rbegin(), queue.rend(), tiedHolders);

        if (unbounded || used[current] + withTies <= maxSize) {
            used[current] += withTies;
            result.placed.push_back({item, static_cast<int>(current), unbounded ? -1 : maxSize - (used[current] - withTies)});
            for (const int holder : tiedHolders) {
                const auto it = std::find(queue.begin(), queue.end(), holder);
                if (it != queue.end())
                    queue.erase(it);
                result.placed.push_back({holder, static_cast<int>(current), unbounded ? -1 : maxSize - used[current]});
            }
            continue;
        }

        if (!tiedParams.empty() && used[current] + moduleSize <= maxSize) {
            bool split = false;
            for (const int holder : tiedHolders) {
                const FlatNode &h = t.nodes[holder];
                if (h.isParam || h.childModules.empty() || in.noSplit[holder])
                    continue;
                // [item] + queue[:idx] + children(holder) + queue[idx+1:]
                const auto it = std::find(queue.begin(), queue.end(), holder);
                const size_t pos = static_cast<size_t>(it - queue.begin());
                std::vector<int> replaced(queue.begin(), queue.begin() + static_cast<long>(pos));
                for (auto c = h.items.rbegin(); c != h.items.rend(); ++c)
                    replaced.push_back(*c);
                replaced.insert(replaced.end(), queue.begin() + static_cast<long>(pos) + 1, queue.end());
                replaced.push_back(item);
                queue = std::move(replaced);
                maxLayerSize = maxLayer(in, queue, true, maxNames);
                split = true;
                break;
            }
            if (split)
                continue;
        }

        if (used[current] + moduleSize >= maxSize) {
            const FlatNode &node = t.nodes[item];
            if (!(node.isParam || node.childModules.empty() || in.noSplit[item])) {
                prepend(node.items);
                maxLayerSize = maxLayer(in, queue, true, maxNames);
                continue;
            }
        }

        // fallback_allocation: nothing placed here yet, so first place a module further on that fits.
        if (in.fallbackAllocation && used[current] == 0 && devices[current].kind != DeviceKind::Disk) {
            std::vector<int> modules(queue.rbegin(), queue.rend());
            const int found = fallbackFind(in, modules, result.budgets[current] - std::max(maxLayerSize, withTies));
            if (found >= 0) {
                modules = withoutFound(t, std::move(modules), found);
                queue.assign(modules.rbegin(), modules.rend());
                queue.push_back(item);
                queue.push_back(found);
                continue;
            }
        }

        result.skips.push_back({static_cast<int>(current), item, withTies, maxSize - used[current], reserved,
                                used[current] == 0, result.placed.size()});
        used[current] += reserved;
        ++current;
        queue.push_back(item);
        if (current >= devices.size()) // cannot happen: disk is unbounded
            break;
    }
    for (const PlacedItem &p : result.placed) {
        for (int i = p.node; i < t.nodes[p.node].end; ++i)
            result.deviceOfNode[i] = p.device;
    }
    return result;
}

namespace {

void cleanInto(const FlatTree &t, int node, const std::vector<int> &placedDevice, const std::vector<int> &count,
               const std::vector<int> &uniform, std::vector<MapEntry> &out)
{
    if (count[node] > 1 && uniform[node] >= 0) {
        out.push_back({t.nodes[node].name, uniform[node]});
        return;
    }
    for (const int c : t.nodes[node].items) {
        if (placedDevice[c] >= 0)
            out.push_back({t.nodes[c].name, placedDevice[c]});
        else if (count[c] > 0)
            cleanInto(t, c, placedDevice, count, uniform, out);
    }
}

} // namespace

std::vector<MapEntry> cleanDeviceMap(const FlatTree &t, const std::vector<PlacedItem> &placed)
{
    std::vector<int> placedDevice(t.nodes.size(), -1);
    std::vector<int> count(t.nodes.size(), 0);
    std::vector<int> uniform(t.nodes.size(), -2); // -2 none yet, -1 mixed
    for (const PlacedItem &p : placed) {
        placedDevice[p.node] = p.device;
        for (int a = t.nodes[p.node].parent; a >= 0; a = t.nodes[a].parent) {
            ++count[a];
            uniform[a] = uniform[a] == -2 ? p.device : (uniform[a] == p.device ? p.device : -1);
        }
    }
    std::vector<MapEntry> out;
    if (placedDevice[0] >= 0)
        return {{"", placedDevice[0]}};
    cleanInto(t, 0, placedDevice, count, uniform, out);
    return out;
}

std::vector<int> devicesOfNodes(const FlatTree &t, const std::vector<MapEntry> &map)
{
    std::vector<int> out(t.nodes.size(), -1);
    for (const MapEntry &e : map) {
        const int n = t.find(e.module);
        if (n < 0)
            continue;
        for (int i = n; i < t.nodes[n].end; ++i)
            out[i] = e.device;
    }
    return out;
}

std::vector<MapEntry> coarsestMap(const FlatTree &t, const std::vector<int> &deviceOfNode)
{
    // uniform[i]: the device of every node in the subtree, -1 mixed or unplaced.
    std::vector<int> uniform(t.nodes.size(), -1);
    for (size_t i = t.nodes.size(); i-- > 0;) {
        const std::vector<int> &items = t.nodes[i].items;
        int u = items.empty() ? deviceOfNode[i] : uniform[items.front()];
        for (const int c : items) {
            if (uniform[c] != u) {
                u = -1;
                break;
            }
        }
        uniform[i] = u;
    }
    std::vector<MapEntry> out;
    std::vector<int> stack{0};
    while (!stack.empty()) {
        const int n = stack.back();
        stack.pop_back();
        if (uniform[n] >= 0) {
            out.push_back({t.nodes[n].name, uniform[n]});
            continue;
        }
        const std::vector<int> &items = t.nodes[n].items;
        for (auto it = items.rbegin(); it != items.rend(); ++it) {
            if (!t.nodes[*it].isParam || deviceOfNode[*it] >= 0)
                stack.push_back(*it);
        }
    }
    return out;
}

} // namespace engine::plan
