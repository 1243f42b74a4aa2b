// Gemma 2 and Gemma 3 text end to end through the LLaMA-family model: checkpoints written by a script of
// their own (make_tiny_gemma.py: Hugging Face's names, model_type "gemma2" / "gemma3_text", local and
// global layers, prompts longer than the window) load, score as the float64 reference
// (reference_llama.py) does, with and without a PEFT LoRA adapter (merged and as branches), export
// adapters as PEFT writes them, and generate with a cache exactly as the full forward predicts.
// Config keys that change the maths and are not implemented are refused by name.

#include "engine/io/safetensorsfile.h"
#include "engine/model/generation.h"
#include "engine/model/lora.h"
#include "engine/model/pretrained.h"
#include "support/tempdir.h"
#include "support/tinymodels.h"

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

double maxAbsDiff(const std::vector<double> &a, const std::vector<double> &b)
{
    EXPECT_EQ(a.size(), b.size());
    double diff = 0;
    for (size_t i = 0; i < std::min(a.size(), b.size()); ++i)
        diff = std::max(diff, std::abs(a[i] - b[i]));
    return diff;
}

void expectMatches(const std::vector<double> &actual, const std::vector<double> &expected, const std::string &what)
{
    const double diff = maxAbsDiff(actual, expected);
    std::cout << "[ gemma ] " << what << ": max |log p - reference| = " << diff << '\n';
    EXPECT_LT(diff, 1e-4) << what;
    const auto [lo, hi] = std::minmax_element(expected.begin(), expected.end());
    EXPECT_GT(*hi - *lo, 0.5) << what << ": log-probs too uniform to test anything";
}

class GemmaCheckpoint : public ::testing::TestWithParam<std::string> {
protected:
    void SetUp() override
    {
        if (!havePythonTorch())
            GTEST_SKIP() << "/usr/bin/python3 cannot import torch (install python3-torch)";
        runPython("'" TINY_GEMMA_SCRIPT "' " + GetParam() + " '" + modelDir().string() + "' '" + adapterDir().string()
                  + "'");
    }

    fs::path modelDir() const { return m_dir / "model"; }
    fs::path adapterDir() const { return m_dir / "adapter"; }

    TempDir m_dir{"gemma"};
};

std::string kindName(const ::testing::TestParamInfo<std::string> &info)
{
    return info.param == "gemma2" ? "Gemma2" : "Gemma3Text";
}

} // namespace

INSTANTIATE_TEST_SUITE_P(Kinds, GemmaCheckpoint, ::testing::Values("gemma2", "gemma3_text"), kindName);

TEST_P(GemmaCheckpoint, LoadsWithItsLayerKindsNormsAndTiedHead)
{
    LlamaForCausalLM model = engine::model::loadPretrained(modelDir());
    const LlamaConfig &config = model->config();
    EXPECT_EQ(config.modelType, GetParam());
    EXPECT_EQ(config.effectiveHeadDim(), 12);
    EXPECT_TRUE(config.hasNormOffset());
    EXPECT_TRUE(config.hasFeedforwardNorms());
    EXPECT_DOUBLE_EQ(config.embeddingScale(), std::sqrt(32.0));
    EXPECT_EQ(config.hiddenAct, "gelu_pytorch_tanh");
    const auto params = model->named_parameters();
    EXPECT_TRUE(params.contains("model.layers.2.pre_feedforward_layernorm.weight"));
    EXPECT_TRUE(params.contains("model.layers.2.post_feedforward_layernorm.weight"));
    EXPECT_FALSE(params.contains("lm_head.weight")) << "tied";
    if (GetParam() == "gemma2") {
        // Even layers slide (Gemma2Attention: sliding unless layer_idx % 2).
        EXPECT_EQ((std::vector<int64_t>{config.attentionWindow(0), config.attentionWindow(1), config.attentionWindow(2)}),
                  (std::vector<int64_t>{4, 0, 4}));
        EXPECT_DOUBLE_EQ(config.attentionScale(), 0.25) << "query_pre_attn_scalar 16";
        EXPECT_DOUBLE_EQ(config.attnLogitSoftcapping, 2.0);
        EXPECT_DOUBLE_EQ(config.finalLogitSoftcapping, 4.0);
        EXPECT_FALSE(params.contains("model.layers.0.self_attn.q_norm.weight"));
    } else {
        // sliding_window_pattern 3: layers 0 and 1 local (base 10000, no scaling), layer 2 global.
        EXPECT_EQ((std::vector<int64_t>{config.attentionWindow(0), config.attentionWindow(1), config.attentionWindow(2)}),
                  (std::vector<int64_t>{5, 5, 0}));
        EXPECT_DOUBLE_EQ(config.rotaryBase(0), 10000.0);
        EXPECT_DOUBLE_EQ(config.rotaryBase(2), 1e6);
        EXPECT_EQ(config.rotaryScaling(0).type, "");
        EXPECT_EQ(config.rotaryScaling(2).type, "linear");
        EXPECT_EQ(params["model.layers.1.self_attn.k_norm.weight"].sizes().vec(), std::vector<int64_t>{12});
    }
}

