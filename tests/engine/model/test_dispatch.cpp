// Device placements (parsing, lookup, validation) and dispatched loading over cpu and disk: the same
// logits and gradients as a model loaded in one place, disk weights memory-mapped, peak RSS bounded.

#include "engine/io/safetensorsfile.h"
#include "engine/io/shardindexio.h"
#include "engine/model/deviceplacement.h"
#include "engine/model/dispatch.h"
#include "engine/model/generation.h"
#include "engine/model/pretrained.h"
#include "support/cliprocess.h"
#include "support/expecterror.h"
#include "support/tempdir.h"
#include "support/tinymodels.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cstdint>
#include <fstream>
#include <map>
#include <sstream>

namespace {

using engine::ErrorKind;
using engine::model::DevicePlacement;
using engine::model::loadDispatched;
using engine::model::resolvePlacement;
using testing_support::expectError;
using testing_support::TempDir;

// --- parsing and lookup -----------------------------------------------------------------------

TEST(DevicePlacement, ParsesAccelerateDeviceMaps)
{
    const DevicePlacement p = DevicePlacement::fromJson(
        R"({"model.embed_tokens": 0, "model.layers.0": "cuda:1", "model.layers.1": "cpu", "model.norm": "disk",
            "lm_head": "cuda", "extra": "3"})",
        "map.json");
    const std::vector<std::pair<std::string, std::string>> expected = {
        {"model.embed_tokens", "cuda:0"}, {"model.layers.0", "cuda:1"}, {"model.layers.1", "cpu"},
        {"model.norm", "disk"},           {"lm_head", "cuda:0"},        {"extra", "cuda:3"}};
    EXPECT_EQ(p.entries, expected);
    // The planner's --json output holds the map under "device_map".
    const DevicePlacement wrapped = DevicePlacement::fromJson(R"({"device_map": {"": "cpu"}, "verdict": "fits"})", "plan");
    ASSERT_EQ(wrapped.entries.size(), 1u);
    EXPECT_EQ(wrapped.entries[0], std::make_pair(std::string(), std::string("cpu")));
    // Round trip through Accelerate's format, GPU indices as integers.
    EXPECT_EQ(DevicePlacement::fromJson(p.toJson(), "again").entries, expected);
    EXPECT_NE(p.toJson().find("\"model.embed_tokens\": 0"), std::string::npos) << p.toJson();
}

TEST(DevicePlacement, RefusesMalformedMaps)
{
    auto parse = [](const std::string &text) { return [text] { DevicePlacement::fromJson(text, "map.json"); }; };
    expectError(parse("{\"lm_head\": "), ErrorKind::InvalidInput, "map.json: not valid JSON");
    expectError(parse("[1, 2]"), ErrorKind::InvalidInput, "must be a JSON object");
    expectError(parse("{}"), ErrorKind::InvalidInput, "map.json: the device map is empty");
    expectError(parse(R"({"lm_head": "gpu"})"), ErrorKind::InvalidInput, "device \"gpu\" is not one of");
    expectError(parse(R"({"lm_head": "cuda:x"})"), ErrorKind::InvalidInput, "module 'lm_head': device \"cuda:x\"");
    expectError(parse(R"({"lm_head": -1})"), ErrorKind::InvalidInput, "module 'lm_head': device -1 is not one of");
    expectError(parse(R"({"lm_head": 1.5})"), ErrorKind::InvalidInput, "device 1.5");
    expectError(parse(R"({"lm_head": true})"), ErrorKind::InvalidInput, "device true");
    expectError(parse(R"({"lm_head": 0, "model": "cpu", "lm_head": "cpu"})"), ErrorKind::InvalidInput,
                "map.json: the device map names 'lm_head' more than once");
    expectError([] { DevicePlacement::everything("tpu"); }, ErrorKind::InvalidInput, "\"tpu\"");
}

TEST(DevicePlacement, LongestPrefixOnModuleBoundaries)
{
    const DevicePlacement p{{{"", "disk"}, {"model.layers.1", "cpu"}, {"model.layers.1.mlp", "cuda:0"}, {"model", "cpu"}}};
    EXPECT_EQ(*p.deviceOf("model.layers.1.self_attn.q_proj.weight"), "cpu");
    EXPECT_EQ(*p.deviceOf("model.layers.1.mlp.up_proj.weight"), "cuda:0");
    EXPECT_EQ(*p.deviceOf("model.layers.10.mlp.up_proj.weight"), "cpu");  // "model", not "model.layers.1"
    EXPECT_EQ(*p.deviceOf("lm_head.weight"), "disk");                      // only "" covers it
    const DevicePlacement narrow{{{"model.layers.1", "cpu"}}};
    EXPECT_EQ(narrow.deviceOf("model.layers.10.mlp.up_proj.weight"), nullptr);
    EXPECT_EQ(*narrow.deviceOf("model.layers.1"), "cpu");
    EXPECT_TRUE(engine::model::prefixCovers("", "x"));
    EXPECT_FALSE(engine::model::prefixCovers("model.layers.1", "model.layers.1x"));
}

