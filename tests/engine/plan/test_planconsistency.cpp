// Training plans agree with themselves: the placement and the verdict count the same bytes. Over many
// configs, budgets, methods and settings: a module the walk put on a later device does not fit on the
// device before it by the plan's own numbers; importing a plan's own map gives the same plan; moving a
// module away and back gives the same plan. Plus the inconsistencies users reported, as regressions.

#include "engine/core/error.h"
#include "engine/core/format.h"
#include "engine/plan/accelerate.h"
#include "engine/plan/advisor.h"
#include "engine/plan/devicemapjson.h"
#include "engine/plan/memorymodel.h"
#include "engine/plan/planner.h"
#include "engine/plan/trainingplacement.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <tuple>
#include <string>
#include <vector>

using namespace engine::plan;

namespace {

const std::filesystem::path kConfigs = std::filesystem::path(TUNEBENCH_TEST_DATA) / "model" / "configs";

struct Case {
    std::string config;
    std::string memory;
    PlanSettings settings;
    std::string label() const
    {
        return config + " on " + memory + ", " + trainModeName(settings.train) + ", " + strategyName(settings.strategy)
            + ", batch " + std::to_string(settings.batchSize) + " x " + std::to_string(settings.sequenceLength)
            + (settings.checkpointing ? ", checkpointing" : "") + ", dtype " + (settings.dtype.empty() ? "stored" : settings.dtype);
    }
};

std::vector<Case> cases()
{
    const std::vector<std::pair<std::string, std::vector<std::string>>> models = {
        {"llama-3.1-8b.json", {"0=15GiB,1=15GiB,cpu=13GiB", "0=24GB,cpu=64GB", "0=40GiB,1=40GiB,2=40GiB,cpu=200GiB"}},
        {"llama-2-7b.json", {"0=16GB,1=16GB,cpu=32GB", "0=11GiB,cpu=20GiB"}},
        {"chatglm-6b.json", {"0=15GiB,1=15GiB,cpu=13GiB", "0=8GiB,cpu=40GiB"}},
        {"mistral-7b-v0.1.json", {"0=22GiB,1=22GiB,cpu=64GiB"}},
        {"qwen2-0.5b.json", {"0=3GiB,cpu=8GiB", "0=1500MiB,1=1500MiB,cpu=4GiB"}},
        {"gpt2.json", {"0=700MiB,1=700MiB,cpu=2GiB"}},
    };
    std::vector<Case> out;
    for (const auto &[config, memories] : models) {
        for (const std::string &memory : memories) {
            for (const TrainMode mode : {TrainMode::Lora, TrainMode::Full}) {
                for (const Strategy strategy : {Strategy::Sequential, Strategy::Auto}) {
                    for (const bool checkpointing : {false, true}) {
                        PlanSettings s;
                        s.train = mode;
                        s.strategy = strategy;
                        s.checkpointing = checkpointing;
                        s.batchSize = checkpointing ? 8 : 2;
                        s.sequenceLength = checkpointing ? 1024 : 512;
                        s.dtype = config == "gpt2.json" ? "" : "bfloat16";
                        out.push_back({config, memory, s});
                    }
                }
            }
        }
    }
    return out;
}

// The limits the walk kept to, as the planner computes them.
std::vector<int64_t> limitsOf(const Planner &planner, const Plan &plan)
{
    const FlatTree &t = planner.flatTree();
    const NodeCosts costs = computeCosts(t, planner.model(), plan.settings, planDtypeBytes(plan.settings.dtype),
                                         noSplitFlags(t, plan.noSplit));
    return trainingLimits(t, costs, plan.devices, plan.settings);
}

void expectSameNumbers(const Plan &a, const Plan &b, const std::string &what)
{
    ASSERT_EQ(a.usage.size(), b.usage.size()) << what;
    for (size_t d = 0; d < a.usage.size(); ++d) {
        EXPECT_EQ(a.usage[d].memory, b.usage[d].memory) << what << ": " << deviceLabel(a.usage[d].device);
        EXPECT_EQ(a.usage[d].peakPhase, b.usage[d].peakPhase) << what;
        EXPECT_EQ(a.usage[d].fits, b.usage[d].fits) << what;
    }
    EXPECT_EQ(a.fits, b.fits) << what;
    ASSERT_EQ(a.deviceMap.size(), b.deviceMap.size()) << what;
    for (size_t i = 0; i < a.deviceMap.size(); ++i) {
        EXPECT_EQ(a.deviceMap[i].module, b.deviceMap[i].module) << what;
        EXPECT_EQ(a.deviceMap[i].device, b.deviceMap[i].device) << what;
    }
}

} // namespace