TEST_P(GemmaCheckpoint, ScoresAsTheReferenceWithAndWithoutAnAdapter)
{
    const json cases = json::array({{{"model_dir", modelDir().string()}, {"ids", kIds}},
                                     {{"model_dir", modelDir().string()}, {"ids", kIds},
                                      {"adapter_dir", adapterDir().string()}}});
    const std::vector<std::vector<double>> reference = referenceLogprobs(m_dir, cases);
    ASSERT_EQ(reference.size(), 2u);

    LlamaForCausalLM base = engine::model::loadPretrained(modelDir());
    expectMatches(engine::model::scoreLogprobs(base, kIds), reference[0], GetParam() + " base model");

    LlamaForCausalLM merged = engine::model::loadPretrained(modelDir());
    EXPECT_EQ(engine::model::applyPeftLoraAdapter(merged, adapterDir()), 15) << "5 targets in 3 layers";
    expectMatches(engine::model::scoreLogprobs(merged, kIds), reference[1], GetParam() + " adapter merged");

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
    expectMatches(engine::model::scoreLogprobs(branched, kIds), reference[1], GetParam() + " adapter as LoRA branches");
}

TEST_P(GemmaCheckpoint, ExportedAdapterIsPeftsAndScoresTheSameThroughTheReference)
{
    LlamaForCausalLM model = engine::model::loadPretrained(modelDir());
    LoraSettings settings;
    settings.r = 2;
    settings.alpha = 6;
    settings.dropout = 0;
    settings.targets = {"q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"};
    torch::manual_seed(9);
    engine::model::attachLora(model, settings);
    {
        torch::NoGradGuard noGrad;
        for (auto &item : model->named_parameters()) {
            if (item.key().find("lora_B") != std::string::npos)
                item.value().copy_(0.5 * torch::randn(item.value().sizes()));
        }
    }
    model->eval();
    const fs::path exported = m_dir / "exported";
    engine::model::savePeftAdapter(model, settings, modelDir().string(), exported);

    const auto file = engine::io::SafetensorsFile::open(exported / "adapter_model.safetensors");
    EXPECT_TRUE(file.contains("base_model.model.model.layers.2.mlp.up_proj.lora_A.weight"));
    EXPECT_EQ(file.tensor("base_model.model.model.layers.1.self_attn.v_proj.lora_B.weight").sizes().vec(),
              (std::vector<int64_t>{24, 2})) << "v_proj out = kv heads 2 x head_dim 12";
    EXPECT_FALSE(file.contains("base_model.model.model.layers.0.pre_feedforward_layernorm.lora_A.weight"));

    const json cases = json::array({{{"model_dir", modelDir().string()}, {"ids", kIds},
                                     {"adapter_dir", exported.string()}}});
    const std::vector<std::vector<double>> reference = referenceLogprobs(m_dir, cases);
    ASSERT_EQ(reference.size(), 1u);
    expectMatches(engine::model::scoreLogprobs(model, kIds), reference[0], GetParam() + " exported adapter");
}

