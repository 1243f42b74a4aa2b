// Weights-only planning against Accelerate's infer_auto_device_map / get_balanced_memory /
// clean_device_map. Every expected map below is derived by hand from the published algorithm
// (accelerate/utils/modeling.py) on plan_fixtures::tinyModel (embed 100 B, four 300 B no-split
// blocks of attn 100 B + mlp 200 B, norm 20 B, lm_head 100 B or tied = 0 B; total 1420 B untied).

#include "engine/plan/accelerate.h"
#include "engine/plan/planner.h"
#include "planfixtures.h"

#include <gtest/gtest.h>

#include <map>

using namespace engine::plan;

namespace {

std::map<std::string, std::string> mapOf(const Plan &plan)
{
    std::map<std::string, std::string> out;
    for (const Placement &p : plan.deviceMap)
        out[p.module] = p.device;
    return out;
}

Plan weightsOnly(const PlanModel &model, const std::string &maxMemory, Strategy strategy)
{
    PlanSettings settings;
    settings.strategy = strategy;
    return Planner(model).plan(parseMaxMemory(maxMemory), settings);
}

using Map = std::map<std::string, std::string>;

} // namespace

// 0=250,1=1000,cpu=1000, sequential. The largest layer is a block (300 B). GPU 0 is a main device, so
// its usable size is 250 - 300 < 0: nothing fits, not even embed (100 B); Accelerate records a
// minimum of 100 + 300 = 400 B for it and moves on. GPU 1 keeps no reserve: embed, then `layers`
// (1200 B) is split, blocks 0-2 fill it to exactly 1000 (<= is allowed), block 3 moves on. cpu is a
// main device again; by then the largest remaining layer is lm_head (100 B), so 900 B are usable and
// block 3, norm and lm_head go there.
TEST(AccelerateParity, ReserveRuleLeavesSmallGpuEmpty)
{
    const Plan plan = weightsOnly(plan_fixtures::tinyModel(), "0=250,1=1000,cpu=1000", Strategy::Sequential);
    EXPECT_EQ(mapOf(plan), (Map{{"embed", "1"}, {"layers.0", "1"}, {"layers.1", "1"}, {"layers.2", "1"},
                                {"layers.3", "cpu"}, {"norm", "cpu"}, {"lm_head", "cpu"}}));
    ASSERT_EQ(plan.minimums.size(), 1u);
    EXPECT_NE(plan.minimums[0].find("GPU 0 would need at least 400 B"), std::string::npos) << plan.minimums[0];
    EXPECT_EQ(plan.usageOf("0")->memory.weights, 0);
    EXPECT_EQ(plan.usageOf("1")->memory.weights, 1000);
    // The explanation names why block 3 left GPU 1.
    for (const Placement &p : plan.deviceMap) {
        if (p.module == "layers.3") {
            EXPECT_NE(p.explanation.find("GPU 1 had 0 B left"), std::string::npos) << p.explanation;
        }
    }
}

// Tied lm_head (0 B of its own). 0=700,cpu=10000, sequential. embed holds one half of the tied group
// and lm_head the other, so embed is placed together with lm_head (cost 100 + 0). GPU 0's usable size
// is 700 - 300 = 400: embed (100) + block 0 (300) = 400 fit, block 1 does not; the rest goes to cpu.
// lm_head ends on GPU 0 although it comes last in the model.
TEST(AccelerateParity, TiedParametersStayTogether)
{
    const Plan plan = weightsOnly(plan_fixtures::tinyModel(4, true), "0=700,cpu=10000", Strategy::Sequential);
    EXPECT_EQ(mapOf(plan), (Map{{"embed", "0"}, {"lm_head", "0"}, {"layers.0", "0"}, {"layers.1", "cpu"},
                                {"layers.2", "cpu"}, {"layers.3", "cpu"}, {"norm", "cpu"}}));
    for (const LintFinding &f : plan.lint)
        EXPECT_NE(f.id, "tied_parameters_split");
}

// 0=500,cpu=500, sequential. GPU 0: usable 500 - 300 = 200: embed (100) fits; then `layers` is split
// and block 0 needs 100 + 300 > 200. cpu: usable 500 - 300 = 200 < 300, nothing fits (minimum
// 300 + 300 = 600). Everything else goes to disk, and clean_device_map collapses the four blocks
// into "layers".
TEST(AccelerateParity, SpillsToDisk)
{
    const Plan plan = weightsOnly(plan_fixtures::tinyModel(), "0=500,cpu=500", Strategy::Sequential);
    EXPECT_EQ(mapOf(plan), (Map{{"embed", "0"}, {"layers", "disk"}, {"norm", "disk"}, {"lm_head", "disk"}}));
    ASSERT_EQ(plan.minimums.size(), 1u);
    EXPECT_NE(plan.minimums[0].find("cpu would need at least 600 B"), std::string::npos) << plan.minimums[0];
    EXPECT_EQ(plan.usageOf("disk")->memory.weights, 1320);
}