TEST(PlanConsistency, NoModuleOnALaterDeviceFitsOnTheOneBefore)
{
    int boundaries = 0;
    for (const Case &c : cases()) {
        const Planner planner(planModelFromPath(kConfigs / c.config));
        const Plan plan = planner.plan(parseMaxMemory(c.memory), c.settings);
        const std::vector<int64_t> limits = limitsOf(planner, plan);
        // The first map entry on each device after the first used one: the module the walk could not add
        // to the device before. Moved there, that device goes over the limit the walk kept to.
        // (An entry on an earlier device than the one before it is a tied module kept with its partner.)
        std::string previous;
        for (const Placement &p : plan.deviceMap) {
            if (p.device == previous || p.device == "disk"
                || (!previous.empty() && findDevice(plan.devices, p.device) < findDevice(plan.devices, previous)))
                continue;
            const std::string before = previous;
            previous = p.device;
            if (before.empty())
                continue;
            const int d = findDevice(plan.devices, before);
            ASSERT_GE(d, 0);
            const Plan moved = planner.move(plan, p.module, before);
            const DeviceUsage &usage = moved.usage[static_cast<size_t>(d)];
            ++boundaries;
            EXPECT_GT(usage.peakBytes, limits[static_cast<size_t>(d)])
                << c.label() << ": " << p.module << " on " << p.device << " would fit on " << before << " ("
                << engine::formatBytes(usage.peakBytes) << " of " << engine::formatBytes(limits[static_cast<size_t>(d)]) << ")";
            if (limits[static_cast<size_t>(d)] == plan.devices[static_cast<size_t>(d)].budget) {
                EXPECT_FALSE(usage.fits) << c.label() << ": " << p.module;
            }
        }
        // And every device the walk filled fits, unless trainable layers had nowhere else to go.
        bool forced = false;
        for (const std::string &w : plan.warnings)
            forced = forced || w.find("cannot go to disk") != std::string::npos || w.find("compute on the CPU") != std::string::npos;
        if (!forced) {
            EXPECT_TRUE(plan.memoryFits) << c.label();
        }
    }
    EXPECT_GT(boundaries, 30) << "the cases cross enough device boundaries to mean something";
}

TEST(PlanConsistency, ImportingAPlansOwnMapGivesTheSamePlan)
{
    for (const Case &c : cases()) {
        const Planner planner(planModelFromPath(kConfigs / c.config));
        const Plan plan = planner.plan(parseMaxMemory(c.memory), c.settings);
        Plan stripped = plan;
        for (Placement &p : stripped.deviceMap)
            p.explanation.clear();
        stripped.usage.clear();
        stripped.lint.clear();
        expectSameNumbers(plan, planner.revalidate(stripped), c.label() + ", revalidated");
        // Through the JSON a user saves and imports.
        const Plan imported = planner.revalidate(
            importDeviceMap(planJson(plan), "plan.json", plan.devices, plan.settings));
        expectSameNumbers(plan, imported, c.label() + ", imported");
    }
}

TEST(PlanConsistency, MovingAModuleAwayAndBackGivesTheSamePlan)
{
    for (const Case &c : cases()) {
        const Planner planner(planModelFromPath(kConfigs / c.config));
        const Plan plan = planner.plan(parseMaxMemory(c.memory), c.settings);
        for (size_t i = 0; i < plan.deviceMap.size(); i += 7) {
            const Placement &p = plan.deviceMap[i];
            if (p.module.empty())
                continue;
            const std::string other = p.device == "cpu" ? (plan.devices.front().isGpu() ? "0" : "disk") : "cpu";
            const Plan away = planner.move(plan, p.module, other);
            bool changed = false;
            for (size_t d = 0; d < plan.usage.size(); ++d)
                changed = changed || !(away.usage[d].memory == plan.usage[d].memory);
            EXPECT_TRUE(changed) << c.label() << ": moving " << p.module << " changes the sums";
            expectSameNumbers(plan, planner.move(away, p.module, p.device), c.label() + ", " + p.module + " and back");
        }
    }
}