// A LoRA run: a few Adam steps on the next-token loss train the branches through the soft-caps, the
// GeGLU and the extra norms (gradient checkpointing on, as training runs it); the adapter the run
// exports scores through the reference as the trained model does, and differs from the base.
TEST_P(GemmaCheckpoint, TrainedAdapterExportsAndScoresTheSameThroughTheReference)
{
    LlamaForCausalLM model = engine::model::loadPretrained(modelDir());
    LoraSettings settings;
    settings.r = 4;
    settings.alpha = 8;
    settings.dropout = 0;
    settings.targets = {"q_proj", "v_proj", "gate_proj", "down_proj"};
    torch::manual_seed(11);
    engine::model::attachLora(model, settings);
    model->setGradientCheckpointing(true);
    model->train();
    std::vector<torch::Tensor> trainable;
    for (const auto &p : model->parameters()) {
        if (p.requires_grad())
            trainable.push_back(p);
    }
    ASSERT_EQ(trainable.size(), 24u) << "A and B of 4 targets in 3 layers";
    torch::optim::Adam optimizer(trainable, torch::optim::AdamOptions(0.02));
    const torch::Tensor ids = torch::tensor(kIds, torch::kInt64).unsqueeze(0);
    double first = 0;
    double last = 0;
    for (int step = 0; step < 6; ++step) {
        optimizer.zero_grad();
        const torch::Tensor logits = model->forward(ids.narrow(1, 0, 15));
        const torch::Tensor loss = torch::nn::functional::cross_entropy(logits.reshape({-1, 64}), ids.narrow(1, 1, 15).reshape({-1}));
        loss.backward();
        optimizer.step();
        (step == 0 ? first : last) = loss.item<double>();
    }
    EXPECT_LT(last, first - 0.1) << "the adapter learns";
    model->eval();
    const fs::path exported = m_dir / "trained";
    engine::model::savePeftAdapter(model, settings, modelDir().string(), exported);

    const json cases = json::array({{{"model_dir", modelDir().string()}, {"ids", kIds}},
                                     {{"model_dir", modelDir().string()}, {"ids", kIds},
                                      {"adapter_dir", exported.string()}}});
    const std::vector<std::vector<double>> reference = referenceLogprobs(m_dir, cases);
    ASSERT_EQ(reference.size(), 2u);
    expectMatches(engine::model::scoreLogprobs(model, kIds), reference[1], GetParam() + " trained adapter");
    EXPECT_GT(maxAbsDiff(reference[0], reference[1]), 0.1) << "the trained adapter changes the model";
}

// The cache holds every key; the masks keep the sliding layers local. Token by token after a prompt
// longer than the window, the logits equal the full forward's at each position.
TEST_P(GemmaCheckpoint, CachedDecodingEqualsTheFullForwardPastTheWindow)
{
    LlamaForCausalLM model = engine::model::loadPretrained(modelDir());
    model->eval();
    torch::NoGradGuard noGrad;
    const torch::Tensor ids = torch::tensor(kIds, torch::kInt64).unsqueeze(0);
    const torch::Tensor full = model->forward(ids);
    const int64_t prompt = 7; // longer than either window
    KvCache cache;
    const torch::Tensor first = model->forward(ids.narrow(1, 0, prompt), 0, &cache);
    EXPECT_LT((first - full.narrow(1, 0, prompt)).abs().max().item<double>(), 1e-5);
    for (int64_t t = prompt; t < ids.size(1); ++t) {
        const torch::Tensor step = model->forward(ids.narrow(1, t, 1), t, &cache);
        EXPECT_LT((step - full.narrow(1, t, 1)).abs().max().item<double>(), 1e-5) << "position " << t;
    }

    // Greedy generation with the cache picks the full forward's argmax at every step.
    engine::model::GenerationOptions options;
    options.maxNewTokens = 12;
    const std::vector<int64_t> start(kIds.begin(), kIds.begin() + prompt);
    const auto out = engine::model::generate(model, start, options);
    ASSERT_EQ(out.tokens.size(), 12u);
    std::vector<int64_t> sequence = start;
    for (const int64_t token : out.tokens) {
        const torch::Tensor logits = model->forward(torch::tensor(sequence, torch::kInt64).unsqueeze(0));
        EXPECT_EQ(logits[0][-1].argmax().item<int64_t>(), token);
        sequence.push_back(token);
    }
}

