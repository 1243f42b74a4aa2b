#include "engine/plan/advisor.h"

#include "engine/core/error.h"
#include "engine/core/format.h"

#include <algorithm>
#include <optional>

namespace engine::plan {
namespace {

using ojson = nlohmann::ordered_json;

// How far a change takes the user from what they asked for: cheap precision first, then changes that cost
// time but not results, then changes to what is trained, then to what the model sees.
constexpr int kDtypeCost = 1, kCheckpointingCost = 2, kBatchCost = 2, kLoraCost = 3, kRankCost = 3, kSeqCost = 5;

struct Toggle {
    ojson changes;
    int cost = 0;
};

// Values below `from`, halving, down to `floor`: the ladder a setting is lowered along.
std::vector<int64_t> ladderBelow(int64_t from, int64_t floor)
{
    std::vector<int64_t> out;
    for (int64_t v = from / 2; v >= floor && v >= 1; v /= 2)
        out.push_back(v);
    return out;
}

bool anyGpuWithoutBf16(const std::vector<DeviceSpec> &devices)
{
    return std::any_of(devices.begin(), devices.end(), [](const DeviceSpec &d) { return d.isGpu() && !d.bf16; });
}

std::string whyOf(const ojson &changes, const PlanSettings &asked, const Plan &plan)
{
    std::string why;
    const auto add = [&](const std::string &text) { why += (why.empty() ? "" : "; ") + text; };
    const PlanSettings &s = plan.settings;
    if (changes.contains("train"))
        add("LoRA r=" + std::to_string(s.loraRank) + " instead of full fine-tuning: the base weights stay frozen, "
            "with no gradients or AdamW state for them");
    if (changes.contains("lora-r"))
        add("LoRA rank " + std::to_string(s.loraRank) + " instead of " + std::to_string(asked.loraRank)
            + ": fewer adapter weights and activations, a smaller update subspace");
    if (changes.contains("checkpointing"))
        add("gradient checkpointing: each decoder layer's forward runs again in backward, about a third more "
            "compute per step");
    if (changes.contains("batch-size")) {
        const int64_t b = s.batchSize, asked_b = asked.batchSize;
        if (b < asked_b) {
            const int64_t accumulation = (asked_b + b - 1) / b;
            add("batch " + std::to_string(b) + " instead of " + std::to_string(asked_b) + ", with --grad-accum "
                + std::to_string(accumulation) + " in tunebench train to keep " + std::to_string(b * accumulation)
                + " sequences a step: the same updates in " + std::to_string(accumulation) + " smaller passes");
        } else {
            add("the largest batch that fits: " + std::to_string(b) + " sequences a step (asked " + std::to_string(asked_b)
                + ")");
        }
    }
    if (changes.contains("seq-len"))
        add("sequences of " + std::to_string(s.sequenceLength) + " tokens instead of " + std::to_string(asked.sequenceLength)
            + ": the model trains on shorter contexts");
    if (changes.contains("dtype"))
        add(s.dtype == "bfloat16" ? "weights and activations in bfloat16: half the bytes of float32"
                                  : "weights and activations in float16 with loss scaling (a GPU here has no bfloat16)");
    const DeviceUsage *peak = plan.usageOf(plan.peak.device);
    if (peak)
        why += " -> peak " + formatBytes(plan.peak.bytes) + " on " + deviceLabel(peak->device) + " at "
            + phaseName(plan.peak.phase) + " of " + formatBytes(peak->device.budget);
    return why;
}

// `a`'s changes include all of `b`'s with the same values.
bool includes(const ojson &a, const ojson &b)
{
    for (const auto &[key, value] : b.items()) {
        if (!a.contains(key) || a[key] != value)
            return false;
    }
    return true;
}

} // namespace

PlanSettings withChanges(PlanSettings s, const ojson &changes)
{
    if (!changes.is_object())
        throw invalidInput("advice: the changes must be an object of flag to value");
    for (const auto &[key, value] : changes.items()) {
        try {
            if (key == "train")
                s.train = parseTrainMode(value.get<std::string>(), "--train");
            else if (key == "lora-r")
                s.loraRank = value.get<int64_t>();
            else if (key == "checkpointing")
                s.checkpointing = value.get<bool>();
            else if (key == "batch-size")
                s.batchSize = value.get<int64_t>();
            else if (key == "seq-len")
                s.sequenceLength = value.get<int64_t>();
            else if (key == "dtype")
                s.dtype = value.get<std::string>();
            else
                throw invalidInput("advice: --" + key + " is not a setting the advisor changes");
        } catch (const nlohmann::json::exception &) {
            throw invalidInput("advice: --" + key + " has a value of the wrong type (" + value.dump() + ")");
        }
    }
    checkSettings(s);
    return s;
}

std::vector<Advice> advise(const Planner &planner, const std::vector<DeviceSpec> &devices, const PlanSettings &asked,
                           size_t limit)
{
    std::vector<Advice> out;
    if (asked.train == TrainMode::None || limit == 0)
        return out;
    const auto planWith = [&](const ojson &changes) { return planner.plan(devices, withChanges(asked, changes)); };
    const Plan base = planner.plan(devices, asked);

    if (base.fits) { // the largest batch that still fits: double, then bisect
        int64_t fits = asked.batchSize, fails = -1;
        std::optional<Plan> best;
        for (int64_t b = asked.batchSize * 2; b <= (int64_t(1) << 20); b *= 2) {
            Plan p = planWith({{"batch-size", b}});
            if (!p.fits) {
                fails = b;
                break;
            }
            fits = b;
            best = std::move(p);
        }
        while (fails > 0 && fails - fits > 1) {
            const int64_t mid = fits + (fails - fits) / 2;
            Plan p = planWith({{"batch-size", mid}});
            if (p.fits) {
                fits = mid;
                best = std::move(p);
            } else {
                fails = mid;
            }
        }
        if (best) {
            const ojson changes = {{"batch-size", fits}};
            out.push_back({changes, *best, whyOf(changes, asked, *best), kBatchCost});
        }
        return out;
    }

    // Switches (each on or off), then for each combination the mildest step down a ladder when the switches
    // alone do not make it fit.
    std::vector<Toggle> toggles;
    if (asked.train == TrainMode::Full)
        toggles.push_back({{{"train", "lora"}}, kLoraCost});
    if (!asked.checkpointing)
        toggles.push_back({{{"checkpointing", true}}, kCheckpointingCost});
    const std::string halfDtype = anyGpuWithoutBf16(devices) ? "float16" : "bfloat16";
    const int64_t storedBytes = model::dtypeSize(planner.model().tree.dtype);
    const bool wide = asked.dtype == "float32" || (asked.dtype.empty() && storedBytes == 4);
    if (wide || (asked.dtype == "bfloat16" && halfDtype == "float16"))
        toggles.push_back({{{"dtype", halfDtype}}, kDtypeCost});

    struct Ladder {
        const char *flag;
        std::vector<int64_t> values; // descending: the first that fits is the mildest
        int cost;
    };
    std::vector<Advice> found;
    const size_t combinations = size_t(1) << toggles.size();
    for (size_t mask = 0; mask < combinations; ++mask) {
        ojson changes = ojson::object();
        int cost = 0;
        for (size_t k = 0; k < toggles.size(); ++k) {
            if (mask & (size_t(1) << k)) {
                changes.update(toggles[k].changes);
                cost += toggles[k].cost;
            }
        }
        if (mask != 0) {
            Plan p = planWith(changes);
            if (p.fits) {
                found.push_back({changes, std::move(p), {}, cost});
                continue;
            }
        }
        const bool lora = asked.train == TrainMode::Lora || changes.contains("train");
        std::vector<Ladder> ladders = {{"batch-size", ladderBelow(asked.batchSize, 1), kBatchCost},
                                       {"seq-len", ladderBelow(asked.sequenceLength, 32), kSeqCost}};
        if (lora)
            ladders.push_back({"lora-r", ladderBelow(asked.loraRank, 1), kRankCost});
        for (const Ladder &ladder : ladders) {
            // Memory falls along the ladder: bisect for the first value that fits.
            size_t lo = 0, hi = ladder.values.size();
            std::optional<Plan> mildest;
            while (lo < hi) {
                const size_t mid = (lo + hi) / 2;
                ojson tried = changes;
                tried[ladder.flag] = ladder.values[mid];
                Plan p = planWith(tried);
                if (p.fits) {
                    mildest = std::move(p);
                    hi = mid;
                } else {
                    lo = mid + 1;
                }
            }
            if (!mildest) // (the last plan that fit is the one at `lo`: `hi` only moves down to a fit)
                continue;
            ojson tried = changes;
            tried[ladder.flag] = ladder.values[lo];
            found.push_back({tried, std::move(*mildest), {}, cost + ladder.cost});
        }
    }
    // Nearest first; a suggestion that only adds changes to another that fits is not near.
    std::stable_sort(found.begin(), found.end(), [](const Advice &a, const Advice &b) {
        if (a.cost != b.cost)
            return a.cost < b.cost;
        return a.changes.size() < b.changes.size();
    });
    for (Advice &a : found) {
        const bool redundant = std::any_of(out.begin(), out.end(), [&](const Advice &kept) { return includes(a.changes, kept.changes); });
        if (redundant)
            continue;
        a.why = whyOf(a.changes, asked, a.plan);
        out.push_back(std::move(a));
        if (out.size() >= limit)
            break;
    }
    return out;
}

} // namespace engine::plan
