// Phi-3 through the LLaMA-family model: a checkpoint written by a script of its own (make_tiny_phi3.py:
// Hugging Face's names, model_type "phi3", fused qkv_proj and gate_up_proj, partial rotary, a sliding
// window shorter than the prompt) loads, scores as the float64 reference (reference_llama.py) does, with
// and without a PEFT adapter on the fused projections, exports adapters as PEFT writes them, and decodes
// with a cache as the full forward does. Config keys that are not implemented are refused by name.

#include "engine/io/safetensorsfile.h"
#include "engine/model/generation.h"
#include "engine/model/lora.h"
#include "engine/model/moduletree.h"
#include "engine/model/pretrained.h"
#include "support/tempdir.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <torch/torch.h>

namespace {

namespace fs = std::filesystem;
using engine::model::KvCache;
using engine::model::LlamaConfig;
using engine::model::LlamaForCausalLM;
using engine::model::LoraSettings;
using nlohmann::json;
using testing_support::TempDir;

const std::vector<int64_t> kIds = {3, 14, 15, 9, 26, 5, 35, 8, 9, 7, 31, 40, 2, 63, 17, 28};

bool havePythonTorch()
{
    return std::system("/usr/bin/python3 -c 'import torch' >/dev/null 2>&1") == 0;
}

json readJson(const fs::path &path)
{
    std::ifstream in(path);
    return json::parse(in);
}

void runPython(const std::string &arguments)
{
    const std::string command = "/usr/bin/python3 " + arguments;
    ASSERT_EQ(std::system(command.c_str()), 0) << command;
}

std::vector<std::vector<double>> referenceLogprobs(const TempDir &dir, const json &cases)
{
    std::ofstream(dir / "cases.json") << cases.dump();
    runPython("'" MODEL_REFERENCE_SCRIPT "' --score '" + (dir / "cases.json").string() + "' '"
              + (dir / "reference.json").string() + "'");
    std::vector<std::vector<double>> out;
    for (const json &result : readJson(dir / "reference.json"))
        out.push_back(result.at("logprobs").get<std::vector<double>>());
    return out;
}

void expectMatches(const std::vector<double> &actual, const std::vector<double> &expected, const std::string &what)
{
    ASSERT_EQ(actual.size(), expected.size());
    double diff = 0;
    for (size_t i = 0; i < actual.size(); ++i)
        diff = std::max(diff, std::abs(actual[i] - expected[i]));
    std::cout << "[ phi3 ] " << what << ": max |log p - reference| = " << diff << '\n';
    EXPECT_LT(diff, 1e-4) << what;
    const auto [lo, hi] = std::minmax_element(expected.begin(), expected.end());
    EXPECT_GT(*hi - *lo, 0.5) << what << ": log-probs too uniform to test anything";
}

class Phi3Checkpoint : public ::testing::Test {
protected:
    void SetUp() override
    {
        if (!havePythonTorch())
            GTEST_SKIP() << "/usr/bin/python3 cannot import torch (install python3-torch)";
        runPython("'" TINY_PHI3_SCRIPT "' '" + modelDir().string() + "' '" + adapterDir().string() + "'");
    }

    fs::path modelDir() const { return m_dir / "model"; }
    fs::path adapterDir() const { return m_dir / "adapter"; }

    TempDir m_dir{"phi3"};
};

} // namespace

TEST_F(Phi3Checkpoint, LoadsWithFusedProjectionsInPhi3sOrder)
{
    LlamaForCausalLM model = engine::model::loadPretrained(modelDir());
    const LlamaConfig &config = model->config();
    EXPECT_EQ(config.modelType, "phi3");
    EXPECT_TRUE(config.hasFusedProjections());
    EXPECT_EQ(config.rotaryDim(), 4);
    EXPECT_EQ(config.attentionWindow(1), 5);
    std::vector<std::string> names;
    for (const auto &item : model->named_parameters())
        names.push_back(item.key());
    const std::vector<std::string> layer0(names.begin() + 1, names.begin() + 7);
    EXPECT_EQ(layer0, (std::vector<std::string>{"model.layers.0.self_attn.o_proj.weight",
                                                "model.layers.0.self_attn.qkv_proj.weight",
                                                "model.layers.0.mlp.gate_up_proj.weight", "model.layers.0.mlp.down_proj.weight",
                                                "model.layers.0.input_layernorm.weight",
                                                "model.layers.0.post_attention_layernorm.weight"}));
    EXPECT_EQ(model->named_parameters()["model.layers.1.self_attn.qkv_proj.weight"].sizes().vec(),
              (std::vector<int64_t>{64, 32})) << "(4 + 2 * 2) heads x 8";

    // The planner's tree names the same parameters in the same order, with the same shapes and count.
    const auto tree = engine::model::moduleTreeFromFolder(modelDir());
    const auto expected = tree.namedParameters();
    const auto actual = model->named_parameters();
    ASSERT_EQ(actual.size(), expected.size());
    for (size_t i = 0; i < expected.size(); ++i) {
        EXPECT_EQ(actual[i].key(), expected[i].name);
        EXPECT_EQ(actual[i].value().sizes().vec(), expected[i].info.shape) << expected[i].name;
    }
    EXPECT_EQ(tree.parameterCount(), config.parameterCount());
    EXPECT_EQ(tree.noSplitClasses, std::vector<std::string>{"Phi3DecoderLayer"});
    EXPECT_EQ(tree.find("model.rotary_emb")->buffers.front().shape, std::vector<int64_t>{2}) << "rotary dim 4 / 2";
}