// A model built from the config initializes Gemma's norms to 0 (x * (1 + w) is the identity scale), and
// the soft-cap bounds the logits.
TEST(Gemma, InitializesNormsToZeroAndCapsTheLogits)
{
    LlamaForCausalLM model(testing_support::tinyGemma2());
    model->initializeWeights(3);
    for (const auto &item : model->named_parameters()) {
        if (item.value().dim() == 1)
            EXPECT_EQ(item.value().abs().max().item<float>(), 0.0f) << item.key();
    }
    {
        torch::NoGradGuard noGrad;
        model->model->embed_tokens->weight.mul_(1000.0);
    }
    const torch::Tensor logits = model->forward(torch::tensor(kIds, torch::kInt64).unsqueeze(0));
    EXPECT_LE(logits.abs().max().item<double>(), 4.0);
}

namespace {

json gemma2Json()
{
    return LlamaConfig(testing_support::tinyGemma2()).toJson();
}

json with(json config, const std::string &key, const json &value)
{
    config[key] = value;
    return config;
}

void expectRefused(const json &config, const std::string &field)
{
    try {
        LlamaConfig::fromJson(config, "config.json");
        ADD_FAILURE() << "accepted: " << config.dump();
    } catch (const std::exception &e) {
        EXPECT_NE(std::string(e.what()).find(field), std::string::npos) << e.what();
    }
}

} // namespace

TEST(GemmaConfig, RoundTripsThroughItsJson)
{
    for (const LlamaConfig &config : {testing_support::tinyGemma2(), testing_support::tinyGemma3()}) {
        const LlamaConfig back = LlamaConfig::fromJson(config.toJson(), "config.json");
        EXPECT_EQ(back.toJson(), config.toJson());
        for (int64_t i = 0; i < config.numHiddenLayers; ++i) {
            EXPECT_EQ(back.attentionWindow(i), config.attentionWindow(i));
            EXPECT_EQ(back.rotaryBase(i), config.rotaryBase(i));
        }
        EXPECT_EQ(back.toJson().contains("hidden_act"), false) << "gemma writes hidden_activation";
    }
}

TEST(GemmaConfig, LayerTypesDecideOverThePattern)
{
    json config = gemma2Json();
    config["layer_types"] = {"full_attention", "sliding_attention", "sliding_attention"};
    const LlamaConfig read = LlamaConfig::fromJson(config, "config.json");
    EXPECT_EQ((std::vector<int64_t>{read.attentionWindow(0), read.attentionWindow(1), read.attentionWindow(2)}),
              (std::vector<int64_t>{0, 4, 4}));
}

TEST(GemmaConfig, Gemma3RopeParametersOfTransformers5)
{
    json config = LlamaConfig(testing_support::tinyGemma3()).toJson();
    config.erase("rope_theta");
    config.erase("rope_scaling");
    config.erase("rope_local_base_freq");
    config["rope_parameters"] = {
        {"full_attention", {{"rope_type", "linear"}, {"factor", 8.0}, {"rope_theta", 1000000.0}}},
        {"sliding_attention", {{"rope_type", "default"}, {"rope_theta", 10000.0}}}};
    const LlamaConfig read = LlamaConfig::fromJson(config, "config.json");
    EXPECT_DOUBLE_EQ(read.rotaryBase(0), 10000.0);
    EXPECT_DOUBLE_EQ(read.rotaryBase(2), 1e6);
    EXPECT_DOUBLE_EQ(read.rotaryScaling(2).factor, 8.0);
    EXPECT_EQ(read.rotaryScaling(1).type, "");

    config["rope_parameters"]["sliding_attention"]["rope_type"] = "linear";
    expectRefused(config, "rope_parameters.sliding_attention.rope_type");
}