// 0=2000,1=2000,cpu=5000.
// sequential: GPU 0 usable 2000 - 300 = 1700 >= 1420, everything fits, the map is {"": 0}.
// balanced: get_balanced_memory: per_gpu = 1420 // 2 = 710; buffer = int(1.25 * max(first Block = 300,
//   mean of the 11 final modules = int(1420 / 11) = 129)) = 375; GPU 0 gets min(1085, 2000) = 1085, the
//   last GPU keeps 2000. GPU 0 usable 1085 - 300 = 785: embed + blocks 0, 1 (700); block 2 (1000) goes to
//   GPU 1 with the rest.
// balanced_low_0: per_gpu = 1420 // 1 + 375; GPU 0 = min(max(0, 1420 - 2000), 2000) = 0, so GPU 1 takes
//   the whole model (1420 <= 2000, no reserve on GPU 1) and the map is {"": 1}.
TEST(AccelerateParity, BalancedSequentialLowZero)
{
    const PlanModel model = plan_fixtures::tinyModel();
    EXPECT_EQ(mapOf(weightsOnly(model, "0=2000,1=2000,cpu=5000", Strategy::Sequential)), (Map{{"", "0"}}));
    const Map balanced{{"embed", "0"}, {"layers.0", "0"}, {"layers.1", "0"}, {"layers.2", "1"},
                       {"layers.3", "1"}, {"norm", "1"}, {"lm_head", "1"}};
    EXPECT_EQ(mapOf(weightsOnly(model, "0=2000,1=2000,cpu=5000", Strategy::Balanced)), balanced);
    EXPECT_EQ(mapOf(weightsOnly(model, "0=2000,1=2000,cpu=5000", Strategy::Auto)), balanced);
    EXPECT_EQ(mapOf(weightsOnly(model, "0=2000,1=2000,cpu=5000", Strategy::BalancedLow0)), (Map{{"", "1"}}));

    const FlatTree flat = flatten(model.tree);
    AutoMapInput in{&flat, moduleSizes(flat, 0), noSplitFlags(flat, {"Block"}), true};
    const auto devices = parseMaxMemory("0=2000,1=2000,cpu=5000");
    EXPECT_EQ(balancedMemory(in, devices, false), (std::vector<int64_t>{1085, 2000, 5000}));
    EXPECT_EQ(balancedMemory(in, devices, true), (std::vector<int64_t>{0, 2000, 5000}));
}

// 0=250,1=250,cpu=250: a block (300 B) is larger than every device. GPU 0 (reserve 300) takes nothing,
// GPU 1 takes embed (100), no block fits anywhere: cpu (usable 250 - 300) takes nothing, and all blocks,
// norm and lm_head go to disk. With --no-split none the blocks may be split: GPU 1 then also takes
// block 0's attn (100 + 100 <= 250), and the block's mlp (200) goes on.
TEST(AccelerateParity, NoSplitLargerThanAnyDevice)
{
    const PlanModel model = plan_fixtures::tinyModel();
    const Plan plan = weightsOnly(model, "0=250,1=250,cpu=250", Strategy::Sequential);
    EXPECT_EQ(mapOf(plan), (Map{{"embed", "1"}, {"layers", "disk"}, {"norm", "disk"}, {"lm_head", "disk"}}));
    EXPECT_EQ(plan.minimums.size(), 2u); // GPU 0 and cpu

    // Without no-split classes the largest layer is mlp (200 B). GPU 0: usable 250 - 200 = 50, nothing fits
    // (embed 100). GPU 1: embed, then layers.0.attn (200 <= 250); layers.0.mlp does not fit (and cannot
    // split). cpu: usable 250 - 200 = 50: nothing. Disk takes the rest.
    PlanSettings settings;
    settings.strategy = Strategy::Sequential;
    settings.noSplit = std::vector<std::string>{};
    const Plan split = Planner(model).plan(parseMaxMemory("0=250,1=250,cpu=250"), settings);
    EXPECT_EQ(mapOf(split), (Map{{"embed", "1"}, {"layers.0.attn", "1"}, {"layers.0.mlp", "disk"}, {"layers.1", "disk"},
                                 {"layers.2", "disk"}, {"layers.3", "disk"}, {"norm", "disk"}, {"lm_head", "disk"}}));
}