// --- validation against parameter names ---------------------------------------------------------

const std::vector<std::string> kNames = {"model.embed_tokens.weight", "model.layers.0.mlp.up_proj.weight",
                                         "model.layers.1.mlp.up_proj.weight", "model.layers.10.mlp.up_proj.weight",
                                         "model.norm.weight", "lm_head.weight"};

TEST(DevicePlacement, ResolvesEveryParameter)
{
    const DevicePlacement p{{{"model.embed_tokens", "cpu"}, {"model.layers.1", "disk"}, {"", "cpu"}, {"lm_head", "cuda:1"}}};
    const std::vector<std::string> devices = resolvePlacement(p, kNames, 2, "map.json");
    EXPECT_EQ(devices, (std::vector<std::string>{"cpu", "cpu", "disk", "cpu", "cpu", "cuda:1"}));
}

TEST(DevicePlacement, NamesUnknownModulesAndUnplacedParameters)
{
    // Both unknown names in one message; "model.layers.1" alone does not cover layer 10.
    expectError([] { resolvePlacement({{{"model.layer.0", "cpu"}, {"head", "cpu"}, {"", "cpu"}}}, kNames, 0, "map.json"); },
                ErrorKind::InvalidInput, "map.json: the device map names 'model.layer.0', 'head', which the model has no");
    expectError(
        [] {
            resolvePlacement({{{"model.embed_tokens", "cpu"}, {"model.layers.0", "cpu"}, {"model.layers.1", "cpu"}, {"lm_head", "cpu"}}},
                             kNames, 0, "map.json");
        },
        ErrorKind::InvalidInput, "places no device for parameter(s) 'model.layers.10.mlp.up_proj.weight', 'model.norm.weight'");
    expectError([] { resolvePlacement({{{"", "cpu"}, {"", "disk"}}}, kNames, 0, "map.json"); }, ErrorKind::InvalidInput,
                "names '' more than once");
    expectError([] { resolvePlacement({}, kNames, 0, "map.json"); }, ErrorKind::InvalidInput, "empty");
}

// A module of buffers only ("model.rotary_emb") may be named when the caller says it exists.
TEST(DevicePlacement, AcceptsModulesOfBuffersOnly)
{
    const DevicePlacement p{{{"", "cpu"}, {"model.rotary_emb", "disk"}}};
    EXPECT_EQ(resolvePlacement(p, kNames, 0, "map.json", {}, {"model.rotary_emb"}), std::vector<std::string>(kNames.size(), "cpu"));
    expectError([&] { resolvePlacement(p, kNames, 0, "map.json"); }, ErrorKind::InvalidInput, "'model.rotary_emb'");
    expectError([&] { resolvePlacement({{{"", "cpu"}, {"model.rotary", "cpu"}}}, kNames, 0, "map.json", {}, {"model.rotary_emb"}); },
                ErrorKind::InvalidInput, "'model.rotary'");
}

TEST(DevicePlacement, RefusesCudaDevicesThatDoNotExist)
{
    expectError([] { resolvePlacement({{{"", "cpu"}, {"lm_head", "cuda:0"}}}, kNames, 0, "map.json"); },
                ErrorKind::InvalidInput, "module 'lm_head' is placed on cuda:0, but CUDA is not available");
    expectError([] { resolvePlacement({{{"", "cuda:2"}}}, kNames, 2, "map.json"); }, ErrorKind::InvalidInput,
                "only 2 CUDA device(s) exist (cuda:0 .. cuda:1)");
}

