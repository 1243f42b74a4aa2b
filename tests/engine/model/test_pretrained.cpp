// Model folders in save_pretrained's layout (loadPretrained / savePretrained) and PEFT LoRA adapters
// merged into the base weights (applyPeftLoraAdapter).
#include "engine/core/atomicfile.h"
#include "engine/core/error.h"
#include "engine/io/safetensorsfile.h"
#include "engine/io/shardindex.h"
#include "engine/model/pretrained.h"
#include "support/expecterror.h"
#include "support/tempdir.h"
#include "support/tinymodels.h"

#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <functional>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <torch/torch.h>

using engine::ErrorKind;
using engine::model::LlamaConfig;
using engine::model::LlamaForCausalLM;
using nlohmann::json;
using testing_support::expectError;
using testing_support::randomLlama;
using testing_support::TempDir;
using testing_support::tinyLlama;
namespace fs = std::filesystem;

namespace {

/// "m3" for ("m", 3). (Not `"m" + std::to_string(n)`: GCC 12 at -O3 warns on it, a false positive.)
std::string numbered(const char *prefix, int n)
{
    std::string text = prefix;
    text += std::to_string(n);
    return text;
}

std::vector<std::pair<std::string, torch::Tensor>> namedTensors(LlamaForCausalLM &model)
{
    std::vector<std::pair<std::string, torch::Tensor>> out;
    for (auto &item : model->named_parameters())
        out.emplace_back(item.key(), item.value().detach().clone());
    return out;
}

void expectSameParameters(LlamaForCausalLM &a, LlamaForCausalLM &b, const std::string &what)
{
    const auto pa = a->named_parameters();
    const auto pb = b->named_parameters();
    ASSERT_EQ(pa.size(), pb.size()) << what;
    for (size_t i = 0; i < pa.size(); ++i) {
        EXPECT_EQ(pa[i].key(), pb[i].key()) << what;
        EXPECT_EQ(pb[i].value().scalar_type(), torch::kFloat32) << pb[i].key();
        EXPECT_TRUE(torch::equal(pa[i].value(), pb[i].value())) << what << ": " << pa[i].key() << " differs";
    }
}

/// A model folder with config.json and one model.safetensors holding exactly `tensors`.
void writeFolder(const fs::path &folder, const LlamaConfig &config,
                 const std::vector<std::pair<std::string, torch::Tensor>> &tensors)
{
    fs::create_directories(folder);
    engine::writeFileAtomically(folder / "config.json", config.toJson().dump(2));
    engine::io::writeSafetensors(folder / "model.safetensors", tensors, {{"format", "pt"}});
}

std::vector<std::pair<std::string, torch::Tensor>> without(std::vector<std::pair<std::string, torch::Tensor>> tensors,
                                                           const std::string &name)
{
    std::erase_if(tensors, [&](const auto &item) { return item.first == name; });
    return tensors;
}

std::string messageOf(const std::function<void()> &call)
{
    try {
        call();
    } catch (const engine::Error &e) {
        return e.what();
    }
    return "(no error)";
}

} // namespace

// --- savePretrained / loadPretrained -------------------------------------------------------------

