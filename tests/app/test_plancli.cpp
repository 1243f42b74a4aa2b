// `tunebench plan` as a user runs it (a child process per command): the --json schema, the readable
// table, export and import of Accelerate maps, the tensor-name fallback, and one clear error per bad input.

#include "support/cliprocess.h"
#include "support/tempdir.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdint>
#include <fstream>

namespace fs = std::filesystem;
using nlohmann::json;
using testing_support::ProcessResult;

namespace {

const fs::path kConfigs = fs::path(TUNEBENCH_TEST_DATA) / "model" / "configs";

class PlanCliTest : public ::testing::Test {
protected:
    void SetUp() override { m_dir = std::make_unique<testing_support::TempDir>("plancli"); }
    ProcessResult run(const std::vector<std::string> &args, const std::string &tag = "plan")
    {
        std::vector<std::string> full = {"plan"};
        full.insert(full.end(), args.begin(), args.end());
        return testing_support::runProcess(TUNEBENCH_CLI, full, m_dir->path(), tag);
    }
    json runJson(const std::vector<std::string> &args)
    {
        std::vector<std::string> withJson = args;
        withJson.push_back("--json");
        const ProcessResult r = run(withJson);
        EXPECT_EQ(r.exitCode, 0) << r.err;
        try {
            return json::parse(r.out);
        } catch (const std::exception &e) {
            ADD_FAILURE() << e.what() << "\n" << r.out;
            return {};
        }
    }
    void expectOneError(const std::vector<std::string> &args, const std::string &needle)
    {
        const ProcessResult r = run(args);
        EXPECT_NE(r.exitCode, 0) << needle;
        EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
        EXPECT_NE(r.err.find(needle), std::string::npos) << r.err;
        EXPECT_TRUE(r.out.empty()) << r.out;
    }
    fs::path path(const std::string &name) const { return m_dir->path() / name; }
    std::unique_ptr<testing_support::TempDir> m_dir;
};

void writeText(const fs::path &path, const std::string &text)
{
    std::ofstream(path, std::ios::binary) << text;
}

// A safetensors file of F16 tensors with the given shapes (zero data).
void writeSafetensors(const fs::path &path, const std::vector<std::pair<std::string, std::vector<int64_t>>> &tensors)
{
    json header = json::object();
    uint64_t offset = 0;
    for (const auto &[name, shape] : tensors) {
        uint64_t n = 2;
        for (const int64_t d : shape)
            n *= static_cast<uint64_t>(d);
        header[name] = {{"dtype", "F16"}, {"shape", shape}, {"data_offsets", {offset, offset + n}}};
        offset += n;
    }
    std::string text = header.dump();
    while (text.size() % 8)
        text += ' ';
    std::ofstream out(path, std::ios::binary);
    const uint64_t size = text.size();
    out.write(reinterpret_cast<const char *>(&size), 8);
    out << text << std::string(offset, '\0');
}

} // namespace

// The issue's case, end to end.
TEST_F(PlanCliTest, ChatGlmLoraJson)
{
    const json out = runJson({"--model", (kConfigs / "chatglm-6b.json").string(), "--max-memory",
                              "0=15GiB,1=15GiB,cpu=13GiB", "--dtype", "float16", "--train", "lora", "--lora-r", "32",
                              "--lora-targets", "query_key_value", "--batch-size", "3"});
    ASSERT_TRUE(out.is_object());
    EXPECT_EQ(out["verdict"], "fits");
    ASSERT_TRUE(out["device_map"].is_object());
    EXPECT_TRUE(out["device_map"]["transformer.word_embeddings"].is_number_integer());
    EXPECT_EQ(out["device_map"]["transformer.layers.27"], 1);
    ASSERT_EQ(out["devices"].size(), 4u);
    for (const char *key : {"budget", "weights", "gradients", "optimizer", "activations", "logits", "lora", "overhead"})
        EXPECT_TRUE(out["devices"][0].contains(key)) << key;
    EXPECT_EQ(out["devices"][0]["budget"], 15LL << 30);
    EXPECT_TRUE(out["peak"].contains("device") && out["peak"].contains("phase") && out["peak"].contains("bytes"));
    EXPECT_GT(out["lint"].size(), 0u);
    for (const json &f : out["lint"])
        EXPECT_TRUE(f.contains("id") && f.contains("message") && f.contains("fix"));
    EXPECT_EQ(out["explanations"].size(), out["device_map"].size());
}