TEST(DevicePlacement, TiedAliasMustFollowItsTensor)
{
    const std::vector<std::string> tiedNames = {"model.embed_tokens.weight", "model.norm.weight"};
    const std::vector<std::pair<std::string, std::string>> tied = {{"lm_head.weight", "model.embed_tokens.weight"}};
    // Accelerate's maps name lm_head even when it is tied: accepted on the embedding's device.
    EXPECT_NO_THROW(resolvePlacement({{{"model", "disk"}, {"lm_head", "disk"}}}, tiedNames, 0, "m", tied));
    EXPECT_NO_THROW(resolvePlacement({{{"", "cpu"}, {"model.embed_tokens", "disk"}}}, tiedNames, 0, "m", tied));
    expectError([&] { resolvePlacement({{{"model", "disk"}, {"lm_head", "cpu"}}}, tiedNames, 0, "m", tied); },
                ErrorKind::InvalidInput, "'lm_head.weight' is tied to 'model.embed_tokens.weight' (one tensor)");
    // Without the alias, lm_head is an unknown module of a tied model.
    expectError([&] { resolvePlacement({{{"model", "disk"}, {"lm_head", "disk"}}}, tiedNames, 0, "m"); },
                ErrorKind::InvalidInput, "'lm_head'");
}

// --- dispatched loading ---------------------------------------------------------------------

/// [start, end) of every mapping of `file` in this process, from /proc/self/maps.
std::vector<std::pair<std::uintptr_t, std::uintptr_t>> mappingsOf(const std::filesystem::path &file)
{
    std::vector<std::pair<std::uintptr_t, std::uintptr_t>> ranges;
    std::ifstream maps("/proc/self/maps");
    const std::string target = std::filesystem::canonical(file).string();
    std::string line;
    while (std::getline(maps, line)) {
        if (!line.ends_with(target))
            continue;
        std::uintptr_t start = 0, end = 0;
        char dash = 0;
        std::istringstream in(line);
        in >> std::hex >> start >> dash >> end;
        ranges.emplace_back(start, end);
    }
    return ranges;
}

bool insideMapping(const torch::Tensor &tensor, const std::vector<std::pair<std::uintptr_t, std::uintptr_t>> &ranges)
{
    const auto address = reinterpret_cast<std::uintptr_t>(tensor.data_ptr());
    for (const auto &[start, end] : ranges) {
        if (address >= start && address < end)
            return true;
    }
    return false;
}

std::map<std::string, torch::Tensor> parametersOf(engine::model::LlamaForCausalLM &model)
{
    std::map<std::string, torch::Tensor> out;
    for (auto &item : model->named_parameters(true))
        out.emplace(item.key(), item.value());
    return out;
}

/// Logits for fixed ids, and every parameter's gradient of the next-token loss.
std::pair<torch::Tensor, std::map<std::string, torch::Tensor>> logitsAndGradients(engine::model::LlamaForCausalLM &model)
{
    const torch::Tensor ids = testing_support::someIds(2, 9);
    const torch::Tensor logits = model->forward(ids.narrow(1, 0, 8));
    const torch::Tensor labels = ids.narrow(1, 1, 8).to(logits.device());
    const torch::Tensor loss =
        torch::nn::functional::cross_entropy(logits.reshape({-1, logits.size(-1)}), labels.reshape({-1}));
    model->zero_grad();
    loss.backward();
    std::map<std::string, torch::Tensor> grads;
    for (auto &[name, p] : parametersOf(model))
        grads.emplace(name, p.grad().detach().to(torch::kCPU).clone());
    return {logits.detach().to(torch::kCPU), grads};
}

void expectSameAsSinglePlace(engine::model::LlamaForCausalLM &reference, engine::model::LlamaForCausalLM &dispatched)
{
    const auto [refLogits, refGrads] = logitsAndGradients(reference);
    const auto [logits, grads] = logitsAndGradients(dispatched);
    EXPECT_TRUE(torch::equal(refLogits, logits)) << testing_support::maxAbsDiff(refLogits, logits);
    ASSERT_EQ(refGrads.size(), grads.size());
    for (const auto &[name, grad] : refGrads)
        EXPECT_TRUE(torch::equal(grad, grads.at(name))) << name << ": " << testing_support::maxAbsDiff(grad, grads.at(name));
}