TEST(Pretrained, SaveLoadRoundTripIsBitForBit)
{
    LlamaConfig llama3 = tinyLlama("llama", true, 1);
    llama3.ropeScaling = {"llama3", 4.0, 0.25, 1.0, 8};
    LlamaConfig bias = tinyLlama("llama", false, 4);
    bias.attentionBias = true;
    LlamaConfig mistral = tinyLlama("mistral", false, 2);
    mistral.slidingWindow = 5;
    const std::vector<LlamaConfig> configs = {tinyLlama("llama"), tinyLlama("llama", true), tinyLlama("qwen2", true),
                                              tinyLlama("qwen2", false, 1), llama3, bias, mistral};
    TempDir dir("pretrained-roundtrip");
    int n = 0;
    for (const LlamaConfig &config : configs) {
        const std::string what = config.toJson().dump();
        LlamaForCausalLM model = randomLlama(config, 20 + n);
        const fs::path folder = dir / numbered("m", n++);
        engine::model::savePretrained(model, folder);
        EXPECT_TRUE(fs::exists(folder / "config.json"));
        EXPECT_TRUE(fs::exists(folder / "model.safetensors"));
        EXPECT_FALSE(fs::exists(folder / "model.safetensors.index.json"));

        const json saved = json::parse(engine::readFile(folder / "config.json"));
        // Regression: savePretrained wrote architectures ["LlamaForCausalLM"] for qwen2 and mistral too.
        EXPECT_EQ(saved.at("architectures"), json::array({config.className("ForCausalLM")})) << what;
        EXPECT_EQ(saved.at("torch_dtype"), "float32");
        EXPECT_EQ(saved.at("model_type"), config.modelType);

        // Tied weights are written once, as transformers does.
        const auto file = engine::io::SafetensorsFile::open(folder / "model.safetensors");
        EXPECT_EQ(file.contains("lm_head.weight"), !config.tieWordEmbeddings) << what;
        EXPECT_EQ(file.header().tensors.size(), model->named_parameters().size()) << what;

        LlamaForCausalLM loaded = engine::model::loadPretrained(folder);
        EXPECT_EQ(loaded->config().toJson(), config.toJson()) << what;
        expectSameParameters(model, loaded, what);
        torch::NoGradGuard noGrad;
        const torch::Tensor ids = torch::randint(64, {1, 9}, torch::kInt64);
        EXPECT_TRUE(torch::equal(model->forward(ids), loaded->forward(ids))) << what;
    }
}

TEST(Pretrained, Bf16WeightsLoadUpcastToFloat32WithTheirValues)
{
    TempDir dir("pretrained-bf16");
    LlamaForCausalLM model = randomLlama(tinyLlama("qwen2", true));
    LlamaForCausalLM bf16 = randomLlama(tinyLlama("qwen2", true));
    bf16->to(torch::kBFloat16);
    engine::model::savePretrained(bf16, dir.path());
    EXPECT_EQ(json::parse(engine::readFile(dir / "config.json")).at("torch_dtype"), "bfloat16");
    const auto file = engine::io::SafetensorsFile::open(dir / "model.safetensors");
    for (const auto &info : file.header().tensors)
        EXPECT_EQ(file.tensor(info.name).scalar_type(), torch::kBFloat16) << info.name;

    LlamaForCausalLM loaded = engine::model::loadPretrained(dir.path());
    const auto expected = bf16->named_parameters();
    for (const auto &item : loaded->named_parameters()) {
        EXPECT_EQ(item.value().scalar_type(), torch::kFloat32) << item.key();
        EXPECT_TRUE(torch::equal(item.value(), expected[item.key()].to(torch::kFloat32))) << item.key();
    }
    // bf16 values really are coarser than the float32 ones they came from.
    EXPECT_FALSE(torch::equal(loaded->named_parameters()["model.embed_tokens.weight"],
                              model->named_parameters()["model.embed_tokens.weight"]));
}

