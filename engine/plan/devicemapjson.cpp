#include "engine/plan/devicemapjson.h"

#include "engine/core/atomicfile.h"
#include "engine/core/byteunits.h"
#include "engine/core/error.h"
#include "engine/core/jsonnesting.h"
#include "engine/plan/planner.h"


namespace engine::plan {
namespace {

using nlohmann::json;
using ojson = nlohmann::ordered_json;

ojson deviceValue(const std::string &key)
{
    if (key == "cpu" || key == "disk")
        return key;
    return std::stoi(key);
}

std::string parseDeviceValue(const ojson &value, const std::string &where)
{
    if (value.is_number_integer() && value.get<int64_t>() >= 0 && value.get<int64_t>() < 256)
        return std::to_string(value.get<int64_t>());
    if (value.is_string()) {
        const std::string s = value.get<std::string>();
        if (s == "cpu" || s == "disk")
            return s;
        // At most three digits, as for a bare "12": std::stoi threw std::out_of_range past int.
        if (s.rfind("cuda:", 0) == 0 && s.size() > 5 && s.size() <= 8
            && s.find_first_not_of("0123456789", 5) == std::string::npos)
            return std::to_string(std::stoi(s.substr(5)));
        if (!s.empty() && s.size() < 4 && s.find_first_not_of("0123456789") == std::string::npos)
            return s;
    }
    throw invalidInput(where + " is " + value.dump() + ": a device is a GPU index (0, 1, ...), \"cpu\" or \"disk\"");
}

} // namespace

ojson deviceMapJson(const Plan &plan)
{
    ojson map = ojson::object();
    for (const Placement &p : plan.deviceMap)
        map[p.module] = deviceValue(p.device);
    return map;
}

ojson exportJson(const Plan &plan)
{
    ojson memory = ojson::object();
    for (const DeviceSpec &d : plan.devices) {
        if (!d.unbounded() && d.budget > 0)
            memory[d.key()] = d.budget;
    }
    ojson out = ojson::object();
    out["device_map"] = deviceMapJson(plan);
    out["max_memory"] = memory;
    return out;
}

ojson planJson(const Plan &plan)
{
    ojson devices = ojson::array();
    for (const DeviceUsage &u : plan.usage) {
        const MemoryBreakdown &m = u.memory;
        devices.push_back({{"device", deviceValue(u.device.key())},
                           {"name", u.device.name},
                           {"budget", u.device.budget},
                           {"weights", m.weights},
                           {"lora", m.lora},
                           {"gradients", m.gradients},
                           {"optimizer", m.optimizer},
                           {"activations", m.activations},
                           {"logits", m.logits},
                           {"overhead", m.overhead},
                           {"total", u.peakBytes},
                           {"free", u.device.budget > 0 ? u.device.budget - u.peakBytes : 0},
                           {"peak_phase", phaseName(u.peakPhase)},
                           {"fits", u.fits},
                           {"verdict", u.verdict}});
    }
    ojson lint = ojson::array();
    for (const LintFinding &f : plan.lint)
        lint.push_back({{"id", f.id}, {"severity", f.severity}, {"message", f.message}, {"fix", f.fix}});
    ojson explanations = ojson::array();
    for (const Placement &p : plan.deviceMap)
        explanations.push_back(p.explanation);
    ojson attention = ojson::array();
    for (const AttentionSpan &a : plan.attention)
        attention.push_back({{"layers", {a.firstLayer, a.lastLayer}},
                             {"window", a.window > 0 ? ojson(a.window) : ojson(nullptr)},
                             {"scores_per_layer", a.scoresBytes},
                             {"kv_cache_tokens", a.kvCacheTokens},
                             {"kv_cache_per_layer", a.kvCacheBytes}});
    ojson peak = {{"device", plan.peak.device.empty() ? ojson(nullptr) : deviceValue(plan.peak.device)},
                 {"phase", phaseName(plan.peak.phase)},
                 {"bytes", plan.peak.bytes}};
    return ojson{{"device_map", deviceMapJson(plan)},
            {"devices", devices},
            {"peak", peak},
            {"verdict", plan.fits ? "fits" : plan.memoryFits ? "invalid" : "does_not_fit"},
            {"lint", lint},
            {"explanations", explanations},
            {"warnings", plan.warnings},
            {"strategy", strategyName(plan.settings.strategy)},
            {"train", trainModeName(plan.settings.train)},
            {"no_split", plan.noSplit},
            {"attention", {{"implementation", "eager"}, {"layers", attention}}}};
}

ojson readDeviceMapFile(const std::filesystem::path &file)
{
    const std::string text = readFile(file);
    checkJsonNesting(text, file.string());
    try {
        return ojson::parse(text);
    } catch (const json::exception &e) {
        throw invalidInput(file.string() + ": not valid JSON (" + e.what() + ")");
    }
}

Plan importDeviceMap(const ojson &document, const std::string &source, std::vector<DeviceSpec> devices,
                     const PlanSettings &settings)
{
    if (!document.is_object())
        throw invalidInput(source + ": a device map must be a JSON object, got " + std::string(document.type_name()));
    const ojson *map = &document;
    if (document.contains("device_map")) {
        map = &document["device_map"];
        if (!map->is_object())
            throw invalidInput(source + ": \"device_map\" must be an object of module name to device");
        if (devices.empty() && document.contains("max_memory")) {
            const ojson &memory = document["max_memory"];
            if (!memory.is_object())
                throw invalidInput(source + ": \"max_memory\" must be an object of device to size");
            std::string text;
            for (const auto &[key, value] : memory.items()) {
                const std::string size = value.is_string() ? value.get<std::string>()
                                         : value.is_number_integer() ? std::to_string(value.get<int64_t>())
                                                                     : value.dump();
                text += (text.empty() ? "" : ",") + key + "=" + size;
            }
            if (!text.empty())
                devices = parseMaxMemory(text);
        }
    }
    Plan plan;
    plan.settings = settings;
    for (const auto &[module, value] : map->items()) {
        const std::string key = parseDeviceValue(value, source + ": device_map[\"" + module + "\"]");
        plan.deviceMap.push_back({module, key, {}});
    }
    if (plan.deviceMap.empty())
        throw invalidInput(source + ": the device map is empty");
    // Devices the map names but the budgets do not: added without a budget (no verdict for them).
    for (const Placement &p : plan.deviceMap) {
        if (findDevice(devices, p.device) >= 0)
            continue;
        DeviceSpec d;
        if (p.device == "cpu") {
            d.kind = DeviceKind::Cpu;
            d.name = "CPU RAM";
            d.overheadBytes = kDefaultCpuOverheadBytes;
        } else if (p.device == "disk") {
            d.kind = DeviceKind::Disk;
            d.name = "disk";
        } else {
            d.kind = DeviceKind::Gpu;
            d.index = std::stoi(p.device);
            d.name = "GPU " + p.device;
            d.overheadBytes = kDefaultGpuOverheadBytes;
        }
        if (!devices.empty() && !devices.front().name.empty() && d.kind == DeviceKind::Gpu)
            throw invalidInput(source + ": device_map[\"" + p.module + "\"] is on GPU " + p.device
                               + ", which --max-memory does not give");
        devices.push_back(d);
    }
    std::stable_sort(devices.begin(), devices.end(), [](const DeviceSpec &a, const DeviceSpec &b) {
        const auto rank = [](const DeviceSpec &d) { return d.isGpu() ? d.index : d.kind == DeviceKind::Cpu ? 1000 : 1001; };
        return rank(a) < rank(b);
    });
    plan.devices = devices;
    return plan;
}

} // namespace engine::plan