TEST(DispatchedLoading, CpuAndDiskGiveTheSameLogitsAndGradients)
{
    TempDir dir("dispatch-same");
    auto source = testing_support::randomLlama(testing_support::tinyLlama("qwen2"));
    engine::model::savePretrained(source, dir.path());
    auto reference = engine::model::loadPretrained(dir.path());

    const DevicePlacement p = DevicePlacement::fromJson(
        R"({"model.embed_tokens": "cpu", "model.layers.0": "disk", "model.layers.1.self_attn": "cpu",
            "model.layers.1.mlp": "disk", "model.layers.1.input_layernorm": "disk",
            "model.layers.1.post_attention_layernorm": "cpu", "model.norm": "disk", "model.rotary_emb": "disk",
            "lm_head": "disk"})",
        "map.json"); // model.rotary_emb as Accelerate's maps for transformers >= 4.45 name it: placing nothing
    auto loaded = loadDispatched(dir.path(), p);
    expectSameAsSinglePlace(reference, loaded.model);

    // The report: every byte once, disk tensors mapped (float32 file, float32 load).
    const auto *cpu = loaded.report.find("cpu");
    const auto *disk = loaded.report.find("disk");
    ASSERT_TRUE(cpu && disk);
    int64_t total = 0;
    for (auto &param : loaded.model->parameters())
        total += param.numel() * 4;
    EXPECT_EQ(cpu->bytes + disk->bytes, static_cast<uint64_t>(total));
    EXPECT_EQ(disk->mappedBytes, disk->bytes);
    EXPECT_EQ(cpu->mappedBytes, 0u);
    EXPECT_TRUE(loaded.report.copiedDiskTensors.empty());
    EXPECT_EQ(loaded.report.ramBytes(), cpu->bytes);
    EXPECT_EQ(loaded.report.largestTensorBytes, 64u * 32u * 4u); // embed_tokens / lm_head

    // Mapped for real: disk parameters point into the file's mapping, cpu ones do not.
    const auto ranges = mappingsOf(dir.path() / "model.safetensors");
    ASSERT_FALSE(ranges.empty());
    const auto params = parametersOf(loaded.model);
    for (const std::string &name : loaded.report.mappedTensors)
        EXPECT_TRUE(insideMapping(params.at(name), ranges)) << name;
    EXPECT_EQ(loaded.report.mappedTensors.size(), static_cast<size_t>(disk->tensors));
    EXPECT_FALSE(insideMapping(params.at("model.embed_tokens.weight"), ranges));
    EXPECT_FALSE(insideMapping(params.at("model.layers.1.self_attn.q_proj.bias"), ranges));
    EXPECT_TRUE(insideMapping(params.at("model.layers.1.mlp.down_proj.weight"), ranges));
}

