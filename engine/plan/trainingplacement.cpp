#include "engine/plan/trainingplacement.h"

#include <algorithm>

namespace engine::plan {
namespace {

bool splittable(const FlatTree &t, const std::vector<char> &noSplit, int node)
{
    const FlatNode &n = t.nodes[static_cast<size_t>(node)];
    return !(n.isParam || n.childModules.empty() || noSplit[static_cast<size_t>(node)]);
}

// The queue entries (back() is the head) that hold the tied partners of `item`'s parameters.
std::vector<int> tiedHolders(const FlatTree &t, int item, const std::vector<int> &queue)
{
    std::vector<int> holders;
    for (const int p : tiedParamsOutside(t, item)) {
        for (auto it = queue.rbegin(); it != queue.rend(); ++it) {
            const int n = *it;
            if (n != p && n != 0 && t.within(p, n)) {
                if (std::find(holders.begin(), holders.end(), n) == holders.end())
                    holders.push_back(n);
                break;
            }
        }
    }
    return holders;
}

void removeFrom(std::vector<int> &queue, int node)
{
    const auto it = std::find(queue.begin(), queue.end(), node);
    if (it != queue.end())
        queue.erase(it);
}

} // namespace

int lastDeviceBeforeDisk(const std::vector<DeviceSpec> &devices)
{
    int last = -1;
    for (size_t i = 0; i < devices.size(); ++i) {
        if (devices[i].kind != DeviceKind::Disk)
            last = static_cast<int>(i);
    }
    return last;
}

std::vector<int64_t> trainingLimits(const FlatTree &tree, const NodeCosts &costs, const std::vector<DeviceSpec> &devices,
                                    const PlanSettings &settings)
{
    std::vector<int64_t> limits;
    for (const DeviceSpec &d : devices)
        limits.push_back(d.kind == DeviceKind::Disk || d.budget <= 0 ? -1 : d.budget);
    if (settings.strategy == Strategy::Sequential)
        return limits;
    std::vector<size_t> gpus;
    for (size_t i = 0; i < devices.size(); ++i) {
        if (devices[i].isGpu() && devices[i].budget > 0)
            gpus.push_back(i);
    }
    if (gpus.size() < 2)
        return limits;
    // The training peak of the whole model on one GPU, shared evenly (its runtime overhead is per GPU),
    // plus a quarter more than the largest block as slack, as Accelerate's get_balanced_memory shares sizes.
    DeviceSpec one = devices[gpus[0]];
    one.budget = 0;
    DeviceLedger whole(tree, costs, {one}, settings);
    whole.assign(0, 0);
    const int64_t overhead = one.overheadBytes;
    const int64_t peak = std::max<int64_t>(0, whole.usage(0).peakBytes - overhead);
    const std::vector<int64_t> sizes = costs.placementSizes(tree);
    int64_t largestBlock = 0;
    for (size_t i = 0; i < tree.nodes.size(); ++i) {
        if (costs.block[i])
            largestBlock = std::max(largestBlock, sizes[i]);
    }
    const bool lowZero = settings.strategy == Strategy::BalancedLow0;
    const int64_t shares = static_cast<int64_t>(lowZero ? gpus.size() - 1 : gpus.size());
    const int64_t perGpu = peak / shares + overhead + largestBlock + largestBlock / 4;
    for (size_t k = 0; k + 1 < gpus.size(); ++k) {
        if (!(lowZero && k == 0))
            limits[gpus[k]] = std::min(perGpu, limits[gpus[k]]);
    }
    if (lowZero) {
        int64_t others = 0;
        for (size_t k = 1; k < gpus.size(); ++k)
            others += limits[gpus[k]] - overhead;
        limits[gpus[0]] = std::min(std::max<int64_t>(0, peak - others), limits[gpus[0]]);
    }
    return limits;
}

TrainingPlacementResult placeForTraining(const FlatTree &t, const NodeCosts &costs, const std::vector<DeviceSpec> &devices,
                                         const PlanSettings &settings, const std::vector<char> &noSplit,
                                         const std::vector<int64_t> &limits)
{
    TrainingPlacementResult result;
    result.limits = limits;
    DeviceLedger ledger(t, costs, devices, settings);
    const int lastBeforeDisk = lastDeviceBeforeDisk(devices);
    std::vector<int> queue(t.nodes[0].items.rbegin(), t.nodes[0].items.rend()); // back() is the head
    size_t current = 0;
    const auto place = [&](const std::vector<int> &group, int device, int64_t freeBefore) {
        for (const int n : group) {
            removeFrom(queue, n);
            ledger.assign(n, device);
            result.placed.push_back({n, device, freeBefore});
        }
    };
    while (!queue.empty()) {
        const int item = queue.back();
        queue.pop_back();
        std::vector<int> group{item};
        for (const int h : tiedHolders(t, item, queue))
            group.push_back(h);
        const DeviceSpec &device = devices[current];
        const int64_t limit = limits[current];
        if (device.kind == DeviceKind::Disk || current + 1 >= devices.size()) {
            // Disk holds only what is never trained; trainable modules stay on the last device before it.
            bool trains = false;
            for (const int n : group)
                trains = trains || ledger.trainsAnything(n);
            int target = static_cast<int>(current);
            if (trains && device.kind == DeviceKind::Disk && lastBeforeDisk >= 0) {
                target = lastBeforeDisk;
                result.forcedOffDisk.push_back(item);
            }
            place(group, target, -1);
            continue;
        }
        const int64_t before = ledger.usage(static_cast<int>(current)).peakBytes;
        const DeviceUsage with = ledger.usageWith(static_cast<int>(current), group);
        if (limit < 0 || with.peakBytes <= limit) {
            place(group, static_cast<int>(current), limit < 0 ? -1 : limit - before);
            continue;
        }
        // The module fits without the modules that hold its tied partners: split the first of those that can be.
        if (group.size() > 1 && ledger.usageWith(static_cast<int>(current), {item}).peakBytes <= limit) {
            bool split = false;
            for (size_t g = 1; g < group.size() && !split; ++g) {
                const int holder = group[g];
                if (!splittable(t, noSplit, holder))
                    continue;
                const auto it = std::find(queue.begin(), queue.end(), holder);
                const std::vector<int> &items = t.nodes[static_cast<size_t>(holder)].items;
                const auto pos = queue.erase(it);
                queue.insert(pos, items.rbegin(), items.rend());
                queue.push_back(item);
                split = true;
            }
            if (split)
                continue;
        }
        if (splittable(t, noSplit, item)) {
            const std::vector<int> &items = t.nodes[static_cast<size_t>(item)].items;
            queue.insert(queue.end(), items.rbegin(), items.rend());
            continue;
        }
        result.skips.push_back({static_cast<int>(current), item, before, with.peakBytes, limit, with.peakPhase,
                                result.placed.size()});
        ++current;
        queue.push_back(item);
    }
    return result;
}

} // namespace engine::plan