// Reported: Llama-3.1-8B full fine-tuning on two 15 GiB GPUs and 13 GiB of RAM said "GPU 1 had 2.20 GiB
// left and model.layers.2 needs 3.90 GiB" while its table showed GPU 1 at 8.75 of 15 GiB, and dragging
// model.layers.2 onto GPU 1 made a plan that fit. Each explanation now quotes the table's own figure.
TEST(PlanConsistency, ExplanationsQuoteTheTablesFigures)
{
    const Planner planner(planModelFromPath(kConfigs / "llama-3.1-8b.json"));
    for (const TrainMode mode : {TrainMode::Full, TrainMode::Lora}) {
        PlanSettings s;
        s.train = mode;
        s.dtype = "bfloat16";
        s.strategy = Strategy::Sequential;
        const Plan plan = planner.plan(parseMaxMemory("0=15GiB,1=15GiB,cpu=13GiB"), s);
        int quoted = 0;
        for (const Placement &p : plan.deviceMap) {
            const size_t at = p.explanation.find(" peaks at ");
            if (at == std::string::npos)
                continue;
            const size_t labelStart = p.explanation.rfind("; ", at) + 2;
            const std::string label = p.explanation.substr(labelStart, at - labelStart);
            for (const DeviceUsage &u : plan.usage) {
                if (deviceLabel(u.device) != label || u.device.kind == DeviceKind::Cpu)
                    continue;
                ++quoted;
                EXPECT_EQ(p.explanation.substr(at + 10, engine::formatBytes(u.peakBytes).size()),
                          engine::formatBytes(u.peakBytes))
                    << p.explanation;
            }
        }
        EXPECT_GE(quoted, 1) << trainModeName(mode);
    }
}

// Reported: --dtype float32 on a float16 checkpoint planned 2 bytes a weight (ChatGLM-6B "on GPU 0, 12.49
// GiB" where a float32 load needs about 25 GB). --dtype is the load dtype: 4 bytes a floating weight.
TEST(PlanConsistency, DtypeIsTheLoadDtype)
{
    const Planner planner(planModelFromPath(kConfigs / "chatglm-6b.json"));
    ASSERT_EQ(planner.model().tree.dtype, "float16");
    PlanSettings s;
    auto weights = [&](const std::string &dtype) {
        s.dtype = dtype;
        int64_t total = 0;
        for (const DeviceUsage &u : planner.plan(parseMaxMemory("0=15GiB,1=15GiB,cpu=40GiB"), s).usage)
            total += u.memory.weights;
        return total;
    };
    const int64_t stored = weights(""), half = weights("float16"), single = weights("float32");
    EXPECT_EQ(stored, half);
    EXPECT_NEAR(static_cast<double>(single) / static_cast<double>(half), 2.0, 0.001);
    EXPECT_GT(single, int64_t(24) * 1000 * 1000 * 1000) << "a float32 ChatGLM-6B is about 25 GB";
    s.dtype = "float32";
    const Plan plan = planner.plan(parseMaxMemory("0=15GiB,1=15GiB,cpu=40GiB"), s);
    EXPECT_NE(plan.deviceOf("transformer.layers.27"), plan.deviceOf("transformer.word_embeddings"))
        << "25 GB of weights do not fit on one 15 GiB GPU";
}

// A lint error makes the plan fail however much room it leaves: bf16 on a T4 cannot run.
TEST(PlanConsistency, ALintErrorMakesThePlanInvalid)
{
    const Planner planner(planModelFromPath(kConfigs / "qwen2-0.5b.json"));
    auto devices = parseMaxMemory("0=15GiB,cpu=13GiB");
    applyGpuPreset(devices[0], *findGpuPreset("T4"));
    PlanSettings s;
    s.train = TrainMode::Lora;
    s.dtype = "bfloat16";
    const Plan plan = planner.plan(devices, s);
    EXPECT_TRUE(plan.memoryFits);
    EXPECT_FALSE(plan.fits);
    EXPECT_EQ(planJson(plan)["verdict"], "invalid");
    s.dtype = "float16";
    const Plan ok = planner.plan(devices, s);
    EXPECT_TRUE(ok.fits);
    EXPECT_EQ(planJson(ok)["verdict"], "fits");
}

