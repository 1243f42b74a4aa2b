#include "engine/plan/planner.h"

#include "engine/core/byteunits.h"
#include "engine/core/error.h"
#include "engine/core/format.h"
#include "engine/plan/accelerate.h"
#include "engine/plan/lint.h"
#include "engine/plan/memorymodel.h"

#include <algorithm>
#include <map>

namespace engine::plan {
namespace {

std::vector<std::string> noSplitClassesFor(const PlanModel &model, const PlanSettings &settings)
{
    return settings.noSplit ? *settings.noSplit : model.tree.noSplitClasses;
}

// Where a device's layers compute: disk-resident layers run on the CPU (tunebench maps them and
// computes there); everything else in place.
std::vector<int> executionDevices(const std::vector<DeviceSpec> &devices)
{
    const int cpu = findDevice(devices, "cpu");
    std::vector<int> out;
    for (size_t i = 0; i < devices.size(); ++i)
        out.push_back(devices[i].kind == DeviceKind::Disk && cpu >= 0 ? cpu : static_cast<int>(i));
    return out;
}

std::string bytes(int64_t b) { return formatBytes(b); }

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

Evaluation evaluate(const FlatTree &t, const std::vector<DeviceSpec> &devices, const PlanSettings &settings,
                    const NodeCosts &c, const std::vector<int> &deviceOfNode)
{
    const size_t n = devices.size();
    const bool training = settings.train != TrainMode::None;
    const std::vector<int> exec = executionDevices(devices);
    std::vector<int64_t> W(n), L(n), G(n), O(n), A(n), Lf(n), Lb(n), T(n), H(n), Htied(n);
    for (size_t i = 0; i < t.nodes.size(); ++i) {
        const int d = deviceOfNode[i];
        if (d < 0)
            continue;
        const int e = exec[d];
        W[d] += c.weights[i];
        L[d] += c.lora[i];
        G[d] += c.gradients[i];
        O[d] += c.optimizer[i];
        T[d] = std::max(T[d], c.optimizerTemp[i]);
        A[e] += c.saved[i];
        Lf[e] += c.logitsForward[i];
        Lb[e] += c.logitsBackward[i];
        // Backward starts at the head: its weight gradient (a tied head's lands on its partner's device).
        if (c.logitsForward[i] > 0 && settings.train == TrainMode::Full) {
            for (const int item : t.nodes[i].items) {
                const FlatNode &p = t.nodes[item];
                if (!p.isParam)
                    continue;
                int where = d;
                if (p.tiedDuplicate) {
                    for (const auto &group : t.tiedGroups) {
                        if (std::find(group.begin(), group.end(), p.name) == group.end())
                            continue;
                        for (const std::string &other : group) {
                            const int o = t.find(other);
                            if (o >= 0 && !t.nodes[o].tiedDuplicate && deviceOfNode[o] >= 0)
                                where = deviceOfNode[o];
                        }
                    }
                }
                H[where] += p.numel * 4;
                if (p.tiedDuplicate)
                    Htied[where] += p.numel * 4;
            }
        }
    }
    // Backward through the blocks, walked from the last (blocks in registration order are execution order).
    // While block k runs backward its execution device holds what forward saved up to the end of k (the
    // later blocks' sets and the loss's were freed once their backward ran), the gradients of every
    // parameter from k on (a tied head's on its partner), k's recompute and working set, and the logits
    // the caller still holds (half of Lf).
    std::vector<MemoryBreakdown> blockPeak(n);
    if (training) {
        std::vector<int64_t> savedBefore(n, 0), gradsBefore(n, 0), gradsTotal(n, 0);
        for (size_t i = 0; i < t.nodes.size(); ++i) {
            if (deviceOfNode[i] >= 0)
                gradsTotal[deviceOfNode[i]] += c.gradients[i];
        }
        for (size_t i = 0; i < t.nodes.size(); ++i) {
            const int d = deviceOfNode[i];
            if (c.block[i] && d >= 0) {
                const int e = exec[d];
                int64_t saved = savedBefore[e];
                for (int j = static_cast<int>(i); j < t.nodes[i].end; ++j) {
                    if (deviceOfNode[j] >= 0 && exec[deviceOfNode[j]] == e)
                        saved += c.saved[j];
                }
                MemoryBreakdown at{W[e], L[e], gradsTotal[e] - gradsBefore[e] + Htied[e], O[e],
                                   saved + c.recompute[i] + c.working[i], Lf[e] / 2, 0};
                if (at.total() > blockPeak[e].total())
                    blockPeak[e] = at;
            }
            if (d >= 0) {
                savedBefore[exec[d]] += c.saved[i];
                gradsBefore[d] += c.gradients[i];
            }
        }
    }
    Evaluation ev;
    double worst = -1.0;
    for (size_t d = 0; d < n; ++d) {
        DeviceUsage u;
        u.device = devices[d];
        const int64_t overhead = training && devices[d].isGpu() && (W[d] + A[d] + Lf[d] > 0) ? devices[d].overheadBytes : 0;
        if (!training) {
            u.memory.weights = W[d];
            u.peakPhase = Phase::Load;
        } else {
            MemoryBreakdown fwd{W[d], L[d], 0, O[d], A[d], Lf[d], overhead};
            // Start of backward: every saved set, and the loss's tensors: the logits, log-probabilities and
            // both their gradients (Lf + Lb) in log_softmax's backward; then in the head's backward the logits,
            // their gradient and the head's weight gradient ((Lf + Lb) / 2 + H).
            MemoryBreakdown bwd{W[d], L[d], 0, O[d], A[d], Lf[d] + Lb[d], overhead};
            if ((Lf[d] + Lb[d]) / 2 + H[d] > Lf[d] + Lb[d]) {
                bwd.gradients = H[d];
                bwd.logits = (Lf[d] + Lb[d]) / 2;
            }
            MemoryBreakdown blocks = blockPeak[d];
            blocks.overhead = overhead;
            if (blocks.total() > bwd.total())
                bwd = blocks;
            MemoryBreakdown opt{W[d], L[d], G[d], O[d], T[d], 0, overhead};
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
        }
        u.peakBytes = u.memory.total();
        const std::string label = deviceLabel(devices[d]);
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
    plan.lint = lintPlan(plan, t, costs, deviceOfNode);
}

// Known parameterless modules of transformers classes, which Accelerate's maps may name.
bool parameterlessName(const std::string &local)
{
    static const char *names[] = {"rotary_emb", "act_fn", "act", "drop", "dropout", "attn_dropout", "resid_dropout",
                                  "activation_func", "gelu"};
    return std::any_of(std::begin(names), std::end(names), [&](const char *n) { return local == n; });
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

    AutoMapInput in{&t, training ? costs.placementSizes(t) : moduleSizes(t, weightBytes), flags, !training,
                    settings.fallbackAllocation};
    std::vector<DeviceSpec> devices = withDisk(devicesIn);
    std::vector<DeviceSpec> planning = devices;
    if (training) {
        int64_t transient = 0, temp = 0;
        for (size_t i = 0; i < t.nodes.size(); ++i) {
            transient = std::max(transient, costs.working[i] + costs.recompute[i]);
            temp = std::max(temp, costs.optimizerTemp[i]);
        }
        for (DeviceSpec &d : planning) {
            if (d.kind == DeviceKind::Disk)
                continue;
            d.budget = std::max<int64_t>(1, d.budget - (d.isGpu() ? d.overheadBytes : 0) - transient - temp);
        }
    }
    const std::vector<int64_t> budgets = settings.strategy == Strategy::Sequential
        ? plainMemory(planning)
        : balancedMemory(in, planning, settings.strategy == Strategy::BalancedLow0);
    const AutoMapResult result = inferAutoDeviceMap(in, planning, budgets);
    plan.devices = devices;

    // The map, with an explanation per entry.
    const std::vector<MapEntry> cleaned = cleanDeviceMap(t, result.placed);
    std::vector<size_t> firstPlacement(t.nodes.size(), SIZE_MAX);
    for (size_t k = 0; k < result.placed.size(); ++k) {
        const PlacedItem &p = result.placed[k];
        for (int a = p.node; a >= 0; a = t.nodes[a].parent)
            firstPlacement[a] = std::min(firstPlacement[a], k);
    }
    for (const MapEntry &e : cleaned) {
        const int node = t.find(e.module);
        const DeviceSpec &dev = devices[e.device];
        const std::string label = deviceLabel(dev);
        std::string text = (e.module.empty() ? std::string("the whole model") : e.module) + " -> " + label + ": needs "
            + costText(costs, t, node, training);
        const size_t k = node >= 0 ? firstPlacement[node] : SIZE_MAX;
        const DeviceSkip *why = nullptr;
        for (const DeviceSkip &s : result.skips) {
            if (k != SIZE_MAX && s.placedBefore <= k && s.device < e.device)
                why = &s;
        }
        if (why) {
            const std::string budgetNote = why->reserved > 0
                ? " (after keeping " + bytes(why->reserved) + " free for the largest layer, Accelerate's reserve)"
                : std::string();
            text += "; " + deviceLabel(devices[why->device]) + " had " + bytes(std::max<int64_t>(0, why->room)) + " left"
                + budgetNote + " and " + t.nodes[why->node].name + " needs " + bytes(why->itemSize);
        } else if (k != SIZE_MAX && result.placed[k].freeBefore >= 0) {
            text += "; " + label + " had " + bytes(result.placed[k].freeBefore) + " free";
        }
        plan.deviceMap.push_back({e.module, dev.key(), text});
    }
    for (const DeviceSkip &s : result.skips) {
        if (!s.emptyDevice || devices[s.device].kind == DeviceKind::Disk)
            continue;
        plan.minimums.push_back(deviceLabel(devices[s.device]) + " would need at least "
                                + bytes(s.itemSize + s.reserved + (training && devices[s.device].isGpu() ? devices[s.device].overheadBytes : 0))
                                + " to hold " + t.nodes[s.node].name + " (" + bytes(s.itemSize) + ")"
                                + (s.reserved > 0 ? " plus the reserve of " + bytes(s.reserved) : std::string()));
    }
    finish(plan, t, costs, devicesOfNodes(t, cleaned));
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
            text = (e.module.empty() ? std::string("the whole model") : e.module) + " -> " + deviceLabel(plan.devices[e.device])
                + ": moved by hand; needs " + costText(costs, t, t.find(e.module), plan.settings.train != TrainMode::None);
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
            kept.back().explanation = (p.module.empty() ? std::string("the whole model") : p.module) + " -> "
                + deviceLabel(plan.devices[d]) + ": as the imported map says";
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
    finish(plan, t, costs, deviceOfNode);
    return plan;
}

} // namespace engine::plan