TEST(Pretrained, ShardedSaveWritesShardsAndIndexAndLoadsBack)
{
    TempDir dir("pretrained-shards");
    LlamaForCausalLM model = randomLlama(tinyLlama("qwen2", false, 1), 3);
    const uint64_t limit = 12'000; // bytes: embed/lm_head (8 KiB each) and the layers spread over many files
    engine::model::savePretrained(model, dir.path(), limit);
    EXPECT_FALSE(fs::exists(dir / "model.safetensors"));
    ASSERT_TRUE(fs::exists(dir / "model.safetensors.index.json"));
    const json index = json::parse(engine::readFile(dir / "model.safetensors.index.json"));
    const json &map = index.at("weight_map");
    EXPECT_EQ(map.size(), model->named_parameters().size());
    std::set<std::string> shards;
    for (const auto &[name, shard] : map.items()) {
        shards.insert(shard.get<std::string>());
        EXPECT_TRUE(engine::io::SafetensorsFile::open(dir / shard.get<std::string>()).contains(name)) << name;
    }
    EXPECT_GE(shards.size(), 3u);
    uint64_t total = 0;
    for (const std::string &shard : shards) {
        EXPECT_TRUE(shard.starts_with("model-0000") && shard.ends_with(".safetensors")) << shard;
        EXPECT_LE(fs::file_size(dir / shard), limit + 4096) << shard; // plus header
        const auto file = engine::io::SafetensorsFile::open(dir / shard); // outlives the loop over its header
        for (const auto &info : file.header().tensors)
            total += info.byteSize();
    }
    EXPECT_EQ(index.at("metadata").at("total_size").get<uint64_t>(), total);

    LlamaForCausalLM loaded = engine::model::loadPretrained(dir.path());
    expectSameParameters(model, loaded, "sharded");

    // Saving again in one file replaces the shards.
    engine::model::savePretrained(model, dir.path());
    EXPECT_TRUE(fs::exists(dir / "model.safetensors"));
    EXPECT_FALSE(fs::exists(dir / "model.safetensors.index.json"));
    for (const std::string &shard : shards)
        EXPECT_FALSE(fs::exists(dir / shard)) << shard;
    LlamaForCausalLM again = engine::model::loadPretrained(dir.path());
    expectSameParameters(model, again, "resaved");
}

TEST(Pretrained, TiedCheckpointCarryingLmHeadIsAccepted)
{
    TempDir dir("pretrained-tiedhead");
    const LlamaConfig config = tinyLlama("llama", true);
    LlamaForCausalLM model = randomLlama(config);
    auto tensors = namedTensors(model);
    // Some writers keep the duplicate head, and older transformers saved rotary inv_freq buffers.
    tensors.emplace_back("lm_head.weight", model->model->embed_tokens->weight.detach().clone());
    tensors.emplace_back("model.layers.0.self_attn.rotary_emb.inv_freq", torch::ones({4}));
    writeFolder(dir.path(), config, tensors);
    LlamaForCausalLM loaded = engine::model::loadPretrained(dir.path());
    expectSameParameters(model, loaded, "tied with lm_head");
    EXPECT_TRUE(loaded->outputWeight().is_same(loaded->model->embed_tokens->weight));
}