// clean_device_map's rule: a parent is collapsed only when more than one key lies under it and all agree.
TEST(AccelerateParity, CleanCollapsesToCoarsestNames)
{
    const PlanModel model = plan_fixtures::tinyModel(2);
    const FlatTree flat = flatten(model.tree);
    const auto node = [&](const char *name) { return flat.find(name); };
    std::vector<PlacedItem> placed = {{node("embed"), 0, 0},        {node("layers.0"), 0, 0},
                                      {node("layers.1.attn"), 0, 0}, {node("layers.1.mlp"), 0, 0},
                                      {node("norm"), 1, 0},          {node("lm_head"), 1, 0}};
    EXPECT_EQ(cleanDeviceMap(flat, placed),
              (std::vector<MapEntry>{{"embed", 0}, {"layers", 0}, {"norm", 1}, {"lm_head", 1}}));
    for (PlacedItem &p : placed)
        p.device = 1;
    EXPECT_EQ(cleanDeviceMap(flat, placed), (std::vector<MapEntry>{{"", 1}}));
}

// A module of buffers only ("rot", a float32 buffer of 5 elements = 20 B, as transformers' model.rotary_emb)
// between norm and lm_head. compute_module_sizes counts buffers (never upcast: 10 B in fp16), so the total
// is 1440 B, and "rot" is a key of module_sizes, hence one of get_balanced_memory's final modules.
// Without no-split classes the balanced buffer is int(1.25 × the mean of the 12 final modules (embed 100,
// four attn 100, four mlp 200, norm 20, rot 20, lm_head 100 = 1440 / 12 = 120)) = 150, and GPU 0 gets
// 1440 // 2 + 150 = 870 (leaving the buffer out would give 710 + int(1.25 × 129) = 871).
// Sequential on 0=1000,1=1000,cpu=1000 with the blocks whole: GPU 0's usable size is 1000 - 300 = 700:
// embed and blocks 0, 1; block 2 moves on; GPU 1 (no reserve) takes blocks 2, 3, norm, rot and lm_head
// (740 B), and the cleaned map names "rot" as Accelerate's names "model.rotary_emb".
TEST(AccelerateParity, BuffersCountAndAModuleOfBuffersOnlyIsPlaced)
{
    PlanModel model = plan_fixtures::tinyModel();
    engine::model::ModuleNode rot{"rot", "Rotary", {}, {}, false, {{"inv_freq", {5}, "float32", false}}};
    model.tree.root.children.insert(model.tree.root.children.begin() + 3, rot);
    ASSERT_EQ(model.tree.root.children[2].name, "norm");

    const FlatTree flat = flatten(model.tree);
    EXPECT_EQ(moduleSizes(flat, 0)[0], 1440);
    EXPECT_EQ(moduleSizes(flat, 0)[flat.find("rot")], 20);
    EXPECT_EQ(moduleSizes(flat, 2)[flat.find("rot")], 10);
    EXPECT_EQ(flat.nodes[flat.find("rot")].items.size(), 0u) << "a buffer is never placed by itself";

    AutoMapInput in{&flat, moduleSizes(flat, 0), noSplitFlags(flat, {}), true};
    EXPECT_EQ(balancedMemory(in, parseMaxMemory("0=2000,1=2000,cpu=5000"), false),
              (std::vector<int64_t>{870, 2000, 5000}));

    const Plan plan = weightsOnly(model, "0=1000,1=1000,cpu=1000", Strategy::Sequential);
    EXPECT_EQ(mapOf(plan), (Map{{"embed", "0"}, {"layers.0", "0"}, {"layers.1", "0"}, {"layers.2", "1"},
                                {"layers.3", "1"}, {"norm", "1"}, {"rot", "1"}, {"lm_head", "1"}}));
    EXPECT_EQ(plan.usageOf("1")->memory.weights, 740);
    EXPECT_EQ(plan.usageOf("0")->memory.weights, 700);
}

// accelerate's dtype_byte_size(torch.bool) is 1/8: GPT-2's [1, 1, 1024, 1024] causal mask is 131072 B.
TEST(AccelerateParity, BoolBuffersCountAnEighthOfAByte)
{
    EXPECT_EQ((TensorBytes{1024 * 1024, 1, false, true}.bytes(2)), 131072);
    EXPECT_EQ((TensorBytes{6, 4, true, false}.bytes(2)), 12) << "floats are never upcast, and cast down";
    EXPECT_EQ((TensorBytes{6, 8, false, false}.bytes(2)), 48) << "integers keep their size";
}

