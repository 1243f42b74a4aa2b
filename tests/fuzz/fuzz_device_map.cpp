// An imported device map (`tunebench plan --import`, the Plan page's Import): Accelerate's
// device_map, bare or inside the export file with max_memory, checked against a small model by
// Planner::revalidate as the CLI does.

#include "engine/plan/devicemapjson.h"
#include "engine/plan/planmodel.h"
#include "engine/plan/planner.h"
#include "fuzzsupport.h"

#include <nlohmann/json.hpp>

namespace {

// A 4-layer LLaMA: small enough to plan in microseconds, with every kind of module a map can name.
const engine::plan::Planner &planner()
{
    static const engine::plan::Planner instance(engine::plan::planModelFromConfig(
        nlohmann::json{{"model_type", "llama"},
                       {"hidden_size", 64},
                       {"intermediate_size", 128},
                       {"num_attention_heads", 4},
                       {"num_key_value_heads", 2},
                       {"num_hidden_layers", 4},
                       {"vocab_size", 256},
                       {"torch_dtype", "float16"}},
        "config.json"));
    return instance;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    using namespace engine::plan;
    nlohmann::ordered_json document;
    try {
        document = nlohmann::ordered_json::parse(fuzz::asText(data, size));
    } catch (const nlohmann::json::exception &) {
        return 0; // the callers turn this into their own "not valid JSON" error
    }
    PlanSettings settings;
    for (const bool withDevices : {false, true}) {
        std::vector<DeviceSpec> devices;
        if (withDevices)
            devices = parseMaxMemory("0=1MiB,1=1MiB,cpu=4MiB");
        fuzz::expectCleanError([&] {
            Plan imported = importDeviceMap(document, "map.json", devices, settings);
            imported.modelType = planner().model().tree.modelType;
            const Plan plan = planner().revalidate(imported);
            planJson(plan).dump();
            exportJson(plan).dump();
        });
    }
    return 0;
}