TEST(Pretrained, ErrorsNameTheFileAndTheTensor)
{
    TempDir dir("pretrained-errors");
    const LlamaConfig config = tinyLlama("llama");
    LlamaForCausalLM model = randomLlama(config);
    const auto tensors = namedTensors(model);
    auto load = [](const fs::path &folder) { return [folder] { engine::model::loadPretrained(folder); }; };

    // A missing parameter.
    writeFolder(dir / "missing", config, without(tensors, "model.layers.1.mlp.up_proj.weight"));
    expectError(load(dir / "missing"), ErrorKind::InvalidInput, "model.layers.1.mlp.up_proj.weight");
    EXPECT_NE(messageOf(load(dir / "missing")).find("model.safetensors"), std::string::npos);
    EXPECT_NE(messageOf(load(dir / "missing")).find("missing"), std::string::npos);
    // An untied model without its head.
    writeFolder(dir / "nohead", config, without(tensors, "lm_head.weight"));
    expectError(load(dir / "nohead"), ErrorKind::InvalidInput, "'lm_head.weight' is missing");

    // A shape mismatch.
    auto wrong = tensors;
    for (auto &[name, t] : wrong) {
        if (name == "model.layers.0.self_attn.k_proj.weight")
            t = torch::zeros({32, 32});
    }
    writeFolder(dir / "shape", config, wrong);
    const std::string shape = messageOf(load(dir / "shape"));
    EXPECT_NE(shape.find("model.safetensors"), std::string::npos) << shape;
    EXPECT_NE(shape.find("model.layers.0.self_attn.k_proj.weight"), std::string::npos) << shape;
    EXPECT_NE(shape.find("[32, 32]"), std::string::npos) << shape;
    EXPECT_NE(shape.find("[16, 32]"), std::string::npos) << shape;

    // An unexpected extra tensor.
    auto extra = tensors;
    extra.emplace_back("model.layers.0.self_attn.q_norm.weight", torch::ones({32}));
    writeFolder(dir / "extra", config, extra);
    expectError(load(dir / "extra"), ErrorKind::InvalidInput, "model.layers.0.self_attn.q_norm.weight");
    EXPECT_NE(messageOf(load(dir / "extra")).find("model.safetensors"), std::string::npos);
    // A head in the checkpoint of a tied config is fine, but in an untied one a second embedding is not.
    auto extraLayer = tensors;
    extraLayer.emplace_back("model.layers.2.input_layernorm.weight", torch::ones({32}));
    writeFolder(dir / "extralayer", config, extraLayer);
    expectError(load(dir / "extralayer"), ErrorKind::InvalidInput, "model.layers.2.input_layernorm.weight");

    // A folder without weights.
    fs::create_directories(dir / "noweights");
    engine::writeFileAtomically(dir / "noweights" / "config.json", config.toJson().dump());
    expectError(load(dir / "noweights"), ErrorKind::Io, "no weights found");
    EXPECT_NE(messageOf(load(dir / "noweights")).find((dir / "noweights").string()), std::string::npos);

    // A corrupt config.json.
    writeFolder(dir / "badconfig", config, tensors);
    engine::writeFileAtomically(dir / "badconfig" / "config.json", "{\"model_type\": \"llama\", ");
    const std::string badConfig = messageOf(load(dir / "badconfig"));
    EXPECT_NE(badConfig.find("config.json"), std::string::npos) << badConfig;
    // A config whose sizes disagree with the weights: every tensor's shape is wrong, the first is named.
    LlamaConfig bigger = config;
    bigger.hiddenSize = 64;
    writeFolder(dir / "disagree", bigger, tensors);
    expectError(load(dir / "disagree"), ErrorKind::InvalidInput, "config.json gives");

    // Not a folder at all; a truncated weights file.
    expectError(load(dir / "nothing-here"), ErrorKind::Io, "not a model folder");
    writeFolder(dir / "truncated", config, tensors);
    const std::string bytes = engine::readFile(dir / "truncated" / "model.safetensors");
    engine::writeFileAtomically(dir / "truncated" / "model.safetensors", bytes.substr(0, bytes.size() / 2));
    const std::string truncated = messageOf(load(dir / "truncated"));
    EXPECT_NE(truncated.find("model.safetensors"), std::string::npos) << truncated;
}