TEST(GemmaConfig, UnsupportedKeysAreRefusedByName)
{
    json multimodal = gemma2Json();
    multimodal["model_type"] = "gemma3";
    expectRefused(multimodal, "gemma3_text");

    json gemma3 = LlamaConfig(testing_support::tinyGemma3()).toJson();
    expectRefused(with(gemma3, "attn_logit_softcapping", 50.0), "attn_logit_softcapping");
    expectRefused(with(gemma3, "use_bidirectional_attention", true), "use_bidirectional_attention");
    json noTypes = gemma3;
    noTypes.erase("layer_types");
    expectRefused(with(noTypes, "sliding_window_pattern", 0), "sliding_window_pattern");

    expectRefused(with(gemma2Json(), "hidden_activation", "gelu"), "hidden_activation");
    expectRefused(with(gemma2Json(), "layer_types", {"full_attention", "chunked_attention", "full_attention"}),
                  "layer_types");
    expectRefused(with(gemma2Json(), "layer_types", {"full_attention"}), "layer_types");
    expectRefused(with(gemma2Json(), "attention_dropout", 0.1), "attention_dropout");
    expectRefused(with(gemma2Json(), "final_logit_softcapping", -1.0), "final_logit_softcapping");
    expectRefused(with(gemma2Json(), "rope_scaling", {{"rope_type", "yarn"}, {"factor", 4.0}}),
                  "rope_scaling.rope_type");
}

// The published Gemma 2 2B and Gemma 3 1B configs (as their config.json files give them) read with the
// class defaults where keys are missing, and count the published parameters.
TEST(GemmaConfig, PublishedConfigsReadAndCountTheirParameters)
{
    const json gemma2 = {{"architectures", {"Gemma2ForCausalLM"}}, {"attention_bias", false},
                         {"attention_dropout", 0.0}, {"attn_logit_softcapping", 50.0}, {"bos_token_id", 2},
                         {"cache_implementation", "hybrid"}, {"eos_token_id", 1}, {"final_logit_softcapping", 30.0},
                         {"head_dim", 256}, {"hidden_act", "gelu_pytorch_tanh"},
                         {"hidden_activation", "gelu_pytorch_tanh"}, {"hidden_size", 2304},
                         {"initializer_range", 0.02}, {"intermediate_size", 9216}, {"max_position_embeddings", 8192},
                         {"model_type", "gemma2"}, {"num_attention_heads", 8}, {"num_hidden_layers", 26},
                         {"num_key_value_heads", 4}, {"pad_token_id", 0}, {"query_pre_attn_scalar", 256},
                         {"rms_norm_eps", 1e-06}, {"rope_theta", 10000.0}, {"sliding_window", 4096},
                         {"torch_dtype", "float32"}, {"use_cache", true}, {"vocab_size", 256000}};
    const LlamaConfig g2 = LlamaConfig::fromJson(gemma2, "gemma-2-2b/config.json");
    EXPECT_TRUE(g2.tieWordEmbeddings);
    EXPECT_EQ(g2.attentionWindow(0), 4096);
    EXPECT_EQ(g2.attentionWindow(25), 0);
    EXPECT_EQ(g2.parameterCount(), 2614341888) << "Gemma 2 2B";

    const json gemma3 = {{"architectures", {"Gemma3ForCausalLM"}}, {"attention_bias", false},
                         {"attention_dropout", 0.0}, {"attn_logit_softcapping", nullptr}, {"bos_token_id", 2},
                         {"eos_token_id", 1}, {"final_logit_softcapping", nullptr}, {"head_dim", 256},
                         {"hidden_activation", "gelu_pytorch_tanh"}, {"hidden_size", 1152},
                         {"initializer_range", 0.02}, {"intermediate_size", 6912}, {"max_position_embeddings", 32768},
                         {"model_type", "gemma3_text"}, {"num_attention_heads", 4}, {"num_hidden_layers", 26},
                         {"num_key_value_heads", 1}, {"pad_token_id", 0}, {"query_pre_attn_scalar", 256},
                         {"rms_norm_eps", 1e-06}, {"rope_local_base_freq", 10000}, {"rope_scaling", nullptr},
                         {"rope_theta", 1000000}, {"sliding_window", 512}, {"sliding_window_pattern", 6},
                         {"torch_dtype", "bfloat16"}, {"use_cache", true}, {"vocab_size", 262144}};
    const LlamaConfig g3 = LlamaConfig::fromJson(gemma3, "gemma-3-1b-pt/config.json");
    EXPECT_EQ(g3.attentionWindow(4), 512);
    EXPECT_EQ(g3.attentionWindow(5), 0) << "every sixth layer is global";
    EXPECT_DOUBLE_EQ(g3.rotaryBase(0), 10000.0);
    EXPECT_DOUBLE_EQ(g3.rotaryBase(5), 1e6);
    EXPECT_EQ(g3.parameterCount(), 999885952) << "Gemma 3 1B";
}
