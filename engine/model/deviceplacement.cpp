#include "engine/model/deviceplacement.h"

#include "engine/core/atomicfile.h"
#include "engine/core/error.h"
#include "engine/core/jsonnesting.h"

#include <nlohmann/json.hpp>

#include <charconv>
#include <map>
#include <set>

namespace engine::model {
namespace {

constexpr const char *kAcceptedDevices = "\"cpu\", \"disk\", \"cuda\", \"cuda:N\" or a GPU index N";

/// N for the decimal text of a non-negative int, or -1.
int parseIndex(std::string_view text)
{
    int value = -1;
    if (text.empty() || text.size() > 6)
        return -1;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    return ec == std::errc() && end == text.data() + text.size() && value >= 0 ? value : -1;
}

/// "a", "b" and "c" ... (N in all): at most `shown` names, for one-line messages.
std::string nameList(const std::vector<std::string> &names, size_t shown = 8)
{
    std::string text;
    for (size_t i = 0; i < names.size() && i < shown; ++i)
        text += (i ? ", '" : "'") + names[i] + "'";
    if (names.size() > shown)
        text += " ... (" + std::to_string(names.size()) + " in all)";
    return text;
}

} // namespace

bool prefixCovers(std::string_view prefix, std::string_view name)
{
    if (prefix.empty())
        return true;
    if (!name.starts_with(prefix))
        return false;
    return name.size() == prefix.size() || name[prefix.size()] == '.';
}

std::string normalizeDevice(const std::string &device, const std::string &label)
{
    if (device == "cpu" || device == "disk")
        return device;
    if (device == "cuda")
        return "cuda:0";
    std::string_view index = device;
    if (index.starts_with("cuda:"))
        index.remove_prefix(5);
    if (const int n = parseIndex(index); n >= 0)
        return "cuda:" + std::to_string(n);
    throw invalidInput(label + ": device \"" + device + "\" is not one of " + kAcceptedDevices);
}

int cudaIndex(const std::string &device)
{
    return device.starts_with("cuda:") ? parseIndex(std::string_view(device).substr(5)) : -1;
}

DevicePlacement DevicePlacement::everything(const std::string &device)
{
    return DevicePlacement{{{"", normalizeDevice(device, "device")}}};
}

DevicePlacement DevicePlacement::fromJson(const std::string &text, const std::string &label)
{
    nlohmann::ordered_json json;
    // JSON parsers keep one of two equal keys silently; a map that names a module twice is refused.
    std::set<std::string> topKeys;
    std::string duplicate;
    auto noteKey = [&](int depth, nlohmann::ordered_json::parse_event_t event, nlohmann::ordered_json &parsed) {
        if (event == nlohmann::ordered_json::parse_event_t::key && depth == 1 && duplicate.empty()
            && !topKeys.insert(parsed.get<std::string>()).second)
            duplicate = parsed.get<std::string>();
        return true;
    };
    checkJsonNesting(text, label);
    try {
        json = nlohmann::ordered_json::parse(text, noteKey);
    } catch (const nlohmann::json::exception &e) {
        throw invalidInput(label + ": not valid JSON (" + e.what() + ")");
    }
    if (!duplicate.empty() && !json.contains("device_map"))
        throw invalidInput(label + ": the device map names '" + duplicate + "' more than once");
    if (json.is_object() && json.contains("device_map") && json["device_map"].is_object())
        json = nlohmann::ordered_json(json["device_map"]);
    if (!json.is_object())
        throw invalidInput(label + ": a device map must be a JSON object of module name to device, "
                                   "as {\"model.layers.0\": 0, \"lm_head\": \"cpu\"}");
    if (json.empty())
        throw invalidInput(label + ": the device map is empty");
    DevicePlacement placement;
    for (const auto &[module, value] : json.items()) {
        const std::string where = label + ": module '" + module + "'";
        if (value.is_number_integer() && value.get<int64_t>() >= 0 && value.get<int64_t>() < 1'000'000)
            placement.entries.emplace_back(module, "cuda:" + std::to_string(value.get<int64_t>()));
        else if (value.is_string())
            placement.entries.emplace_back(module, normalizeDevice(value.get<std::string>(), where));
        else
            throw invalidInput(where + ": device " + value.dump() + " is not one of " + kAcceptedDevices);
    }
    return placement;
}

DevicePlacement DevicePlacement::fromFile(const std::filesystem::path &path)
{
    return fromJson(readFile(path), path.string());
}

const std::string *DevicePlacement::deviceOf(std::string_view parameterName) const
{
    const std::pair<std::string, std::string> *best = nullptr;
    for (const auto &entry : entries) {
        if (prefixCovers(entry.first, parameterName) && (!best || entry.first.size() > best->first.size()))
            best = &entry;
    }
    return best ? &best->second : nullptr;
}

std::string DevicePlacement::toJson() const
{
    nlohmann::ordered_json json = nlohmann::ordered_json::object();
    for (const auto &[module, device] : entries) {
        if (const int index = cudaIndex(device); index >= 0)
            json[module] = index;
        else
            json[module] = device;
    }
    return json.dump(2);
}

std::vector<std::string> resolvePlacement(const DevicePlacement &placement,
                                          const std::vector<std::string> &parameterNames, int cudaDevices,
                                          const std::string &label,
                                          const std::vector<std::pair<std::string, std::string>> &aliases,
                                          const std::vector<std::string> &bufferModules)
{
    std::set<std::string> seen;
    std::vector<std::string> duplicates;
    for (const auto &[module, device] : placement.entries) {
        if (!seen.insert(module).second)
            duplicates.push_back(module);
    }
    if (!duplicates.empty())
        throw invalidInput(label + ": the device map names " + nameList(duplicates) + " more than once");
    if (placement.entries.empty())
        throw invalidInput(label + ": the device map is empty");

    for (const auto &[module, device] : placement.entries) {
        const int index = cudaIndex(device);
        if (index < 0)
            continue;
        if (cudaDevices <= 0)
            throw invalidInput(label + ": module '" + module + "' is placed on " + device
                               + ", but CUDA is not available here (place it on \"cpu\" or \"disk\")");
        if (index >= cudaDevices)
            throw invalidInput(label + ": module '" + module + "' is placed on " + device + ", but only "
                               + std::to_string(cudaDevices) + " CUDA device(s) exist (cuda:0 .. cuda:"
                               + std::to_string(cudaDevices - 1) + ")");
    }

    std::vector<std::string> unknown;
    for (const auto &[module, device] : placement.entries) {
        bool covers = false;
        for (const std::string &name : parameterNames)
            covers = covers || prefixCovers(module, name);
        for (const auto &alias : aliases)
            covers = covers || prefixCovers(module, alias.first);
        for (const std::string &buffers : bufferModules)
            covers = covers || prefixCovers(module, buffers);
        if (!covers)
            unknown.push_back(module);
    }
    if (!unknown.empty())
        throw invalidInput(label + ": the device map names " + nameList(unknown)
                           + ", which the model has no parameters under (unknown module names)");

    std::vector<std::string> devices;
    std::vector<std::string> unplaced;
    std::map<std::string, std::string> byName;
    devices.reserve(parameterNames.size());
    for (const std::string &name : parameterNames) {
        const std::string *device = placement.deviceOf(name);
        if (!device)
            unplaced.push_back(name);
        devices.push_back(device ? *device : std::string());
        byName[name] = devices.back();
    }
    if (!unplaced.empty())
        throw invalidInput(label + ": the device map places no device for parameter(s) " + nameList(unplaced)
                           + " (add their modules, or \"\" for everything else)");

    for (const auto &[alias, target] : aliases) {
        // Only an entry that names the alias's module places it; "" (everything else) does not.
        const std::string *aliasDevice = placement.deviceOf(alias);
        const auto owner = byName.find(target);
        bool named = false;
        for (const auto &entry : placement.entries)
            named = named || (!entry.first.empty() && prefixCovers(entry.first, alias));
        if (named && aliasDevice && owner != byName.end() && *aliasDevice != owner->second)
            throw invalidInput(label + ": '" + alias + "' is tied to '" + target + "' (one tensor), but the map puts it on "
                               + *aliasDevice + " and '" + target + "' on " + owner->second
                               + "; place both on the same device");
    }
    return devices;
}

} // namespace engine::model
