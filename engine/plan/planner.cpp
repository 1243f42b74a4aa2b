#include "engine/plan/planner.h"

#include "engine/core/byteunits.h"
#include "engine/core/error.h"
#include "engine/core/format.h"
#include "engine/plan/accelerate.h"
#include "engine/plan/deviceledger.h"
#include "engine/plan/lint.h"
#include "engine/plan/memorymodel.h"
#include "engine/plan/trainingplacement.h"

#include <algorithm>
#include <map>

namespace engine::plan {
namespace {

std::vector<std::string> noSplitClassesFor(const PlanModel &model, const PlanSettings &settings)
{
    return settings.noSplit ? *settings.noSplit : model.tree.noSplitClasses;
}

std::string bytes(int64_t b) { return formatBytes(b); }

// "model.layers.14 -> GPU 1", the start of every explanation.
std::string placementHead(const std::string &module, const DeviceSpec &device)
{
    return (module.empty() ? std::string("the whole model") : module) + " -> " + deviceLabel(device);
}

// The breakdown of one subtree, for explanations.
std::string costText(const NodeCosts &costs, const FlatTree &t, int node, bool training)
{
    int64_t w = 0, l = 0, g = 0, o = 0, a = 0, lg = 0;
    for (int i = node; i < t.nodes[node].end; ++i) {
        w += costs.weights[i];
        l += costs.lora[i];
        g += costs.gradients[i];
        o += costs.optimizer[i];
        a += costs.saved[i];
        lg += costs.logitsForward[i] + costs.logitsBackward[i];
    }
    if (!training)
        return bytes(w) + " for weights";
    std::string text = bytes(w) + " for weights";
    if (l)
        text += ", " + bytes(l) + " for LoRA";
    if (g)
        text += ", " + bytes(g) + " for gradients";
    if (o)
        text += ", " + bytes(o) + " for optimizer state";
    if (a)
        text += ", " + bytes(a) + " for activations";
    if (lg)
        text += ", " + bytes(lg) + " for logits";
    return text;
}

struct Evaluation {
    std::vector<DeviceUsage> usage;
    PlanPeak peak;
    bool fits = true;
};

// The verdict of each device, from the ledger's figures (the same the training placement used).
Evaluation evaluate(const FlatTree &t, const std::vector<DeviceSpec> &devices, const PlanSettings &settings,
                    const NodeCosts &c, const std::vector<int> &deviceOfNode)
{
    const bool training = settings.train != TrainMode::None;
    DeviceLedger ledger(t, c, devices, settings);
    ledger.assignAll(deviceOfNode);
    Evaluation ev;
    double worst = -1.0;
    for (size_t d = 0; d < devices.size(); ++d) {
        DeviceUsage u = ledger.usage(static_cast<int>(d));
        if (devices[d].unbounded() || devices[d].budget <= 0) {
            u.fits = true;
            u.verdict = "fits: " + bytes(u.peakBytes) + (devices[d].kind == DeviceKind::Disk ? " on disk (no limit given)" : " (no budget given)");
        } else {
            u.fits = u.peakBytes <= devices[d].budget;
            const std::string when = training ? std::string(" at ") + phaseName(u.peakPhase) : std::string();
            u.verdict = u.fits ? "fits: " + bytes(u.peakBytes) + " of " + bytes(devices[d].budget) + when
                               : "does not fit: " + bytes(u.peakBytes) + when + " against a budget of "
                                     + bytes(devices[d].budget) + " (over by " + bytes(u.peakBytes - devices[d].budget) + ")";
            const double ratio = static_cast<double>(u.peakBytes) / static_cast<double>(devices[d].budget);
            if (u.peakBytes > 0 && ratio > worst) {
                worst = ratio;
                ev.peak = {devices[d].key(), u.peakPhase, u.peakBytes};
            }
        }
        ev.fits = ev.fits && u.fits;
        ev.usage.push_back(std::move(u));
    }
    return ev;
}

std::vector<DeviceSpec> withDisk(std::vector<DeviceSpec> devices)
{
    if (devices.empty() || devices.back().kind != DeviceKind::Disk) {
        DeviceSpec disk;
        disk.kind = DeviceKind::Disk;
        disk.name = "disk";
        devices.push_back(disk);
    }
    return devices;
}

void finish(Plan &plan, const FlatTree &t, const NodeCosts &costs, const std::vector<int> &deviceOfNode)
{
    Evaluation ev = evaluate(t, plan.devices, plan.settings, costs, deviceOfNode);
    plan.usage = std::move(ev.usage);
    plan.peak = ev.peak;
    plan.fits = ev.fits;
    plan.memoryFits = ev.fits;
    plan.lint = lintPlan(plan, t, costs, deviceOfNode);
    // A plan with an error in its lint fails however much room it leaves: the run would not work.
    for (const LintFinding &f : plan.lint)
        plan.fits = plan.fits && f.severity != "error";
}

// Known parameterless modules of transformers classes, which Accelerate's maps may name.
bool parameterlessName(const std::string &local)
{
    static const char *names[] = {"rotary_emb", "act_fn", "act", "drop", "dropout", "attn_dropout", "resid_dropout",
                                  "activation_func", "gelu"};
    return std::any_of(std::begin(names), std::end(names), [&](const char *n) { return local == n; });
}


// The firstPlacement index of every node: the first placed item inside it (or holding it).
std::vector<size_t> firstPlacements(const FlatTree &t, const std::vector<PlacedItem> &placed)
{
    std::vector<size_t> first(t.nodes.size(), SIZE_MAX);
    for (size_t k = 0; k < placed.size(); ++k) {
        for (int a = placed[k].node; a >= 0; a = t.nodes[static_cast<size_t>(a)].parent)
            first[static_cast<size_t>(a)] = std::min(first[static_cast<size_t>(a)], k);
    }
    return first;
}

// Weights-only: Accelerate's infer_auto_device_map, entry for entry.
void placeWeightsOnly(Plan &plan, const FlatTree &t, const NodeCosts &costs, const std::vector<char> &flags,
                      int64_t weightBytes)
{
    const std::vector<DeviceSpec> &devices = plan.devices;
    const PlanSettings &settings = plan.settings;
    AutoMapInput in{&t, moduleSizes(t, weightBytes), flags, true, settings.fallbackAllocation};
    const std::vector<int64_t> budgets = settings.strategy == Strategy::Sequential
        ? plainMemory(devices)
        : balancedMemory(in, devices, settings.strategy == Strategy::BalancedLow0);
    const AutoMapResult result = inferAutoDeviceMap(in, devices, budgets);
    const std::vector<MapEntry> cleaned = cleanDeviceMap(t, result.placed);
    const std::vector<size_t> firstPlacement = firstPlacements(t, result.placed);
    for (const MapEntry &e : cleaned) {
        const int node = t.find(e.module);
        const DeviceSpec &dev = devices[static_cast<size_t>(e.device)];
        const std::string label = deviceLabel(dev);
        std::string text = placementHead(e.module, dev) + ": needs " + costText(costs, t, node, false);
        const size_t k = node >= 0 ? firstPlacement[static_cast<size_t>(node)] : SIZE_MAX;
        const DeviceSkip *why = nullptr;
        for (const DeviceSkip &s : result.skips) {
            if (k != SIZE_MAX && s.placedBefore <= k && s.device < e.device)
                why = &s;
        }
        if (why) {
            const std::string budgetNote = why->reserved > 0
                ? " (after keeping " + bytes(why->reserved) + " free for the largest layer, Accelerate's reserve)"
                : std::string();
            text += "; " + deviceLabel(devices[static_cast<size_t>(why->device)]) + " had "
                + bytes(std::max<int64_t>(0, why->room)) + " left" + budgetNote + " and "
                + t.nodes[static_cast<size_t>(why->node)].name + " needs " + bytes(why->itemSize);
        } else if (k != SIZE_MAX && result.placed[k].freeBefore >= 0) {
            text += "; " + label + " had " + bytes(result.placed[k].freeBefore) + " free";
        }
        plan.deviceMap.push_back({e.module, dev.key(), text});
    }
    for (const DeviceSkip &s : result.skips) {
        if (!s.emptyDevice || devices[static_cast<size_t>(s.device)].kind == DeviceKind::Disk)
            continue;
        plan.minimums.push_back(deviceLabel(devices[static_cast<size_t>(s.device)]) + " would need at least "
                                + bytes(s.itemSize + s.reserved) + " to hold " + t.nodes[static_cast<size_t>(s.node)].name
                                + " (" + bytes(s.itemSize) + ")"
                                + (s.reserved > 0 ? " plus the reserve of " + bytes(s.reserved) : std::string()));
    }
    finish(plan, t, costs, devicesOfNodes(t, cleaned));
}

// Training: the greedy walk over the ledger's peaks; each explanation quotes the figures the table shows.
void placeTraining(Plan &plan, const FlatTree &t, const NodeCosts &costs, const std::vector<char> &flags)
{
    const std::vector<DeviceSpec> &devices = plan.devices;
    const std::vector<int64_t> limits = trainingLimits(t, costs, devices, plan.settings);
    const TrainingPlacementResult result = placeForTraining(t, costs, devices, plan.settings, flags, limits);
    const std::vector<MapEntry> cleaned = cleanDeviceMap(t, result.placed);
    const std::vector<size_t> firstPlacement = firstPlacements(t, result.placed);
    const auto limitText = [&](const TrainingSkip &s) {
        const DeviceSpec &d = devices[static_cast<size_t>(s.device)];
        return s.limit < d.budget ? "its balanced share of " + bytes(s.limit) + " (budget " + bytes(d.budget) + ")"
                                  : "its budget of " + bytes(s.limit);
    };
    for (const MapEntry &e : cleaned) {
        const int node = t.find(e.module);
        const DeviceSpec &dev = devices[static_cast<size_t>(e.device)];
        const std::string label = deviceLabel(dev);
        std::string text = placementHead(e.module, dev) + ": needs " + costText(costs, t, node, true);
        const size_t k = node >= 0 ? firstPlacement[static_cast<size_t>(node)] : SIZE_MAX;
        // The first module a device received says why the device before it took no more; the others
        // say how much room they found.
        bool firstOnDevice = k != SIZE_MAX;
        for (size_t j = 0; j < k && firstOnDevice; ++j)
            firstOnDevice = result.placed[j].device != e.device;
        const TrainingSkip *why = nullptr;
        for (const TrainingSkip &s : result.skips) {
            if (firstOnDevice && s.placedBefore <= k && s.device < e.device)
                why = &s;
        }
        if (why) {
            text += "; " + deviceLabel(devices[static_cast<size_t>(why->device)]) + " peaks at " + bytes(why->peakBefore)
                + " with what it holds, and " + t.nodes[static_cast<size_t>(why->node)].name + " would bring it to "
                + bytes(why->peakWith) + " at " + phaseName(why->phaseWith) + ", over " + limitText(*why);
        } else if (k != SIZE_MAX && result.placed[k].freeBefore >= 0) {
            text += "; " + label + " had " + bytes(result.placed[k].freeBefore) + " free";
        }
        if (std::find(result.forcedOffDisk.begin(), result.forcedOffDisk.end(), node) != result.forcedOffDisk.end())
            text += "; trained, so not on disk (disk-offloaded weights are read-only)";
        plan.deviceMap.push_back({e.module, dev.key(), text});
    }
    std::vector<char> holdsSomething(devices.size(), 0);
    for (const PlacedItem &p : result.placed)
        holdsSomething[static_cast<size_t>(p.device)] = 1;
    for (const TrainingSkip &s : result.skips) {
        const DeviceSpec &d = devices[static_cast<size_t>(s.device)];
        if (holdsSomething[static_cast<size_t>(s.device)] || d.kind == DeviceKind::Disk)
            continue;
        plan.minimums.push_back(deviceLabel(d) + " would need at least " + bytes(s.peakWith) + " to hold "
                                + t.nodes[static_cast<size_t>(s.node)].name + " (its peak at " + phaseName(s.phaseWith)
                                + ", runtime overhead included)");
    }
    finish(plan, t, costs, devicesOfNodes(t, cleaned));
    // Offloaded layers compute on the CPU: say so when what they compute is what overfills it.
    const int cpu = findDevice(devices, "cpu");
    if (cpu >= 0 && !plan.usage[static_cast<size_t>(cpu)].fits) {
        std::string names;
        int64_t computed = 0;
        for (const PlacedItem &p : result.placed) {
            if (devices[static_cast<size_t>(p.device)].kind != DeviceKind::Disk)
                continue;
            int64_t bytesHere = 0;
            for (int i = p.node; i < t.nodes[static_cast<size_t>(p.node)].end; ++i)
                bytesHere += costs.saved[static_cast<size_t>(i)] + costs.logitsForward[static_cast<size_t>(i)];
            if (bytesHere == 0)
                continue;
            computed += bytesHere;
            names += (names.empty() ? "" : ", ") + t.nodes[static_cast<size_t>(p.node)].name;
        }
        if (computed > 0)
            plan.warnings.push_back("offloaded to disk, " + names + " compute on the CPU: their " + bytes(computed)
                                    + " of activations and logits count there, and the CPU does not fit");
    }
    if (!result.forcedOffDisk.empty() && lastDeviceBeforeDisk(devices) >= 0) {
        const DeviceUsage &u = plan.usage[static_cast<size_t>(lastDeviceBeforeDisk(devices))];
        std::string names;
        for (size_t i = 0; i < result.forcedOffDisk.size() && i < 3; ++i)
            names += (i ? ", " : "") + t.nodes[static_cast<size_t>(result.forcedOffDisk[i])].name;
        if (result.forcedOffDisk.size() > 3)
            names += ", ...";
        plan.warnings.push_back("trainable modules cannot go to disk (disk-offloaded weights are read-only memory maps): "
                                + names + " stay on " + deviceLabel(u.device) + ", which needs at least "
                                + bytes(u.peakBytes) + " for this plan" + (u.device.budget > 0 ? " (it has " + bytes(u.device.budget) + ")" : std::string()));
    }
}
} // namespace

const char *phaseName(Phase phase)
{
    switch (phase) {
    case Phase::Load: return "load";
    case Phase::Forward: return "forward";
    case Phase::Backward: return "backward";
    case Phase::OptimizerStep: return "optimizer_step";
    }
    return "load";
}

std::string attentionHeadline(const PlanSettings &settings)
{
    return "attention at " + std::to_string(settings.batchSize) + " x " + std::to_string(settings.sequenceLength)
        + " tokens (eager: every layer scores all T x T pairs; a window masks scores, it does not shrink them)";
}

std::string attentionText(const AttentionSpan &span)
{
    const std::string layers = span.firstLayer == span.lastLayer
        ? "layer " + std::to_string(span.firstLayer)
        : "layers " + std::to_string(span.firstLayer) + "-" + std::to_string(span.lastLayer);
    return layers + ", " + (span.window > 0 ? "window " + std::to_string(span.window) : std::string("full")) + ": scores "
        + bytes(span.scoresBytes) + " per layer (training), KV cache " + std::to_string(span.kvCacheTokens)
        + " tokens: " + bytes(span.kvCacheBytes) + " per layer";
}

std::string attentionCacheNote(const std::vector<AttentionSpan> &spans)
{
    const bool windowed = std::any_of(spans.begin(), spans.end(), [](const AttentionSpan &a) { return a.window > 0; });
    return windowed ? "the KV cache of a windowed layer is a window-bounded cache's (transformers' sliding-window "
                      "cache); tunebench generate keeps every token and masks the older ones"
                    : std::string();
}

std::string deviceLabel(const DeviceSpec &device)
{
    return device.isGpu() ? "GPU " + std::to_string(device.index) : device.key();
}

int64_t planDtypeBytes(const std::string &dtype)
{
    if (dtype.empty())
        return 0;
    if (dtype == "float16" || dtype == "bfloat16")
        return 2;
    if (dtype == "float32")
        return 4;
    throw invalidInput("--dtype is \"" + dtype + "\": use float16, bfloat16 or float32");
}

void checkSettings(const PlanSettings &s)
{
    planDtypeBytes(s.dtype);
    const auto positive = [](int64_t v, int64_t limit, const std::string &what) {
        if (v < 1 || v > limit)
            throw invalidInput(what + " is " + std::to_string(v) + ": must be between 1 and " + std::to_string(limit));
    };
    positive(s.batchSize, 1 << 20, "--batch-size");
    positive(s.sequenceLength, 1 << 24, "--seq-len");
    if (s.train == TrainMode::Lora)
        positive(s.loraRank, 1 << 16, "--lora-r");
    if (!(s.loraDropout >= 0 && s.loraDropout < 1))
        throw invalidInput("--lora-dropout is " + std::to_string(s.loraDropout) + ": must be at least 0 and below 1");
    if (!(s.loraAlpha > 0))
        throw invalidInput("--lora-alpha is " + std::to_string(s.loraAlpha) + ": must be above 0");
}

std::vector<std::pair<std::string, std::string>> Plan::placements() const
{
    std::vector<std::pair<std::string, std::string>> out;
    for (const Placement &p : deviceMap) {
        const int d = findDevice(devices, p.device);
        out.emplace_back(p.module, d >= 0 ? devices[d].torchDevice() : p.device);
    }
    return out;
}

const DeviceUsage *Plan::usageOf(const std::string &key) const
{
    for (const DeviceUsage &u : usage) {
        if (u.device.key() == key)
            return &u;
    }
    return nullptr;
}

std::string Plan::deviceOf(const std::string &module) const
{
    const Placement *best = nullptr;
    for (const Placement &p : deviceMap) {
        const bool holds = p.module.empty() || module == p.module
            || (module.size() > p.module.size() && module.compare(0, p.module.size(), p.module) == 0
                && module[p.module.size()] == '.');
        if (holds && (!best || p.module.size() > best->module.size()))
            best = &p;
    }
    return best ? best->device : std::string();
}

Planner::Planner(PlanModel model) : m_model(std::move(model)), m_flat(flatten(m_model.tree)) {}

std::vector<std::string> Planner::modelWarnings(const PlanSettings &settings) const
{
    std::vector<std::string> out = m_model.warnings;
    if (settings.train != TrainMode::None) // what the activation estimate guessed matters to training only
        out.insert(out.end(), m_model.activationWarnings.begin(), m_model.activationWarnings.end());
    return out;
}

Plan Planner::plan(const std::vector<DeviceSpec> &devicesIn, const PlanSettings &settings) const
{
    checkSettings(settings);
    const FlatTree &t = m_flat;
    Plan plan;
    plan.settings = settings;
    plan.modelType = m_model.tree.modelType;
    plan.remoteCodeClasses = m_model.remoteCodeClasses;
    plan.noSplit = noSplitClassesFor(m_model, settings);
    plan.warnings = modelWarnings(settings);
    for (const std::string &cls : plan.noSplit) {
        bool found = false;
        for (const FlatNode &n : t.nodes)
            found = found || n.className == cls;
        if (!found)
            plan.warnings.push_back("--no-split class \"" + cls + "\" is not a module class of this model (ignored)");
    }
    const int64_t weightBytes = planDtypeBytes(settings.dtype);
    const std::vector<char> flags = noSplitFlags(t, plan.noSplit);
    const NodeCosts costs = computeCosts(t, m_model, settings, weightBytes, flags);
    const bool training = settings.train != TrainMode::None;
    plan.attention = attentionSpans(m_model.arch, settings, costs.activationBytes);

    plan.devices = withDisk(devicesIn);
    if (training)
        placeTraining(plan, t, costs, flags);
    else
        placeWeightsOnly(plan, t, costs, flags, weightBytes);
    return plan;
}

Plan Planner::move(const Plan &planIn, const std::string &module, const std::string &device) const
{
    const FlatTree &t = m_flat;
    const int node = t.find(module);
    if (node < 0 || t.nodes[node].isParam)
        throw invalidInput("no module \"" + module + "\" in this " + m_model.tree.modelType + " model");
    const int d = findDevice(planIn.devices, device);
    if (d < 0)
        throw invalidInput("no device \"" + device + "\" in this plan (devices: " + maxMemoryText(planIn.devices) + ")");
    Plan plan = planIn;
    std::vector<MapEntry> entries;
    for (const Placement &p : plan.deviceMap)
        entries.push_back({p.module, findDevice(plan.devices, p.device)});
    std::vector<int> deviceOfNode = devicesOfNodes(t, entries);
    for (int i = node; i < t.nodes[node].end; ++i)
        deviceOfNode[i] = d;
    std::map<std::pair<std::string, std::string>, std::string> previous;
    for (const Placement &p : plan.deviceMap)
        previous[{p.module, p.device}] = p.explanation;
    plan.deviceMap.clear();
    const NodeCosts costs = computeCosts(t, m_model, plan.settings, planDtypeBytes(plan.settings.dtype),
                                         noSplitFlags(t, plan.noSplit));
    for (const MapEntry &e : coarsestMap(t, deviceOfNode)) {
        const std::string key = plan.devices[e.device].key();
        auto it = previous.find({e.module, key});
        std::string text;
        if (it != previous.end() && !t.within(node, t.find(e.module)) && !t.within(t.find(e.module), node))
            text = it->second;
        else if (t.within(t.find(e.module), node) || t.within(node, t.find(e.module)))
            text = placementHead(e.module, plan.devices[e.device]) + ": moved by hand; needs " + costText(costs, t, t.find(e.module), plan.settings.train != TrainMode::None);
        else
            text = e.module + " -> " + deviceLabel(plan.devices[e.device]) + ": stays where the plan put it";
        plan.deviceMap.push_back({e.module, key, text});
    }
    finish(plan, t, costs, deviceOfNode);
    return plan;
}

Plan Planner::revalidate(Plan plan) const
{
    const FlatTree &t = m_flat;
    checkSettings(plan.settings);
    plan.modelType = m_model.tree.modelType;
    plan.remoteCodeClasses = m_model.remoteCodeClasses;
    // An imported map arrives without the model's warnings (the Plan page's import): they lead, once.
    std::vector<std::string> warnings;
    for (const std::string &w : modelWarnings(plan.settings)) {
        if (std::find(plan.warnings.begin(), plan.warnings.end(), w) == plan.warnings.end())
            warnings.push_back(w);
    }
    plan.warnings.insert(plan.warnings.begin(), warnings.begin(), warnings.end());
    if (plan.noSplit.empty())
        plan.noSplit = noSplitClassesFor(m_model, plan.settings);
    plan.devices = withDisk(plan.devices);
    std::vector<int> deviceOfNode(t.nodes.size(), -1);
    std::vector<Placement> kept;
    for (const Placement &p : plan.deviceMap) {
        const int node = t.find(p.module);
        if (node < 0) {
            const size_t dot = p.module.rfind('.');
            const std::string parent = dot == std::string::npos ? std::string() : p.module.substr(0, dot);
            if (parameterlessName(p.module.substr(dot == std::string::npos ? 0 : dot + 1)) && t.find(parent) >= 0) {
                plan.warnings.push_back("device map entry \"" + p.module + "\" is a module without parameters; ignored");
                continue;
            }
            throw invalidInput("device map entry \"" + p.module + "\" names no module of this " + m_model.tree.modelType
                               + " model");
        }
        const int d = findDevice(plan.devices, p.device);
        if (d < 0)
            throw invalidInput("device map entry \"" + p.module + "\" is on device \"" + p.device
                               + "\", which is not among the planned devices (" + maxMemoryText(plan.devices) + ")");
        for (int i = node; i < t.nodes[node].end; ++i) {
            if (deviceOfNode[i] >= 0)
                throw invalidInput("device map entries overlap: \"" + p.module + "\" and an entry that holds or is inside it ("
                                   + t.nodes[i].name + ")");
            deviceOfNode[i] = d;
        }
        kept.push_back(p);
        if (kept.back().explanation.empty())
            kept.back().explanation = placementHead(p.module, plan.devices[d]) + ": as the imported map says";
    }
    plan.deviceMap = kept;
    std::vector<std::string> unplaced;
    for (size_t i = 0; i < t.nodes.size(); ++i) {
        if (t.nodes[i].isParam && deviceOfNode[i] < 0 && !t.nodes[i].tiedDuplicate)
            unplaced.push_back(t.nodes[i].name);
    }
    if (!unplaced.empty()) {
        std::string list;
        for (size_t k = 0; k < unplaced.size() && k < 3; ++k)
            list += (k ? ", " : "") + unplaced[k];
        throw invalidInput("the device map leaves " + std::to_string(unplaced.size()) + " parameter"
                           + (unplaced.size() == 1 ? "" : "s") + " unplaced: " + list
                           + (unplaced.size() > 3 ? ", ..." : ""));
    }
    // Tied duplicates follow their module's entry; when none covers them, their partner's device.
    // Buffers that no entry covers (a module of buffers only, such as "model.rotary_emb" in a map written
    // before transformers moved the rotary embedding there, or a module whose children the map places
    // one by one) are counted on the device of the parameters before them, where Accelerate's walk
    // would have put them; a module of buffers only is named, since transformers wants it in a custom map.
    int previous = 0;
    for (size_t i = 0; i < t.nodes.size(); ++i) {
        const FlatNode &n = t.nodes[i];
        if (n.isParam && deviceOfNode[i] < 0)
            deviceOfNode[i] = deviceOfNode[n.parent] >= 0 ? deviceOfNode[n.parent] : 0;
        else if (n.isParam && !n.tiedDuplicate)
            previous = deviceOfNode[i];
        if (n.isParam || deviceOfNode[i] >= 0 || n.buffers.empty())
            continue;
        deviceOfNode[i] = previous;
        bool buffersOnly = true;
        t.forEachParam(static_cast<int>(i), [&](int) { buffersOnly = false; });
        if (!buffersOnly)
            continue; // its parameters are placed one by one; the map can name no part that holds the buffers
        const DeviceSpec &device = plan.devices[previous];
        std::string names;
        for (const FlatNode::Buffer &b : n.buffers)
            names += (names.empty() ? "" : ", ") + n.name + "." + b.name;
        plan.warnings.push_back("the device map gives " + names + " no device (buffers, no weights); counted on "
                                + deviceLabel(device) + " here, but transformers needs them in a custom map: add \""
                                + n.name + "\": " + (device.isGpu() ? device.key() : "\"" + device.key() + "\""));
    }
    const NodeCosts costs = computeCosts(t, m_model, plan.settings, planDtypeBytes(plan.settings.dtype),
                                         noSplitFlags(t, plan.noSplit));
    plan.attention = attentionSpans(m_model.arch, plan.settings, costs.activationBytes);
    finish(plan, t, costs, deviceOfNode);
    return plan;
}

} // namespace engine::plan
