// Accelerate-format export and import, the --json schema, and the Python snippet.

#include "engine/plan/devicemapjson.h"
#include "engine/plan/planner.h"
#include "planfixtures.h"
#include "support/expecterror.h"

#include <gtest/gtest.h>

using namespace engine::plan;
using engine::ErrorKind;
using nlohmann::json;
using testing_support::expectError;

namespace {

Plan tinyPlan(const Planner &planner)
{
    PlanSettings s;
    s.strategy = Strategy::Sequential;
    return planner.plan(parseMaxMemory("0=250,1=1000,cpu=1000"), s);
}

} // namespace

TEST(DeviceMapJson, AccelerateFormatWithIntegerGpus)
{
    const Planner planner(plan_fixtures::tinyModel());
    const Plan plan = tinyPlan(planner);
    const json map = deviceMapJson(plan);
    EXPECT_EQ(map["embed"], 1);
    EXPECT_TRUE(map["embed"].is_number_integer());
    EXPECT_EQ(map["layers.3"], "cpu");
    const json file = exportJson(plan);
    EXPECT_EQ(file["max_memory"]["0"], 250);
    EXPECT_EQ(file["max_memory"]["cpu"], 1000);
    EXPECT_FALSE(file["max_memory"].contains("disk"));

    const json out = planJson(plan);
    for (const char *key : {"device_map", "devices", "peak", "verdict", "lint", "explanations"})
        EXPECT_TRUE(out.contains(key)) << key;
    EXPECT_EQ(out["verdict"], "fits");
    EXPECT_EQ(out["devices"][0]["device"], 0);
    EXPECT_EQ(out["devices"][1]["weights"], 1000);
    EXPECT_EQ(out["explanations"].size(), plan.deviceMap.size());
    EXPECT_TRUE(out["peak"].contains("phase"));
}

TEST(DeviceMapJson, ImportRoundTripAndValidation)
{
    const Planner planner(plan_fixtures::tinyModel());
    const Plan plan = tinyPlan(planner);
    const Plan back = planner.revalidate(importDeviceMap(exportJson(plan), "map.json", {}, plan.settings));
    EXPECT_EQ(deviceMapJson(back), deviceMapJson(plan));
    ASSERT_EQ(back.usage.size(), plan.usage.size());
    for (size_t i = 0; i < plan.usage.size(); ++i)
        EXPECT_EQ(back.usage[i].memory, plan.usage[i].memory);
    EXPECT_EQ(back.devices[0].budget, 250);

    // A bare device_map with "cuda:N" values, and parameterless modules Accelerate's maps can name.
    const json bare = {{"embed", "cuda:0"}, {"layers", 0}, {"layers.0.rotary_emb", 0}, {"norm", "cpu"}, {"lm_head", "disk"}};
    const Plan fromBare = planner.revalidate(importDeviceMap(bare, "bare.json", parseMaxMemory("0=10000,cpu=1000"), {}));
    EXPECT_EQ(fromBare.usageOf("0")->memory.weights, 1300);
    EXPECT_EQ(fromBare.usageOf("disk")->memory.weights, 100);

    const auto devices = parseMaxMemory("0=10000,cpu=1000");
    expectError([&] { planner.revalidate(importDeviceMap({{"embed", 0}, {"encoder", 0}, {"layers", 0}, {"norm", 0}, {"lm_head", 0}}, "m.json", devices, {})); },
                ErrorKind::InvalidInput, "\"encoder\" names no module");
    expectError([&] { planner.revalidate(importDeviceMap({{"embed", 0}, {"layers.0", 0}}, "m.json", devices, {})); },
                ErrorKind::InvalidInput, "unplaced: layers.1.attn.weight");
    expectError([&] { planner.revalidate(importDeviceMap({{"", 0}, {"embed", "cpu"}}, "m.json", devices, {})); },
                ErrorKind::InvalidInput, "overlap");
    expectError([&] { importDeviceMap({{"embed", "tpu"}}, "m.json", devices, {}); }, ErrorKind::InvalidInput,
                "device_map[\"embed\"]");
    expectError([&] { importDeviceMap({{"", 3}}, "m.json", devices, {}); }, ErrorKind::InvalidInput,
                "which --max-memory does not give");
    expectError([&] { importDeviceMap(json::array(), "m.json", devices, {}); }, ErrorKind::InvalidInput, "JSON object");
    expectError([&] { importDeviceMap(json::object(), "m.json", devices, {}); }, ErrorKind::InvalidInput, "empty");
}