// Regression: --model chatglm-6b/config.json exported a script that loaded the config file, without
// trust_remote_code.
TEST_F(PlanCliTest, ExportedScriptLoadsTheFolderWithTheLoraSettings)
{
    const fs::path folder = path("chatglm-6b");
    fs::create_directories(folder);
    fs::copy_file(kConfigs / "chatglm-6b.json", folder / "config.json");
    const ProcessResult r = run({"--model", (folder / "config.json").string(), "--max-memory", "0=15GiB,1=15GiB,cpu=13GiB",
                                 "--dtype", "float16", "--train", "lora", "--lora-r", "16", "--lora-alpha", "32",
                                 "--output", path("map.json").string()});
    ASSERT_EQ(r.exitCode, 0) << r.err;
    std::ifstream in(path("map.py"));
    const std::string py((std::istreambuf_iterator<char>(in)), {});
    for (const std::string &needle : {"MODEL_FOLDER = \"" + folder.string() + "\"\n", std::string("TRUST_REMOTE_CODE = True"),
                                      std::string("model = AutoModel.from_pretrained("),
                                      std::string("LoraConfig(r=16, lora_alpha=32, lora_dropout=0.05, "
                                                  "target_modules=[\"query_key_value\"]"),
                                      std::string("TORCH_DTYPE = torch.float16")})
        EXPECT_NE(py.find(needle), std::string::npos) << needle << "\n" << py;
    EXPECT_EQ(py.find("config.json"), std::string::npos) << py;
    expectOneError({"--model", (folder / "config.json").string(), "--max-memory", "0=15GiB", "--train", "lora",
                    "--lora-alpha", "0"},
                   "--lora-alpha is 0");
}

