#include "engine/inspect/scenariocatalog.h"

#include "engine/core/error.h"
#include "engine/inspect/inspector.h"

#include <map>

namespace engine::inspect {
namespace {

const std::map<std::string, ScenarioInfo> &catalog()
{
    static const std::map<std::string, ScenarioInfo> all = {
        {"kv-cache-inplace",
         {"LLaMA attention with a preallocated KV cache written in place (cache_k[:, pos] = xk) during incremental "
          "decoding with gradients on: backward fails"}},
        {"kv-cache-fixed", {"the same decoding with the cache cloned before each write: backward succeeds", false}},
        {"nan-log", {"a loss that takes the log of values that can be negative: NaN in the forward pass"}},
        {"frozen-in-optimizer", {"a frozen embedding left in the optimizer and a trainable bias missing from it"}},
        {"silent-mutation", {"a saved tensor changed through .data (no version bump): gradients silently wrong"}},
    };
    return all;
}

} // namespace

const ScenarioInfo &scenarioInfo(const std::string &name)
{
    auto it = catalog().find(name);
    if (it == catalog().end())
        throw invalidInput("unknown scenario '" + name + "' (known: " + [] {
            std::string known;
            for (const auto &[n, info] : catalog())
                known += (known.empty() ? "" : ", ") + n;
            return known;
        }() + ")");
    return it->second;
}

std::vector<std::string> scenarioNames()
{
    std::vector<std::string> names;
    for (const auto &[name, info] : catalog())
        names.push_back(name);
    return names;
}

std::string scenarioDescription(const std::string &name) { return scenarioInfo(name).description; }

} // namespace engine::inspect
