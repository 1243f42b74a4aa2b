// The catalog of well-known configs (resources/plan-catalog): every entry plans, weights only and with
// LoRA, and its tree has the parameter count its publisher states; bad names and files fail by name.

#include "engine/plan/catalog.h"
#include "engine/plan/planner.h"

#include "support/expecterror.h"
#include "support/tempdir.h"

#include <gtest/gtest.h>

#include <cmath>
#include <fstream>

namespace {

namespace fs = std::filesystem;
using namespace engine::plan;
using testing_support::expectError;

// The source tree's catalog, so that the test reads what is committed, not an older installed copy.
const fs::path kCatalog = fs::path(TUNEBENCH_SOURCE_DIR) / "resources" / "plan-catalog";

TEST(PlanCatalog, ListsTheShippedModelsInNaturalOrder)
{
    std::vector<std::string> names;
    for (const CatalogEntry &e : listCatalog(kCatalog))
        names.push_back(e.name);
    const std::vector<std::string> expected = {
        "chatglm-6b",   "gemma-2-2b",   "gemma-2-9b",   "gemma-3-1b",    "gemma-3-4b",    "gpt2",
        "llama-3.1-8b", "llama-3.1-70b", "llama-3.2-1b",
        "llama-3.2-3b", "mistral-7b-v0.3", "mixtral-8x7b", "phi-3-mini-4k", "qwen2.5-0.5b", "qwen2.5-1.5b", "qwen2.5-3b",
        "qwen2.5-7b",   "qwen2.5-14b",  "qwen2.5-32b", "qwen3-0.6b",   "qwen3-1.7b",   "qwen3-4b",
        "qwen3-8b",     "qwen3-14b",    "qwen3-30b-a3b", "qwen3-32b",
    };
    EXPECT_EQ(names, expected);
}

TEST(PlanCatalog, EveryEntryHasItsPublishedParameterCountAndPlans)
{
    const std::vector<CatalogEntry> entries = listCatalog(kCatalog);
    ASSERT_FALSE(entries.empty());
    for (const CatalogEntry &e : entries) {
        SCOPED_TRACE(e.name);
        EXPECT_FALSE(e.displayName.empty());
        EXPECT_NE(e.repoId.find('/'), std::string::npos) << e.repoId;
        const PlanModel model = loadCatalogModel(e.name, kCatalog);
        EXPECT_EQ(model.tree.modelType, e.modelType);
        const double counted = static_cast<double>(model.tree.parameterCount());
        EXPECT_LT(std::abs(counted - static_cast<double>(e.parameters)) / static_cast<double>(e.parameters), 0.02)
            << "tree " << counted << " vs published " << e.parameters;
        EXPECT_GT(model.arch.layers, 0);
        EXPECT_GT(model.arch.hidden, 0);

        // Budgets no model of the catalog outgrows: everything fits, nothing lands on disk.
        const Planner planner(model);
        const auto devices = parseMaxMemory("0=80GiB,1=80GiB,cpu=1024GiB");
        PlanSettings weightsOnly;
        const Plan weights = planner.plan(devices, weightsOnly);
        EXPECT_TRUE(weights.fits);
        ASSERT_FALSE(weights.deviceMap.empty());
        for (const Placement &p : weights.deviceMap)
            EXPECT_NE(p.device, "disk") << p.module;

        PlanSettings lora;
        lora.train = TrainMode::Lora;
        lora.batchSize = 1;
        const Plan adapted = planner.plan(devices, lora);
        int64_t loraBytes = 0;
        for (const DeviceUsage &u : adapted.usage)
            loraBytes += u.memory.lora;
        EXPECT_GT(loraBytes, 0) << "LoRA found no default target";
    }
}

TEST(PlanCatalog, UnknownNameIsRefusedByNameWithTheNearest)
{
    expectError([] { loadCatalogModel("llama-3.1-7b", kCatalog); }, engine::ErrorKind::InvalidInput,
                "no catalog model named \"llama-3.1-7b\"");
    expectError([] { loadCatalogModel("llama-3.1-7b", kCatalog); }, engine::ErrorKind::InvalidInput, "llama-3.1-8b");
    EXPECT_FALSE(findCatalogEntry("../plan-catalog/gpt2", kCatalog));
    EXPECT_FALSE(findCatalogEntry("", kCatalog));
}

TEST(PlanCatalog, CorruptFileIsNamed)
{
    const testing_support::TempDir dir("catalog");
    std::ofstream(dir / "broken.json") << "{\"tunebench_catalog\": {\"display_name\": \"x\"";
    expectError([&] { listCatalog(dir.path()); }, engine::ErrorKind::InvalidInput, (dir / "broken.json").string());
    expectError([&] { loadCatalogModel("broken", dir.path()); }, engine::ErrorKind::InvalidInput,
                (dir / "broken.json").string());

    std::ofstream(dir / "broken.json", std::ios::trunc) << R"({"tunebench_catalog": {"display_name": "x"}, "config": {}})";
    expectError([&] { listCatalog(dir.path()); }, engine::ErrorKind::InvalidInput, "broken.json lacks a field");
}

TEST(PlanCatalog, MissingFolderIsAnEmptyCatalog)
{
    const testing_support::TempDir dir("catalog");
    EXPECT_TRUE(listCatalog(dir / "none").empty());
    expectError([&] { loadCatalogModel("gpt2", dir / "none"); }, engine::ErrorKind::InvalidInput, "empty or missing");
}

} // namespace

namespace {

TEST(PlanCatalog, ResolvesAnExistingPathFirstThenACatalogName)
{
    const ResolvedModel byName = resolvePlanModel("mistral-7b-v0.3", kCatalog);
    ASSERT_TRUE(byName.entry);
    EXPECT_EQ(byName.loaderName, "mistralai/Mistral-7B-v0.3");
    EXPECT_EQ(byName.model.tree.modelType, "mistral");

    const std::string config = std::string(TUNEBENCH_TEST_DATA) + "/model/configs/gpt2.json";
    const ResolvedModel byPath = resolvePlanModel(config, kCatalog);
    EXPECT_FALSE(byPath.entry);
    EXPECT_EQ(byPath.loaderName, config);

    expectError([] { resolvePlanModel("mistral-7b", kCatalog); }, engine::ErrorKind::InvalidInput,
                "mistral-7b: no such folder or config.json, and no catalog model named \"mistral-7b\"; nearest: "
                "mistral-7b-v0.3");
    // A path keeps planModelFromPath's own error (I/O: no such file).
    expectError([] { resolvePlanModel("no/such/config.json", kCatalog); }, engine::ErrorKind::Io, "no/such/config.json");
}

} // namespace