TEST_F(PlanCliTest, TableExportAndImport)
{
    const fs::path map = path("map.json");
    const ProcessResult r = run({"--model", (kConfigs / "llama-2-7b.json").string(), "--max-memory",
                                 "0=8GiB,1=8GiB,cpu=32GiB", "--dtype", "float16", "--output", map.string()});
    ASSERT_EQ(r.exitCode, 0) << r.err;
    EXPECT_NE(r.out.find("FITS"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("device map:"), std::string::npos);
    EXPECT_NE(r.out.find("model.layers.0 -> GPU 0"), std::string::npos) << r.out;
    ASSERT_TRUE(fs::exists(map));
    ASSERT_TRUE(fs::exists(path("map.py")));
    const json file = json::parse(std::ifstream(map));
    EXPECT_EQ(file["max_memory"]["0"], 8LL << 30);
    EXPECT_EQ(file["device_map"]["model.embed_tokens"], 0);

    // Import validates it against the model, with the budgets the file carries.
    const json imported = runJson({"--model", (kConfigs / "llama-2-7b.json").string(), "--import", map.string()});
    EXPECT_EQ(imported["device_map"], file["device_map"]);
    EXPECT_EQ(imported["verdict"], "fits");

    // A map with an unknown module, or one that leaves modules unplaced.
    json bad = file;
    bad["device_map"]["model.encoder"] = 0;
    writeText(path("bad.json"), bad.dump());
    expectOneError({"--model", (kConfigs / "llama-2-7b.json").string(), "--import", path("bad.json").string()},
                   "\"model.encoder\" names no module");
    json partial = file;
    partial["device_map"].erase("lm_head");
    writeText(path("partial.json"), partial.dump());
    expectOneError({"--model", (kConfigs / "llama-2-7b.json").string(), "--import", path("partial.json").string()},
                   "unplaced: lm_head.weight");
    writeText(path("broken.json"), "{\"device_map\": ");
    expectOneError({"--model", (kConfigs / "llama-2-7b.json").string(), "--import", path("broken.json").string()},
                   "not valid JSON");
}

TEST_F(PlanCliTest, OtherConfigsAndStrategies)
{
    // One strategy per config keeps the process count low; the strategies themselves are checked in test_plan.
    const std::vector<std::pair<const char *, const char *>> cases = {{"llama-3.1-8b.json", "sequential"},
                                                                      {"mistral-7b-v0.1.json", "balanced"},
                                                                      {"qwen2-0.5b.json", "balanced_low_0"},
                                                                      {"gpt2.json", "auto"}};
    for (const auto &[config, strategy] : cases) {
        const json out = runJson({"--model", (kConfigs / config).string(), "--max-memory", "0=2GiB,1=2GiB,cpu=64GiB",
                                  "--strategy", strategy, "--train", "full", "--checkpointing"});
        EXPECT_FALSE(out["device_map"].empty()) << config << " " << strategy;
        EXPECT_EQ(out["strategy"], strategy);
    }
    // --no-split none lets a decoder layer split.
    const json split = runJson({"--model", (kConfigs / "llama-2-7b.json").string(), "--max-memory",
                                "0=3000MB,1=30GB", "--strategy", "sequential", "--no-split", "none", "--dtype", "float16"});
    bool finer = false;
    for (const auto &[module, device] : split["device_map"].items())
        finer = finer || module.find(".mlp") != std::string::npos || module.find(".self_attn") != std::string::npos;
    EXPECT_TRUE(finer) << split["device_map"].dump();
}

// Unknown model_type: the tree comes from the checkpoint's tensor names, with a warning.
TEST_F(PlanCliTest, UnknownModelTypeFallsBackToTensorNames)
{
    const fs::path folder = path("mystery");
    fs::create_directories(folder);
    writeText(folder / "config.json", R"({"model_type": "mystery", "hidden_size": 64, "torch_dtype": "float16"})");
    writeSafetensors(folder / "model.safetensors", {{"backbone.embed.weight", {1000, 64}},
                                                    {"backbone.blocks.0.proj.weight", {64, 64}},
                                                    {"backbone.blocks.1.proj.weight", {64, 64}},
                                                    {"backbone.blocks.10.proj.weight", {64, 64}},
                                                    {"head.weight", {1000, 64}}});
    const json out = runJson({"--model", folder.string(), "--max-memory", "0=1GB,cpu=1GB"});
    ASSERT_TRUE(out.contains("warnings"));
    ASSERT_FALSE(out["warnings"].empty());
    EXPECT_NE(out["warnings"][0].get<std::string>().find("tensor names"), std::string::npos);
    EXPECT_EQ(out["device_map"][""], 0);
    EXPECT_EQ(out["devices"][0]["weights"], 2 * 1000 * 64 * 2 + 3 * 64 * 64 * 2); // F16 from the header
    EXPECT_EQ(out["no_split"], json::array({"Block"}));
    // A training plan says which part is estimated and which is not counted, naming the missing key.
    const json trained = runJson({"--model", folder.string(), "--max-memory", "0=1GB,cpu=1GB", "--train", "full"});
    std::string warnings;
    for (const json &w : trained["warnings"])
        warnings += w.get<std::string>() + "\n";
    EXPECT_NE(warnings.find("activations of the layers not counted"), std::string::npos) << warnings;
    EXPECT_NE(warnings.find("num_attention_heads"), std::string::npos) << warnings;
    const ProcessResult table = run({"--model", folder.string(), "--max-memory", "0=1GB,cpu=1GB", "--train", "full"});
    EXPECT_NE(table.out.find("warning: activations of the layers not counted"), std::string::npos) << table.out;
    // An imported map is revalidated with the same warnings.
    const ProcessResult exported = run({"--model", folder.string(), "--max-memory", "0=1GB,cpu=1GB", "--output", path("map.json").string()});
    ASSERT_EQ(exported.exitCode, 0) << exported.err;
    const json imported = runJson({"--model", folder.string(), "--max-memory", "0=1GB,cpu=1GB", "--train", "full",
                                   "--import", path("map.json").string()});
    EXPECT_EQ(imported["warnings"], trained["warnings"]);

    // A corrupt shard header: one error line naming the file.
    writeText(folder / "model.safetensors", std::string(8, '\x20') + "{not json");
    expectOneError({"--model", folder.string(), "--max-memory", "0=1GB"}, "model.safetensors");

    fs::remove(folder / "model.safetensors");
    expectOneError({"--model", folder.string(), "--max-memory", "0=1GB"}, "no safetensors weights");
}

// The per-GPU runtime overhead is the user's to set; it counts inside the GPU's budget in training plans,
// and the LoRA dropout changes what each adapted layer keeps. The GPUs (6 GiB each) cannot hold the
// 12.3 GB of fp16 weights even with no overhead, so the CPU always takes layers, and every GiB of
// overhead (more than two 403 MB GLM blocks) moves more of them there.
TEST_F(PlanCliTest, GpuOverheadAndLoraDropoutAreSettings)
{
    const std::vector<std::string> base = {"--model", (kConfigs / "chatglm-6b.json").string(), "--max-memory",
                                           "0=6GiB,1=6GiB,cpu=13GiB", "--dtype", "float16", "--train", "lora",
                                           "--lora-r", "32", "--lora-targets", "query_key_value", "--batch-size", "3"};
    auto with = [&](std::vector<std::string> extra) {
        std::vector<std::string> args = base;
        args.insert(args.end(), extra.begin(), extra.end());
        return runJson(args);
    };
    const json standard = with({});
    const json none = with({"--gpu-overhead", "0"});
    const json large = with({"--gpu-overhead", "2.5GiB"});
    ASSERT_TRUE(standard.is_object() && none.is_object() && large.is_object());
    EXPECT_EQ(standard["devices"][0]["overhead"], 1LL << 30);
    EXPECT_EQ(none["devices"][0]["overhead"], 0);
    EXPECT_EQ(large["devices"][0]["overhead"], 5LL << 29);
    // The CPU counts the process's own runtime memory, whatever the GPUs' overhead.
    EXPECT_EQ(none["devices"][2]["device"], "cpu");
    EXPECT_EQ(none["devices"][2]["overhead"], 256LL << 20 /* kDefaultCpuOverheadBytes */);
    EXPECT_EQ(large["devices"][2]["overhead"], 256LL << 20 /* kDefaultCpuOverheadBytes */);
    for (const json *plan : {&none, &standard, &large})
        EXPECT_EQ((*plan)["verdict"], "fits") << plan->dump();
    // Less room for layers on the GPUs: strictly more of them on the CPU, strictly fewer weights on the GPUs.
    auto onCpu = [](const json &plan) {
        int count = 0;
        for (const auto &[module, device] : plan["device_map"].items())
            count += device == "cpu" ? 1 : 0;
        return count;
    };
    auto gpuWeights = [](const json &plan) {
        int64_t sum = 0;
        for (const json &device : plan["devices"])
            sum += device["device"].is_number_integer() ? device["weights"].get<int64_t>() : 0;
        return sum;
    };
    EXPECT_GT(onCpu(none), 0) << "the GPUs hold everything: the comparison below would show nothing";
    EXPECT_LT(onCpu(none), onCpu(standard));
    EXPECT_LT(onCpu(standard), onCpu(large));
    EXPECT_GT(gpuWeights(none), gpuWeights(standard));
    EXPECT_GT(gpuWeights(standard), gpuWeights(large));

    const json noDropout = with({"--lora-dropout", "0"});
    ASSERT_TRUE(noDropout.is_object());
    auto activations = [](const json &plan) { // over all devices: the same whatever the split
        int64_t sum = 0;
        for (const json &device : plan["devices"])
            sum += device["activations"].get<int64_t>();
        return sum;
    };
    EXPECT_LT(activations(noDropout), activations(standard));

    expectOneError({"--model", base[1], "--max-memory", "0=15GiB", "--gpu-overhead", "-1GiB"}, "--gpu-overhead");
    expectOneError({"--model", base[1], "--max-memory", "0=15GiB", "--lora-dropout", "1.5"}, "--lora-dropout");
}

TEST_F(PlanCliTest, BadInputGivesOneError)
{
    const std::string model = (kConfigs / "chatglm-6b.json").string();
    expectOneError({"--model", model, "--max-memory", "0=15GiB,tpu=3GB"}, "unknown device \"tpu\"");
    expectOneError({"--model", model, "--max-memory", "0=lots"}, "not a size");
    expectOneError({"--model", model, "--max-memory", "0=-15GiB"}, "negative");
    expectOneError({"--model", model, "--max-memory", "0=0"}, "zero");
    expectOneError({"--model", model}, "--max-memory is required");
    expectOneError({"--model", model, "--max-memory", "0=15GiB", "--strategy", "fast"}, "--strategy");
    expectOneError({"--model", model, "--max-memory", "0=15GiB", "--train", "qlora"}, "--train");
    expectOneError({"--model", model, "--max-memory", "0=15GiB", "--dtype", "int4"}, "--dtype");
    expectOneError({"--model", model, "--max-memory", "0=15GiB", "--train", "lora", "--lora-targets", "q_proj"},
                   "\"q_proj\" names no Linear");
    expectOneError({"--model", model, "--max-memory", "0=15GiB", "--batch-size", "0"}, "--batch-size");
    expectOneError({"--model", path("missing").string(), "--max-memory", "0=15GiB"}, "missing");
    // Budgets too small for any layer: the minimum each device would need.
    expectOneError({"--model", model, "--max-memory", "0=100MB,cpu=100MB", "--dtype", "float16"},
                   "GPU 0 would need at least");
}

// --advise: each suggestion's flags, typed back into `tunebench plan`, give the plan it promised.
TEST_F(PlanCliTest, AdviceFlagsReplanToThePlanTheyPromise)
{
    const std::vector<std::string> base = {"--model", (kConfigs / "llama-3.1-8b.json").string(), "--max-memory",
                                           "0=15GiB,1=15GiB,cpu=13GiB", "--train", "full", "--dtype", "float32"};
    std::vector<std::string> asked = base;
    asked.push_back("--advise");
    const json plan = runJson(asked);
    ASSERT_TRUE(plan.is_object());
    EXPECT_EQ(plan["verdict"], "does_not_fit");
    ASSERT_TRUE(plan["advice"].is_array());
    ASSERT_FALSE(plan["advice"].empty());
    for (const json &advice : plan["advice"]) {
        EXPECT_EQ(advice["verdict"], "fits");
        EXPECT_FALSE(advice["why"].get<std::string>().empty());
        std::vector<std::string> args = base;
        for (const auto &[flag, value] : advice["changes"].items()) {
            // A later flag overrides the same one in `base` (CLI11 keeps the last value).
            args.push_back("--" + flag);
            if (!value.is_boolean())
                args.push_back(value.is_string() ? value.get<std::string>() : value.dump());
        }
        const json replanned = runJson(args);
        ASSERT_TRUE(replanned.is_object()) << advice.dump();
        EXPECT_EQ(replanned["verdict"], "fits") << advice.dump();
        EXPECT_EQ(replanned["peak"]["bytes"], advice["peak"]) << advice.dump();
        EXPECT_EQ(replanned["peak"]["device"], advice["peak_device"]) << advice.dump();
    }
    // Text: the flags as they are typed.
    const ProcessResult text = run(asked);
    EXPECT_EQ(text.exitCode, 0) << text.err;
    EXPECT_NE(text.out.find("advice:\n  --train lora"), std::string::npos) << text.out;
    // Weights-only: refused by name.
    const ProcessResult weights = run({"--model", (kConfigs / "llama-3.1-8b.json").string(), "--max-memory", "0=15GiB",
                                       "--advise"});
    EXPECT_NE(weights.exitCode, 0);
    EXPECT_NE(weights.err.find("--advise needs a training plan"), std::string::npos) << weights.err;
}

// The catalog (resources/plan-catalog): a well-known model planned by name, without a folder.
TEST_F(PlanCliTest, CatalogModelPlansByName)
{
    const json out = runJson({"--model", "qwen2.5-0.5b", "--max-memory", "0=8GiB,cpu=8GiB", "--train", "lora"});
    ASSERT_TRUE(out.is_object());
    EXPECT_EQ(out["verdict"], "fits");
    EXPECT_EQ(out["no_split"], json::array({"Qwen2DecoderLayer"}));
    EXPECT_EQ(out["device_map"], json({{"", 0}}));
    EXPECT_GT(out["devices"][0]["lora"].get<int64_t>(), 0);

    // The Python snippet loads the model from its Hugging Face repo, not from a folder called "gpt2".
    const fs::path map = path("map.json");
    const ProcessResult r = run({"--model", "gpt2", "--max-memory", "0=1GiB,cpu=8GiB", "--output", map.string()});
    ASSERT_EQ(r.exitCode, 0) << r.err;
    EXPECT_NE(r.out.find("gpt2 model, weights only"), std::string::npos) << r.out;
    std::ifstream snippet(path("map.py"));
    const std::string python((std::istreambuf_iterator<char>(snippet)), std::istreambuf_iterator<char>());
    EXPECT_NE(python.find("\"openai-community/gpt2\""), std::string::npos) << python;
}

TEST_F(PlanCliTest, ListModels)
{
    const ProcessResult table = run({"--list-models"});
    ASSERT_EQ(table.exitCode, 0) << table.err;
    for (const char *text : {"llama-3.1-8b", "meta-llama/Llama-3.1-8B", "qwen2.5-14b", "qwen3-8b", "Qwen/Qwen3-0.6B", "chatglm", "124M",
                             "mixtral-8x7b", "Qwen/Qwen3-30B-A3B           qwen3_moe  30.5B", "gemma-3-1b", "google/gemma-2-9b"})
        EXPECT_NE(table.out.find(text), std::string::npos) << text << "\n" << table.out;

    const json list = runJson({"--list-models"});
    ASSERT_TRUE(list.is_array());
    EXPECT_EQ(list.size(), 26u);
    bool mistral = false;
    for (const json &e : list) {
        for (const char *key : {"name", "display_name", "repo_id", "model_type", "parameters"})
            EXPECT_TRUE(e.contains(key)) << key << " in " << e.dump();
        if (e["name"] == "mistral-7b-v0.3") {
            mistral = true;
            EXPECT_EQ(e["repo_id"], "mistralai/Mistral-7B-v0.3");
            EXPECT_EQ(e["model_type"], "mistral");
            EXPECT_EQ(e["parameters"], 7'250'000'000LL);
        }
    }
    EXPECT_TRUE(mistral);
}

TEST_F(PlanCliTest, CatalogNamesAndModelChoiceRefusedByName)
{
    expectOneError({"--model", "llama-3.1-7b", "--max-memory", "0=15GiB"}, "no catalog model named \"llama-3.1-7b\"");
    expectOneError({"--model", "llama-3.1-7b", "--max-memory", "0=15GiB"}, "nearest: llama-3.1-8b");
    expectOneError({"--max-memory", "0=15GiB"}, "--model is required");
    expectOneError({"--list-models", "--model", "gpt2"}, "--list-models");
}

// A folder named like a catalog model is what --model meant before the catalog existed: it wins.
TEST_F(PlanCliTest, FolderOfACatalogNameWins)
{
    const fs::path folder = path("gpt2");
    fs::create_directories(folder);
    testing_support::writeTinyConfig(folder);
    const std::string command = "cd '" + m_dir->path().string() + "' && exec '" + TUNEBENCH_CLI
        + "' plan --model gpt2 --max-memory 0=1GiB,cpu=1GiB --json";
    const ProcessResult r = testing_support::runProcess("/bin/sh", {"-c", command}, m_dir->path(), "sh");
    ASSERT_EQ(r.exitCode, 0) << r.err;
    const json out = json::parse(r.out);
    EXPECT_EQ(out["no_split"], json::array({"LlamaDecoderLayer"})) << "planned the catalog's gpt2: " << r.out;
}

// Issue 28: the plan says which attention its estimate assumes and what each layer's window does. Mistral-7B-v0.1
// slides every layer over 4096 keys; at 1 x 8192 tokens in bfloat16 a layer's cache keeps 4096 tokens:
// 2 (k, v) x 4096 x 8 kv heads x 128 x 2 B = 16 MiB, while training's eager scores stay (4 + 2) x 32 heads x 8192^2
// = 12 GiB per layer. Mixtral from the catalog plans with whole MixtralDecoderLayers and full attention.
TEST_F(PlanCliTest, AttentionWindowsAndTheKvCacheAreShown)
{
    const std::vector<std::string> args = {"--model",      (kConfigs / "mistral-7b-v0.1.json").string(),
                                           "--max-memory", "0=80GiB,cpu=200GiB",
                                           "--train",      "lora",
                                           "--dtype",      "bfloat16",
                                           "--batch-size", "1",
                                           "--seq-len",    "8192"};
    const json out = runJson(args);
    ASSERT_TRUE(out.is_object());
    EXPECT_EQ(out["attention"]["implementation"], "eager");
    EXPECT_EQ(out["attention"]["layers"], json::parse(R"([{"layers": [0, 31], "window": 4096, "scores_per_layer": 12884901888,
                                                           "kv_cache_tokens": 4096, "kv_cache_per_layer": 16777216}])"));
    const ProcessResult table = run(args);
    ASSERT_EQ(table.exitCode, 0) << table.err;
    EXPECT_NE(table.out.find("attention at 1 x 8192 tokens (eager"), std::string::npos) << table.out;
    EXPECT_NE(table.out.find("layers 0-31, window 4096: scores 12.00 GiB per layer (training), KV cache 4096 tokens: "
                             "16.00 MiB per layer"),
              std::string::npos)
        << table.out;
    EXPECT_NE(table.out.find("tunebench generate keeps every token"), std::string::npos) << table.out;

    const json mixtral = runJson({"--model", "mixtral-8x7b", "--max-memory", "0=80GiB,1=80GiB,cpu=200GiB"});
    ASSERT_TRUE(mixtral.is_object());
    EXPECT_EQ(mixtral["no_split"], json::array({"MixtralDecoderLayer"}));
    EXPECT_EQ(mixtral["attention"]["layers"][0]["window"], nullptr);
    EXPECT_EQ(mixtral["attention"]["layers"][0]["layers"], json::array({0, 31}));
}