TEST(DispatchedLoading, ShardedCheckpointAndTiedEmbeddings)
{
    TempDir dir("dispatch-tied");
    auto source = testing_support::randomLlama(testing_support::tinyLlama("llama", /*tied=*/true));
    engine::model::savePretrained(source, dir.path(), /*maxShardBytes=*/20'000);
    ASSERT_TRUE(std::filesystem::exists(dir / "model.safetensors.index.json"));
    auto reference = engine::model::loadPretrained(dir.path());

    auto loaded = loadDispatched(
        dir.path(), DevicePlacement::fromJson(R"({"model.embed_tokens": "disk", "model.layers": "cpu", "model.norm": "cpu",
                                                  "lm_head": "disk"})", "map.json"));
    EXPECT_FALSE(loaded.model->lm_head);
    // One tensor: the output weight is the embedding, mapped from its shard.
    EXPECT_EQ(loaded.model->outputWeight().data_ptr(), loaded.model->model->embed_tokens->weight.data_ptr());
    EXPECT_EQ(loaded.report.mappedTensors, std::vector<std::string>{"model.embed_tokens.weight"});
    expectSameAsSinglePlace(reference, loaded.model);

    expectError([&] {
        loadDispatched(dir.path(), DevicePlacement::fromJson(R"({"model": "disk", "lm_head": "cpu"})", "m.json"), {}, "m.json");
    }, ErrorKind::InvalidInput, "m.json: 'lm_head.weight' is tied to 'model.embed_tokens.weight'");
}

TEST(DispatchedLoading, GenerationAndScoringWorkOnADispatchedModel)
{
    TempDir dir("dispatch-generate");
    auto source = testing_support::randomLlama(testing_support::tinyLlama());
    engine::model::savePretrained(source, dir.path());
    auto reference = engine::model::loadPretrained(dir.path());
    auto loaded = loadDispatched(dir.path(), DevicePlacement::fromJson(
        R"({"model.embed_tokens": "disk", "model.layers.0": "cpu", "": "disk"})", "map.json"));
    const std::vector<int64_t> ids = {3, 17, 5, 60, 2, 9};
    EXPECT_EQ(engine::model::scoreLogprobs(reference, ids), engine::model::scoreLogprobs(loaded.model, ids));
    engine::model::GenerationOptions options;
    options.maxNewTokens = 12;
    const auto expected = engine::model::generate(reference, {3, 17, 5}, options);
    const auto got = engine::model::generate(loaded.model, {3, 17, 5}, options);
    EXPECT_EQ(expected.tokens, got.tokens);
}

TEST(DispatchedLoading, DiskWeightsInAnotherDtypeAreCopiedAndReported)
{
    TempDir dir("dispatch-dtype");
    auto source = testing_support::randomLlama(testing_support::tinyLlama());
    source->to(torch::kBFloat16);
    engine::model::savePretrained(source, dir.path());

    auto converted = loadDispatched(dir.path(), DevicePlacement::everything("disk"));
    EXPECT_TRUE(converted.report.mappedTensors.empty());
    EXPECT_EQ(converted.report.copiedDiskTensors.size(), converted.model->parameters().size());
    EXPECT_EQ(converted.model->outputWeight().scalar_type(), torch::kFloat32);

    auto mapped = loadDispatched(dir.path(), DevicePlacement::everything("disk"), {.dtype = torch::kBFloat16});
    EXPECT_EQ(mapped.report.mappedTensors.size(), mapped.model->parameters().size());
    EXPECT_EQ(mapped.report.find("disk")->mappedBytes, mapped.report.find("disk")->bytes);
    // Same values either way (bf16 -> f32 is exact).
    torch::NoGradGuard noGrad;
    EXPECT_TRUE(torch::equal(converted.model->outputWeight(), mapped.model->outputWeight().to(torch::kFloat32)));
}

TEST(DispatchedLoading, RefusesBadMapsAndCheckpoints)
{
    TempDir dir("dispatch-bad");
    auto source = testing_support::randomLlama(testing_support::tinyLlama());
    engine::model::savePretrained(source, dir.path());
    expectError([&] { loadDispatched(dir.path(), {{{"model", "cpu"}, {"lm_head", "cpu"}, {"model.layers.7", "cpu"}}}, {}, "m.json"); },
                ErrorKind::InvalidInput, "m.json: the device map names 'model.layers.7'");
    expectError([&] { loadDispatched(dir.path(), {{{"model", "cpu"}}}, {}, "m.json"); }, ErrorKind::InvalidInput,
                "parameter(s) 'lm_head.weight'");
    expectError([&] { loadDispatched(dir.path(), {{{"", "cuda:0"}}}, {}, "m.json"); }, ErrorKind::InvalidInput,
                torch::cuda::is_available() ? "model" : "CUDA is not available");
    expectError([&] { loadDispatched(dir / "missing", DevicePlacement::everything("cpu")); }, ErrorKind::Io, "not a model folder");

    // A checkpoint that lacks a parameter: named, as loadPretrained does.
    TempDir other("dispatch-missing");
    engine::model::savePretrained(source, other.path());
    engine::io::TensorLoadOptions owned;
    owned.copy = true;
    auto weights = engine::io::loadCheckpoint(other.path(), owned);
    weights.erase("model.norm.weight");
    engine::io::writeSafetensors(other / "model.safetensors", {weights.begin(), weights.end()}, {{"format", "pt"}});
    expectError([&] { loadDispatched(other.path(), DevicePlacement::everything("disk")); }, ErrorKind::InvalidInput,
                "parameter 'model.norm.weight' is missing");
}

// --- peak RSS while loading ------------------------------------------------------------------

/// "key=value" pairs the probe prints.
std::map<std::string, double> probeValues(const std::string &out)
{
    std::map<std::string, double> values;
    std::istringstream in(out);
    std::string item;
    while (in >> item) {
        const size_t eq = item.find('=');
        if (eq != std::string::npos)
            values[item.substr(0, eq)] = std::stod(item.substr(eq + 1));
    }
    return values;
}

TEST(DispatchedLoading, PeakRssStaysUnderCpuSharePlusLargestTensor)
{
    // About 78 MB of float32 weights: embed and lm_head 16 MiB each, four layers of 11.6 MB.
    engine::model::LlamaConfig config = testing_support::tinyLlama();
    config.vocabSize = 8192;
    config.hiddenSize = 512;
    config.intermediateSize = 1408;
    config.numHiddenLayers = 4;
    config.numAttentionHeads = 8;
    config.numKeyValueHeads = 4;
    TempDir dir("dispatch-rss");
    {
        engine::model::LlamaForCausalLM model(config);
        engine::model::savePretrained(model, dir.path());
    }
    {
        std::ofstream(dir / "map.json") << R"({"model.embed_tokens": "cpu", "model.layers": "disk", "model.norm": "cpu", "lm_head": "disk"})";
    }
    const double modelBytes = static_cast<double>(std::filesystem::file_size(dir / "model.safetensors"));
    // libtorch's own allocations while loading (allocator bookkeeping, the model's module objects).
    constexpr double kSlackBytes = 24.0 * 1024 * 1024;

    const auto dispatched = testing_support::runProcess(
        DISPATCH_PROBE, {"dispatched", dir.path().string(), (dir / "map.json").string()}, dir.path(), "dispatched");
    ASSERT_EQ(dispatched.exitCode, 0) << dispatched.err;
    auto v = probeValues(dispatched.out);
    const double grown = (v["peak_kb"] - v["baseline_kb"]) * 1024.0;
    const double bound = v["ram_bytes"] + v["largest_bytes"] + kSlackBytes;
    EXPECT_EQ(v["ram_bytes"], 8192.0 * 512 * 4 + 512 * 4); // embed_tokens + norm
    EXPECT_LT(grown, bound) << dispatched.out;
    EXPECT_GT(v["mapped_bytes"], 0.6 * modelBytes);
    // The measurement sees allocations: loading the whole model in RAM grows the peak by its size.
    const auto whole = testing_support::runProcess(DISPATCH_PROBE, {"pretrained", dir.path().string()}, dir.path(), "whole");
    ASSERT_EQ(whole.exitCode, 0) << whole.err;
    auto w = probeValues(whole.out);
    EXPECT_GT((w["peak_kb"] - w["baseline_kb"]) * 1024.0, 0.95 * modelBytes) << whole.out;
    std::cout << "dispatched load: peak grew " << grown / 1048576 << " MiB (bound " << bound / 1048576
              << " MiB); whole load: " << (w["peak_kb"] - w["baseline_kb"]) / 1024 << " MiB of a "
              << modelBytes / 1048576 << " MiB checkpoint\n";
}

// --- CUDA ----------------------------------------------------------------------------------------

TEST(DispatchedLoading, LayersOnCudaMatchCpu_CUDA)
{
    if (!torch::cuda::is_available())
        GTEST_SKIP() << "no CUDA device";
    TempDir dir("dispatch-cuda");
    auto source = testing_support::randomLlama(testing_support::tinyLlama("mistral"));
    engine::model::savePretrained(source, dir.path());
    auto reference = engine::model::loadPretrained(dir.path());
    auto loaded = loadDispatched(dir.path(), DevicePlacement::fromJson(
        R"({"model.embed_tokens": "cpu", "model.layers.0": 0, "model.layers.1": "disk", "model.norm": 0, "lm_head": "cuda:0"})",
        "map.json"));
    EXPECT_TRUE(loaded.model->model->decoderLayers()[0]->mlp->up_proj->weight.is_cuda());
    EXPECT_TRUE(loaded.model->lm_head->weight.is_cuda());
    EXPECT_FALSE(loaded.model->model->decoderLayers()[1]->mlp->up_proj->weight.is_cuda());
    ASSERT_TRUE(loaded.report.find("cuda:0"));
    EXPECT_GT(loaded.report.find("cuda:0")->bytes, 0u);

    const auto [refLogits, refGrads] = logitsAndGradients(reference);
    const auto [logits, grads] = logitsAndGradients(loaded.model);
    EXPECT_LT(testing_support::maxAbsDiff(refLogits, logits), 1e-4);
    for (const auto &[name, grad] : refGrads)
        EXPECT_LT(testing_support::maxAbsDiff(grad, grads.at(name)), 1e-4) << name;
    // Gradients live where their parameters do.
    for (auto &[name, p] : parametersOf(loaded.model))
        EXPECT_EQ(p.grad().device(), p.device()) << name;
}

TEST(DispatchedLoading, EverythingOnCuda_CUDA)
{
    if (!torch::cuda::is_available())
        GTEST_SKIP() << "no CUDA device";
    TempDir dir("dispatch-cuda-all");
    auto source = testing_support::randomLlama(testing_support::tinyLlama("llama", /*tied=*/true));
    source->to(torch::kBFloat16);
    engine::model::savePretrained(source, dir.path());
    auto loaded = loadDispatched(dir.path(), DevicePlacement::everything("cuda"), {.dtype = torch::kFloat32});
    for (auto &p : loaded.model->parameters())
        EXPECT_TRUE(p.is_cuda() && p.scalar_type() == torch::kFloat32);
    const torch::Tensor logits = loaded.model->forward(testing_support::someIds(1, 5));
    EXPECT_TRUE(logits.is_cuda());
}

} // namespace