TEST(Pretrained, ShardedCheckpointMissingATensorNamesIt)
{
    TempDir dir("pretrained-shard-missing");
    const LlamaConfig config = tinyLlama("llama", true);
    LlamaForCausalLM model = randomLlama(config);
    engine::model::savePretrained(model, dir.path(), 12'000);
    json index = json::parse(engine::readFile(dir / "model.safetensors.index.json"));
    index["weight_map"].erase("model.norm.weight");
    engine::writeFileAtomically(dir / "model.safetensors.index.json", index.dump());
    const std::string message = messageOf([&] { engine::model::loadPretrained(dir.path()); });
    EXPECT_NE(message.find("model.norm.weight"), std::string::npos) << message;
    EXPECT_NE(message.find("model.safetensors.index.json"), std::string::npos) << message;
}

// --- applyPeftLoraAdapter ----------------------------------------------------------------------

namespace {

struct LoraModule {
    std::string module; ///< e.g. model.layers.0.self_attn.q_proj
    torch::Tensor a;    ///< [r, in]
    torch::Tensor b;    ///< [out, r]
};

json adapterConfig(int64_t r, double alpha)
{
    return {{"peft_type", "LORA"},
            {"base_model_name_or_path", "tiny"},
            {"task_type", "CAUSAL_LM"},
            {"r", r},
            {"lora_alpha", alpha},
            {"lora_dropout", 0.0},
            {"target_modules", {"q_proj", "v_proj"}},
            {"bias", "none"},
            {"fan_in_fan_out", false},
            {"use_rslora", false},
            {"use_dora", false},
            {"modules_to_save", nullptr}};
}

void writeAdapter(const fs::path &folder, const json &config, const std::vector<LoraModule> &modules,
                  const std::string &adapterName = "")
{
    fs::create_directories(folder);
    engine::writeFileAtomically(folder / "adapter_config.json", config.dump(2));
    std::vector<std::pair<std::string, torch::Tensor>> tensors;
    const std::string infix = adapterName.empty() ? "" : "." + adapterName;
    for (const LoraModule &m : modules) {
        if (m.a.defined())
            tensors.emplace_back("base_model.model." + m.module + ".lora_A" + infix + ".weight", m.a);
        if (m.b.defined())
            tensors.emplace_back("base_model.model." + m.module + ".lora_B" + infix + ".weight", m.b);
    }
    engine::io::writeSafetensors(folder / "adapter_model.safetensors", tensors, {{"format", "pt"}});
}

/// q_proj of layer 0 and v_proj of layer 1 (GQA: v is [16, 32]) with random A and B of rank r.
std::vector<LoraModule> randomLora(int64_t r, uint64_t seed = 5)
{
    torch::manual_seed(seed);
    return {{"model.layers.0.self_attn.q_proj", torch::randn({r, 32}), torch::randn({32, r})},
            {"model.layers.1.self_attn.v_proj", torch::randn({r, 32}), torch::randn({16, r})}};
}

} // namespace

TEST(PeftLora, MergesAlphaOverRTimesBA)
{
    TempDir dir("peft-merge");
    const LlamaConfig config = tinyLlama("llama", false, 2);
    for (const bool rslora : {false, true}) {
        for (const std::string &name : {std::string(), std::string("default")}) {
            LlamaForCausalLM base = randomLlama(config, 9);
            LlamaForCausalLM model = randomLlama(config, 9);
            const int64_t r = 4;
            const double alpha = 6.0;
            json cfg = adapterConfig(r, alpha);
            cfg["use_rslora"] = rslora;
            const auto lora = randomLora(r);
            const fs::path folder = dir / (numbered("a", rslora) + name);
            writeAdapter(folder, cfg, lora, name);
            EXPECT_EQ(engine::model::applyPeftLoraAdapter(model, folder), 2);

            const double scale = rslora ? alpha / std::sqrt(double(r)) : alpha / double(r);
            auto merged = model->named_parameters();
            auto original = base->named_parameters();
            for (const LoraModule &m : lora) {
                const std::string key = m.module + ".weight";
                const torch::Tensor expected = original[key].to(torch::kFloat64)
                    + scale * torch::matmul(m.b.to(torch::kFloat64), m.a.to(torch::kFloat64));
                EXPECT_LT(testing_support::maxAbsDiff(merged[key], expected), 2e-5) << key << " rslora " << rslora;
                EXPECT_GT(testing_support::maxAbsDiff(merged[key], original[key]), 1.0) << "the delta is visible";
            }
            for (const auto &item : original) {
                if (item.key() != lora[0].module + ".weight" && item.key() != lora[1].module + ".weight") {
                    EXPECT_TRUE(torch::equal(item.value(), merged[item.key()])) << item.key() << " must not change";
                }
            }
        }
    }
}

TEST(PeftLora, ZeroBChangesNothingAndBf16AdapterWeightsWork)
{
    TempDir dir("peft-zero");
    const LlamaConfig config = tinyLlama("qwen2", true, 2);
    LlamaForCausalLM base = randomLlama(config, 4);
    LlamaForCausalLM model = randomLlama(config, 4);
    auto lora = randomLora(2);
    for (auto &m : lora)
        m.b = torch::zeros_like(m.b); // a freshly initialised adapter
    writeAdapter(dir / "zero", adapterConfig(2, 16), lora);
    engine::model::applyPeftLoraAdapter(model, dir / "zero");
    for (const auto &item : base->named_parameters())
        EXPECT_TRUE(torch::equal(item.value(), model->named_parameters()[item.key()])) << item.key();

    auto half = randomLora(2, 8);
    for (auto &m : half) {
        m.a = m.a.to(torch::kBFloat16);
        m.b = m.b.to(torch::kBFloat16);
    }
    writeAdapter(dir / "bf16", adapterConfig(2, 2), half);
    engine::model::applyPeftLoraAdapter(model, dir / "bf16");
    const std::string key = half[0].module + ".weight";
    const torch::Tensor expected = base->named_parameters()[key].to(torch::kFloat64)
        + torch::matmul(half[0].b.to(torch::kFloat64), half[0].a.to(torch::kFloat64));
    EXPECT_LT(testing_support::maxAbsDiff(model->named_parameters()[key], expected), 2e-5);
}

TEST(PeftLora, ModulesToSaveReplaceTheirModuleAndMlpBiasModelsTakeAdapters)
{
    TempDir dir("peft-save");
    LlamaConfig config = tinyLlama("llama", false, 2);
    config.mlpBias = true;
    LlamaForCausalLM model = randomLlama(config, 3);
    const torch::Tensor head = torch::randn_like(model->lm_head->weight);
    json cfg = adapterConfig(4, 8);
    cfg["modules_to_save"] = {"lm_head"};
    const fs::path folder = dir / "save";
    writeAdapter(folder, cfg, randomLora(4));
    auto tensors = engine::io::SafetensorsFile::open(folder / "adapter_model.safetensors");
    std::vector<std::pair<std::string, torch::Tensor>> all;
    engine::io::TensorLoadOptions copy;
    copy.copy = true;
    for (const auto &info : tensors.header().tensors)
        all.emplace_back(info.name, tensors.tensor(info.name, copy));
    all.emplace_back("base_model.model.lm_head.weight", head);
    engine::io::writeSafetensors(folder / "adapter_model.safetensors", all);
    EXPECT_TRUE(model->named_parameters().contains("model.layers.0.mlp.gate_proj.bias"));
    EXPECT_EQ(engine::model::applyPeftLoraAdapter(model, folder), 2);
    EXPECT_TRUE(torch::equal(model->lm_head->weight, head));
}

TEST(PeftLora, RefusesWhatItCannotApplyExactly)
{
    TempDir dir("peft-refuse");
    const LlamaConfig config = tinyLlama("llama", false, 2);
    LlamaForCausalLM model = randomLlama(config);
    const auto lora = randomLora(4);
    int n = 0;
    auto refused = [&](const json &cfg, const std::vector<LoraModule> &modules, ErrorKind kind,
                       const std::string &needle) {
        const fs::path folder = dir / numbered("r", n++);
        writeAdapter(folder, cfg, modules);
        expectError([&] { engine::model::applyPeftLoraAdapter(model, folder); }, kind, needle);
    };
    const json cfg = adapterConfig(4, 8);
    auto patched = [](json base, const json &patch) {
        base.merge_patch(patch);
        return base;
    };
    refused(patched(cfg, {{"use_dora", true}}), lora, ErrorKind::InvalidInput, "use_dora");
    refused(patched(cfg, {{"fan_in_fan_out", true}}), lora, ErrorKind::InvalidInput, "fan_in_fan_out");
    refused(patched(cfg, {{"bias", "all"}}), lora, ErrorKind::InvalidInput, "bias");
    refused(patched(cfg, {{"bias", "lora_only"}}), lora, ErrorKind::InvalidInput, "bias");
    refused(patched(cfg, {{"modules_to_save", {"classifier"}}}), lora, ErrorKind::InvalidInput,
            "modules_to_save [classifier] names no module");
    // PEFT's target semantics: targets that match nothing are refused with the modules that exist ...
    refused(patched(cfg, {{"target_modules", {"query_key_value"}}}), lora, ErrorKind::InvalidInput,
            "match no module of the model; its Linear modules are q_proj, k_proj, v_proj, o_proj, gate_proj");
    refused(patched(cfg, {{"target_modules", "model\\.layers\\.9\\..*"}}), lora, ErrorKind::InvalidInput,
            "match no module");
    // ... and tensors of modules target_modules does not name are never applied: refused, naming them.
    refused(patched(cfg, {{"target_modules", {"q_proj"}}}), lora, ErrorKind::InvalidInput,
            "does not name (PEFT never applies them): model.layers.1.self_attn.v_proj");
    refused(patched(cfg, {{"target_modules", {"embed_tokens"}}}), lora, ErrorKind::InvalidInput,
            "not Linear layers: model.embed_tokens");
    refused(patched(cfg, {{"peft_type", "PREFIX_TUNING"}}), lora, ErrorKind::InvalidInput, "peft_type");
    refused(patched(cfg, {{"r", 0}}), lora, ErrorKind::InvalidInput, "'r'");
    refused(patched(cfg, {{"lora_alpha", "eight"}}), lora, ErrorKind::InvalidInput, "lora_alpha");
    // Per-module ranks or alphas would change the scale of some modules.
    refused(patched(cfg, {{"rank_pattern", {{"q_proj", 2}}}}), lora, ErrorKind::InvalidInput, "rank_pattern");
    refused(patched(cfg, {{"alpha_pattern", {{"q_proj", 2}}}}), lora, ErrorKind::InvalidInput,
            "alpha_pattern");
    // A rank that disagrees with r.
    refused(adapterConfig(8, 8), lora, ErrorKind::InvalidInput, "r = 8");
    // Only one of A and B.
    refused(cfg, {{lora[0].module, lora[0].a, {}}}, ErrorKind::InvalidInput, "only one of lora_A and lora_B");
    // A module the model does not have.
    refused(cfg, {{"model.layers.7.self_attn.q_proj", lora[0].a, lora[0].b}}, ErrorKind::InvalidInput,
            "model.layers.7.self_attn.q_proj");
    // Shapes that do not fit (q_proj's B on v_proj, which is [16, 32]).
    refused(cfg, {{"model.layers.1.self_attn.v_proj", lora[0].a, lora[0].b}}, ErrorKind::InvalidInput, "do not fit");
    // A tensor that is no LoRA weight (an embedding adapter, a saved module).
    {
        const fs::path folder = dir / "embedding";
        writeAdapter(folder, cfg, lora);
        engine::io::writeSafetensors(folder / "adapter_model.safetensors",
                                     {{"base_model.model.model.embed_tokens.lora_embedding_A", torch::ones({4, 64})}});
        expectError([&] { engine::model::applyPeftLoraAdapter(model, folder); }, ErrorKind::InvalidInput,
                    "lora_embedding_A");
    }
    // No adapter_config.json; corrupt JSON.
    fs::create_directories(dir / "empty");
    const std::string noConfig = messageOf([&] { engine::model::applyPeftLoraAdapter(model, dir / "empty"); });
    EXPECT_NE(noConfig.find("adapter_config.json"), std::string::npos) << noConfig;
    writeAdapter(dir / "corrupt", cfg, lora);
    engine::writeFileAtomically(dir / "corrupt" / "adapter_config.json", "{\"r\": ");
    expectError([&] { engine::model::applyPeftLoraAdapter(model, dir / "corrupt"); }, ErrorKind::InvalidInput,
                "adapter_config.json");

    // A good module next to a bad one: the whole adapter is refused before anything is merged.
    // Regression: modules were merged one by one, so a later bad module left earlier ones merged.
    refused(cfg, {lora[0], {"model.layers.7.self_attn.q_proj", lora[0].a, lora[0].b}}, ErrorKind::InvalidInput,
            "model.layers.7.self_attn.q_proj");

    // A regex form of target_modules (PEFT's re.fullmatch over the module name) applies.
    {
        const fs::path folder = dir / "regex";
        writeAdapter(folder, patched(cfg, {{"target_modules", ".*\\.(q|v)_proj"}}), lora);
        LlamaForCausalLM other = randomLlama(config);
        EXPECT_EQ(engine::model::applyPeftLoraAdapter(other, folder), 2);
    }

    // Nothing of the refused adapters reached the model.
    LlamaForCausalLM fresh = randomLlama(config);
    for (const auto &item : fresh->named_parameters())
        EXPECT_TRUE(torch::equal(item.value(), model->named_parameters()[item.key()])) << item.key();
}