// The advisor: the reported Llama-3.1-8B full fine-tuning case gets plans that fit, and each is the plan its
// flags give when planned directly.
TEST(PlanAdvisor, TheNearestPlansThatFitAreThePlansTheirFlagsGive)
{
    const Planner planner(planModelFromPath(kConfigs / "llama-3.1-8b.json"));
    const auto devices = parseMaxMemory("0=15GiB,1=15GiB,cpu=13GiB");
    for (const auto &[mode, batch, seq] : {std::tuple{TrainMode::Full, 8, 128}, std::tuple{TrainMode::Lora, 8, 1024}}) {
        PlanSettings s;
        s.train = mode;
        s.batchSize = batch;
        s.sequenceLength = seq;
        s.dtype = "float32";
        ASSERT_FALSE(planner.plan(devices, s).fits);
        const std::vector<Advice> advice = advise(planner, devices, s);
        ASSERT_FALSE(advice.empty()) << trainModeName(mode);
        int previousCost = 0;
        for (const Advice &a : advice) {
            EXPECT_TRUE(a.plan.fits) << a.changes.dump();
            EXPECT_FALSE(a.why.empty());
            EXPECT_GE(a.cost, previousCost) << "nearest first";
            previousCost = a.cost;
            const Plan direct = planner.plan(devices, withChanges(s, a.changes));
            expectSameNumbers(direct, a.plan, a.changes.dump());
            EXPECT_EQ(direct.peak.bytes, a.plan.peak.bytes);
        }
        for (const Advice &a : advice) {
            if (mode == TrainMode::Full) { // 8B parameters with gradients and AdamW state cannot fit in 43 GiB
                EXPECT_EQ(a.changes["train"], "lora") << a.changes.dump();
            } else {
                EXPECT_FALSE(a.changes.contains("train"));
            }
        }
    }
}

TEST(PlanAdvisor, APlanThatFitsGetsTheLargestBatchThatFits)
{
    const Planner planner(planModelFromPath(kConfigs / "qwen2-0.5b.json"));
    const auto devices = parseMaxMemory("0=8GiB,cpu=13GiB");
    PlanSettings s;
    s.train = TrainMode::Lora;
    ASSERT_TRUE(planner.plan(devices, s).fits);
    const std::vector<Advice> advice = advise(planner, devices, s);
    ASSERT_EQ(advice.size(), 1u);
    const int64_t batch = advice[0].changes["batch-size"].get<int64_t>();
    EXPECT_GT(batch, s.batchSize);
    EXPECT_TRUE(planner.plan(devices, withChanges(s, advice[0].changes)).fits);
    EXPECT_FALSE(planner.plan(devices, withChanges(s, {{"batch-size", batch + 1}})).fits) << "the largest";
    // Weights-only plans get none; bad changes are refused by name.
    PlanSettings weights;
    EXPECT_TRUE(advise(planner, devices, weights).empty());
    EXPECT_THROW(withChanges(s, {{"learning-rate", 1}}), engine::Error);
    EXPECT_THROW(withChanges(s, {{"batch-size", "two"}}), engine::Error);
}

// Reported: an imported map with trainable layers on disk was labelled "FITS". The lint's error fails it.
TEST(PlanConsistency, AnImportedMapWithTrainableLayersOnDiskDoesNotFit)
{
    const Planner planner(planModelFromPath(kConfigs / "qwen2-0.5b.json"));
    PlanSettings s;
    s.train = TrainMode::Lora;
    const nlohmann::ordered_json map = {{"device_map", {{"model.embed_tokens", 0}, {"model.layers", "disk"},
                                                        {"model.norm", 0}, {"model.rotary_emb", 0}, {"lm_head", 0}}}};
    const Plan plan = planner.revalidate(importDeviceMap(map, "map.json", parseMaxMemory("0=8GiB,cpu=8GiB"), s));
    EXPECT_TRUE(plan.memoryFits);
    EXPECT_FALSE(plan.fits);
    EXPECT_EQ(planJson(plan)["verdict"], "invalid");
}