TEST_F(Phi3Checkpoint, ScoresAsTheReferenceWithAndWithoutAnAdapterOnTheFusedProjections)
{
    const json cases = json::array({{{"model_dir", modelDir().string()}, {"ids", kIds}},
                                     {{"model_dir", modelDir().string()}, {"ids", kIds},
                                      {"adapter_dir", adapterDir().string()}}});
    const std::vector<std::vector<double>> reference = referenceLogprobs(m_dir, cases);
    ASSERT_EQ(reference.size(), 2u);

    LlamaForCausalLM base = engine::model::loadPretrained(modelDir());
    expectMatches(engine::model::scoreLogprobs(base, kIds), reference[0], "base model");

    LlamaForCausalLM merged = engine::model::loadPretrained(modelDir());
    EXPECT_EQ(engine::model::applyPeftLoraAdapter(merged, adapterDir()), 8) << "4 targets in 2 layers";
    expectMatches(engine::model::scoreLogprobs(merged, kIds), reference[1], "adapter merged");

    LlamaForCausalLM branched = engine::model::loadPretrained(modelDir());
    const LoraSettings settings =
        LoraSettings::fromPeftConfig(readJson(adapterDir() / "adapter_config.json"), "adapter_config.json");
    engine::model::attachLora(branched, settings);
    const auto file = engine::io::SafetensorsFile::open(adapterDir() / "adapter_model.safetensors");
    std::map<std::string, torch::Tensor> tensors;
    for (const auto &[name, unused] : engine::model::peftAdapterTensors(branched, settings))
        tensors[name] = file.tensor(name);
    engine::model::loadPeftAdapterTensors(branched, settings, tensors, "adapter_model.safetensors");
    branched->eval();
    expectMatches(engine::model::scoreLogprobs(branched, kIds), reference[1], "adapter as LoRA branches");

    // Exported as PEFT writes it, qkv_proj's adapter scores the same through the reference.
    const fs::path exported = m_dir / "exported";
    engine::model::savePeftAdapter(branched, settings, modelDir().string(), exported);
    EXPECT_EQ(engine::io::SafetensorsFile::open(exported / "adapter_model.safetensors")
                  .tensor("base_model.model.model.layers.1.self_attn.qkv_proj.lora_B.weight")
                  .sizes()
                  .vec(),
              (std::vector<int64_t>{64, 4}));
    const std::vector<std::vector<double>> again = referenceLogprobs(
        m_dir, json::array({{{"model_dir", modelDir().string()}, {"ids", kIds}, {"adapter_dir", exported.string()}}}));
    expectMatches(again.at(0), reference[1], "exported adapter through the reference");
}

TEST_F(Phi3Checkpoint, CachedDecodingEqualsTheFullForwardPastTheWindow)
{
    LlamaForCausalLM model = engine::model::loadPretrained(modelDir());
    model->eval();
    torch::NoGradGuard noGrad;
    const torch::Tensor ids = torch::tensor(kIds, torch::kInt64).unsqueeze(0);
    const torch::Tensor full = model->forward(ids);
    KvCache cache;
    model->forward(ids.narrow(1, 0, 7), 0, &cache);
    for (int64_t t = 7; t < ids.size(1); ++t) {
        const torch::Tensor step = model->forward(ids.narrow(1, t, 1), t, &cache);
        EXPECT_LT((step - full.narrow(1, t, 1)).abs().max().item<double>(), 1e-5) << "position " << t;
    }
}

TEST(Phi3Config, UnsupportedKeysAreRefusedByName)
{
    const json base = {{"model_type", "phi3"},       {"vocab_size", 64},          {"hidden_size", 32},
                       {"intermediate_size", 48},    {"num_hidden_layers", 2},    {"num_attention_heads", 4},
                       {"bos_token_id", 1},          {"eos_token_id", 2}};
    EXPECT_EQ(LlamaConfig::fromJson(base, "config.json").rotaryDim(), 8);
    const auto refused = [&](const std::string &key, const json &value) {
        json config = base;
        config[key] = value;
        try {
            LlamaConfig::fromJson(config, "config.json");
            ADD_FAILURE() << "accepted " << key;
        } catch (const std::exception &e) {
            EXPECT_NE(std::string(e.what()).find(key), std::string::npos) << e.what();
        }
    };
    refused("rope_scaling", {{"type", "longrope"}, {"long_factor", {1.0}}, {"short_factor", {1.0}}});
    refused("resid_pdrop", 0.1);
    refused("embd_pdrop", 0.1);
    refused("partial_rotary_factor", 0.0);
    refused("attention_bias", true);
}

// Phi-3 mini 4k's published config (the plan catalog's copy), counted by hand from its shapes: embeddings and
// the untied head 32064 x 3072 each; per layer qkv_proj 3072 x 9216 (32 heads + 2 x 32 kv heads of 96), o_proj
// 3072 x 3072, gate_up_proj 3072 x 16384, down_proj 8192 x 3072 and two norms of 3072; a final norm.
TEST(Phi3Config, PhiThreeMiniCountsItsPublishedSize)
{
    const fs::path file = fs::path(TUNEBENCH_TEST_DATA) / ".." / ".." / "resources" / "plan-catalog" / "phi-3-mini-4k.json";
    std::ifstream in(file);
    const nlohmann::json entry = nlohmann::json::parse(in);
    const LlamaConfig config = LlamaConfig::fromJson(entry.at("config"), file.string());
    const int64_t h = 3072, V = 32064, f = 8192;
    const int64_t layer = h * 3 * h + h * h + h * 2 * f + f * h + 2 * h;
    EXPECT_EQ(config.parameterCount(), 2 * V * h + 32 * layer + h);
    EXPECT_EQ(config.parameterCount(), 3821079552) << "3.8 B as published";
    EXPECT_EQ(entry.at("tunebench_catalog").at("parameters").get<int64_t>(), config.parameterCount());
}
