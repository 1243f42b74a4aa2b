#pragma once
// Where a training plan puts each module: Accelerate's greedy walk (modules in order, a module that does
// not fit split into its parameters and children unless it is a no-split block, tied parameters kept
// with their partner, never going back to an earlier device), but a module fits on a device when the
// device's peak over the training step, as the DeviceLedger counts it with the module added, stays within
// the device's limit. The verdict reads the same ledger, so the walk and the table never disagree.
// Trainable weights never go to disk (disk-offloaded weights are read-only memory maps): when they
// cannot fit anywhere else they stay on the last device before disk, which then does not fit. Torch-free.

#include "engine/plan/accelerate.h"
#include "engine/plan/deviceledger.h"

#include <cstdint>
#include <vector>

namespace engine::plan {

/// A device the walk left, and the figures why.
struct TrainingSkip {
    int device = -1;
    int node = -1;             ///< the module that did not fit
    int64_t peakBefore = 0;    ///< the device's peak with what it holds (what the table shows for it)
    int64_t peakWith = 0;      ///< its peak had the module been added
    int64_t limit = 0;         ///< the limit the walk kept to (the budget, or a balanced share below it)
    Phase phaseWith = Phase::Load;
    size_t placedBefore = 0;   ///< how many items were placed before this skip
};

/// The walk's result.
struct TrainingPlacementResult {
    std::vector<PlacedItem> placed;  ///< in placement order (freeBefore: limit - peak before, -1 unbounded)
    std::vector<TrainingSkip> skips;
    std::vector<int64_t> limits;     ///< per device (-1 unbounded)
    std::vector<int> forcedOffDisk;  ///< trainable modules kept on the last device before disk
};

/// The last device that is not disk (where trainable modules that find no room stay), -1 if none.
int lastDeviceBeforeDisk(const std::vector<DeviceSpec> &devices);

/// Limits per device for a strategy: the budgets (sequential), or for auto / balanced the GPUs but the
/// last capped at an even share of the model's training peak (as Accelerate's get_balanced_memory does
/// with sizes); balanced_low_0 leaves GPU 0 what the others cannot hold. Disk: -1.
std::vector<int64_t> trainingLimits(const FlatTree &tree, const NodeCosts &costs, const std::vector<DeviceSpec> &devices,
                                    const PlanSettings &settings);

/// Walks the model onto `devices` (disk last) within `limits`.
TrainingPlacementResult placeForTraining(const FlatTree &tree, const NodeCosts &costs,
                                         const std::vector<DeviceSpec> &devices, const PlanSettings &settings,
                                         const std::vector<char> &noSplit, const std::vector<int64_t> &limits);

} // namespace engine::plan