// fallback_allocation on 0=350,1=1000,cpu=1000, sequential. GPU 0 (a main device) keeps 300 B for the
// largest layer (a block), so 50 B are usable and embed (100 B, no child modules) does not fit. Without
// the fallback GPU 0 stays empty: embed and blocks 0-2 fill GPU 1 (1000 B), block 3, norm and lm_head go
// to cpu (usable 1000 - 300). With it, GPU 0 being empty, fallback_allocate searches the rest (layers,
// norm, lm_head; depth first) for a module of at most 350 - max(300, 100) = 50 B: layers (1200) is split
// into its blocks, each no-split and too large, then norm (20 B) fits. norm goes to GPU 0 first; embed
// then still does not fit (20 + 100 > 50) and moves on, and the rest goes as before, less norm.
// With 0=250 the fallback's limit is 250 - 300 < 0: Accelerate finds nothing, and the map is unchanged.
TEST(AccelerateParity, FallbackAllocationFillsAnEmptyDevice)
{
    const PlanModel model = plan_fixtures::tinyModel();
    PlanSettings settings;
    settings.strategy = Strategy::Sequential;
    const Plan plain = Planner(model).plan(parseMaxMemory("0=350,1=1000,cpu=1000"), settings);
    EXPECT_EQ(mapOf(plain), (Map{{"embed", "1"}, {"layers.0", "1"}, {"layers.1", "1"}, {"layers.2", "1"},
                                 {"layers.3", "cpu"}, {"norm", "cpu"}, {"lm_head", "cpu"}}));
    settings.fallbackAllocation = true;
    const Plan fallback = Planner(model).plan(parseMaxMemory("0=350,1=1000,cpu=1000"), settings);
    EXPECT_EQ(mapOf(fallback), (Map{{"norm", "0"}, {"embed", "1"}, {"layers.0", "1"}, {"layers.1", "1"},
                                    {"layers.2", "1"}, {"layers.3", "cpu"}, {"lm_head", "cpu"}}));
    EXPECT_EQ(fallback.usageOf("0")->memory.weights, 20);
    EXPECT_EQ(fallback.usageOf("cpu")->memory.weights, 400);

    const Plan small = Planner(model).plan(parseMaxMemory("0=250,1=1000,cpu=1000"), settings);
    settings.fallbackAllocation = false;
    EXPECT_EQ(mapOf(small), mapOf(Planner(model).plan(parseMaxMemory("0=250,1=1000,cpu=1000"), settings)));
}

// The fallback looks into modules that may be split, and takes the module it finds out of its parents:
// no no-split classes, embed enlarged to 1000 B, 0=1100,1=2000,cpu=1000, sequential. Once embed is taken
// from the queue the largest remaining layer is an mlp (200 B), so GPU 0 has 1100 - 200 = 900 usable and
// embed does not fit (nor split). The fallback's limit is 1100 - max(200, 1000) = 100: layers (1200 B) is
// split, layers.0 (300 B) is split, layers.0.attn (100 B) fits. In the queue layers and layers.0 give way
// to their children: [layers.0.attn, embed, layers.0.mlp, layers.1, ..., norm, lm_head]. GPU 0 takes the
// attn (100 <= 900); embed then moves on. GPU 1 (no reserve): embed 1000, layers.0.mlp 1200, layers.1 1500,
// layers.2 1800; layers.3 (2100 >= 2000) is split: its attn fits (1900), its mlp does not. cpu keeps 100 B
// for lm_head: layers.3.mlp, norm and lm_head (320 B).
TEST(AccelerateParity, FallbackAllocationSplitsToFindAModule)
{
    PlanModel model = plan_fixtures::tinyModel();
    model.tree.root.children[0].parameters[0].shape = {250}; // embed: 1000 B
    PlanSettings settings;
    settings.strategy = Strategy::Sequential;
    settings.noSplit = std::vector<std::string>{};
    settings.fallbackAllocation = true;
    const Plan plan = Planner(model).plan(parseMaxMemory("0=1100,1=2000,cpu=1000"), settings);
    EXPECT_EQ(mapOf(plan), (Map{{"layers.0.attn", "0"}, {"embed", "1"}, {"layers.0.mlp", "1"}, {"layers.1", "1"},
                                {"layers.2", "1"}, {"layers.3.attn", "1"}, {"layers.3.mlp", "cpu"}, {"norm", "cpu"},
                                {"lm_head", "cpu"}}));
    EXPECT_EQ(plan.usageOf("0")->memory.weights, 100);
    EXPECT_EQ(plan.usageOf("cpu")->memory.weights, 320);
}
