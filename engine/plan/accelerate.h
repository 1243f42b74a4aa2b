#pragma once
// Accelerate's weights-only planner, reproduced over a FlatTree: get_balanced_memory,
// infer_auto_device_map and clean_device_map (accelerate/utils/modeling.py). Torch-free.
//
// How to use:
//   AutoMapInput in{&flat, moduleSizes(flat, 2), noSplitFlags(flat, {"LlamaDecoderLayer"})};
//   std::vector<int64_t> budgets = balancedMemory(in, devices, /*lowZero=*/false);
//   AutoMapResult r = inferAutoDeviceMap(in, devices, budgets);
//   std::vector<MapEntry> map = cleanDeviceMap(flat, r.placed);
//
// Devices: GPUs first (by index), then cpu, then disk, as parseMaxMemory returns them; disk is
// appended when missing and is unbounded, as in Accelerate. The rules kept exactly: the reserve of
// the largest remaining layer on the main devices (GPU 0 and cpu; cpu alone without GPUs), tied
// parameters placed with the module that holds their partner, `>=` when deciding to split, splitting
// into direct parameters then children, never going back to an earlier device.

#include "engine/plan/device.h"
#include "engine/plan/flattree.h"

#include <cstdint>
#include <string>
#include <vector>

namespace engine::plan {

/// What the algorithm reads.
struct AutoMapInput {
    const FlatTree *tree = nullptr;
    std::vector<int64_t> sizes;  ///< per node (moduleSizes, or training costs)
    std::vector<char> noSplit;   ///< per node: class in no_split_module_classes
    bool reserveMainDevices = true; ///< Accelerate's reserve rule (off for training plans, which compute in place)
    /// infer_auto_device_map(fallback_allocation=True): when nothing fits yet on a device, place the first
    /// module (searching depth first) that fits in its budget less max(largest layer, the item's size)
    /// before leaving it. Off by default, as in Accelerate (and transformers does not turn it on).
    bool fallbackAllocation = false;
};

/// Where one queue item went.
struct PlacedItem {
    int node = -1;
    int device = -1;           ///< index into the device list (disk appended if absent)
    int64_t freeBefore = 0;    ///< room left on the device before it (after the reserve); -1 unbounded
};

/// A device the algorithm left, and why.
struct DeviceSkip {
    int device = -1;
    int node = -1;             ///< the item that did not fit
    int64_t itemSize = 0;      ///< with its tied modules
    int64_t room = 0;          ///< budget - used - reserve at that moment
    int64_t reserved = 0;
    bool emptyDevice = false;  ///< nothing was placed there: the budget it would need is itemSize + reserved
    size_t placedBefore = 0;   ///< how many items were placed before this skip
};

/// The raw result.
struct AutoMapResult {
    std::vector<DeviceSpec> devices;  ///< the list used (disk appended when missing)
    std::vector<int64_t> budgets;     ///< per device; -1 = unbounded
    std::vector<PlacedItem> placed;   ///< in placement order
    std::vector<DeviceSkip> skips;    ///< in order
    std::vector<int> deviceOfNode;    ///< per node: device of the placed item holding it, -1 if none
};

/// A cleaned device map entry: the coarsest module wholly on one device.
struct MapEntry {
    std::string module;  ///< "" = the whole model
    int device = -1;     ///< index into AutoMapResult::devices
    bool operator==(const MapEntry &) const = default;
};

/// The tied parameters outside `item` whose partner is inside it (infer_auto_device_map's tied_params):
/// the walk keeps the modules that hold them with `item`.
std::vector<int> tiedParamsOutside(const FlatTree &tree, int item);

/// Per node: its class is in `classes`.
std::vector<char> noSplitFlags(const FlatTree &tree, const std::vector<std::string> &classes);

/// get_balanced_memory: the budgets to pass to inferAutoDeviceMap for "balanced"/"auto" (lowZero false)
/// and "balanced_low_0" (true). Budgets are `devices[i].budget`; returned per device (disk -1).
std::vector<int64_t> balancedMemory(const AutoMapInput &in, const std::vector<DeviceSpec> &devices, bool lowZero);

/// The budgets as given (sequential); disk -1.
std::vector<int64_t> plainMemory(const std::vector<DeviceSpec> &devices);

/// infer_auto_device_map. `budgets` per device of `devices` (-1 = unbounded).
AutoMapResult inferAutoDeviceMap(const AutoMapInput &in, const std::vector<DeviceSpec> &devices,
                                 const std::vector<int64_t> &budgets);

/// clean_device_map over per-node devices (deviceOfNode of placed items only): entries in tree order.
std::vector<MapEntry> cleanDeviceMap(const FlatTree &tree, const std::vector<PlacedItem> &placed);

/// Per node device from a cleaned or raw map (-1 where the map does not reach).
std::vector<int> devicesOfNodes(const FlatTree &tree, const std::vector<MapEntry> &map);

/// The coarsest map of per-node devices: each module whose whole subtree is on one device, in tree order
/// ("" when the whole model is). Nodes with device -1 are left out.
std::vector<MapEntry> coarsestMap(const FlatTree &tree, const std::vector<int> &deviceOfNode);

} // namespace engine::plan
