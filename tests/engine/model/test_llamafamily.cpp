// The engine's LLaMA-family model with Mistral, Qwen2 and Qwen3 configs, RoPE scaling and attention biases:
// structure against the module tree, behaviour of the sliding window and the KV cache.
#include "engine/model/llamaconfig.h"
#include "engine/model/llamamodel.h"
#include "engine/model/moduletree.h"
#include "support/tinymodels.h"

#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <torch/torch.h>

using engine::model::KvCache;
using engine::model::LlamaConfig;
using engine::model::LlamaForCausalLM;
using testing_support::maxAbsDiff;
using testing_support::randomLlama;
using testing_support::someIds;
using testing_support::tinyLlama;
using testing_support::tinyQwen3;

namespace {

LlamaConfig withWindow(LlamaConfig c, int64_t window)
{
    c.slidingWindow = window;
    return c;
}

std::vector<LlamaConfig> structureConfigs()
{
    LlamaConfig bias = tinyLlama("llama", false, 4);
    bias.attentionBias = true;
    LlamaConfig headDim = tinyLlama("mistral", false, 1);
    headDim.headDim = 12;
    LlamaConfig llama3 = tinyLlama("llama", true);
    llama3.ropeScaling = {"llama3", 8.0, 1.0, 4.0, 16};
    return {tinyLlama("llama"), tinyLlama("llama", true), bias, tinyLlama("qwen2"), tinyLlama("qwen2", true, 1),
            withWindow(tinyLlama("mistral"), 4), headDim, llama3, tinyQwen3(), tinyQwen3(true, true),
            testing_support::tinyGemma2(), testing_support::tinyGemma3()};
}

} // namespace

// The module tree the planner uses and the model the trainer runs must name the same parameters.
TEST(LlamaFamily, ModuleTreeEqualsNamedParametersInOrder)
{
    for (const LlamaConfig &config : structureConfigs()) {
        const std::string what = config.toJson().dump();
        config.validate("test");
        LlamaForCausalLM model(config);
        const auto tree = engine::model::llamaModuleTree(config, "float32");
        const auto expected = tree.namedParameters();
        const auto actual = model->named_parameters();
        ASSERT_EQ(actual.size(), expected.size()) << what;
        for (size_t i = 0; i < expected.size(); ++i) {
            EXPECT_EQ(actual[i].key(), expected[i].name) << what;
            EXPECT_EQ(actual[i].value().sizes().vec(), expected[i].info.shape) << expected[i].name << " " << what;
        }
        EXPECT_EQ(tree.parameterCount(), config.parameterCount()) << what;
        EXPECT_TRUE(model->named_buffers().is_empty());
        // The same through config.json, as a model folder would give it.
        const auto fromJson = engine::model::moduleTreeFromConfig(config.toJson(), "roundtrip");
        EXPECT_EQ(fromJson.root, tree.root) << what;
    }
}

TEST(LlamaFamily, BiasesWhereHuggingFacePutsThem)
{
    const auto params = LlamaForCausalLM(tinyLlama("qwen2"))->named_parameters();
    EXPECT_TRUE(params.contains("model.layers.0.self_attn.q_proj.bias"));
    EXPECT_TRUE(params.contains("model.layers.1.self_attn.k_proj.bias"));
    EXPECT_TRUE(params.contains("model.layers.1.self_attn.v_proj.bias"));
    EXPECT_FALSE(params.contains("model.layers.0.self_attn.o_proj.bias"));
    EXPECT_FALSE(params.contains("model.layers.0.mlp.up_proj.bias"));
    LlamaConfig bias = tinyLlama("llama");
    bias.attentionBias = true;
    EXPECT_TRUE(LlamaForCausalLM(bias)->named_parameters().contains("model.layers.0.self_attn.o_proj.bias"));
    EXPECT_FALSE(
        LlamaForCausalLM(tinyLlama("mistral"))->named_parameters().contains("model.layers.0.self_attn.q_proj.bias"));
}

TEST(LlamaFamily, Qwen3NormsEachHeadOfQueriesAndKeys)
{
    LlamaConfig config = tinyQwen3();
    const auto params = LlamaForCausalLM(config)->named_parameters();
    ASSERT_TRUE(params.contains("model.layers.0.self_attn.q_norm.weight"));
    ASSERT_TRUE(params.contains("model.layers.1.self_attn.k_norm.weight"));
    EXPECT_EQ(params["model.layers.0.self_attn.q_norm.weight"].sizes().vec(), std::vector<int64_t>{12}) << "head_dim";
    EXPECT_FALSE(params.contains("model.layers.0.self_attn.q_proj.bias"));
    EXPECT_FALSE(params.contains("model.layers.0.self_attn.o_proj.bias"));
    EXPECT_FALSE(LlamaForCausalLM(tinyLlama("qwen2"))->named_parameters().contains("model.layers.0.self_attn.q_norm.weight"));
    // attention_bias puts biases on all four projections, as on llama.
    const auto biased = LlamaForCausalLM(tinyQwen3(false, true))->named_parameters();
    EXPECT_TRUE(biased.contains("model.layers.0.self_attn.k_proj.bias"));
    EXPECT_TRUE(biased.contains("model.layers.0.self_attn.o_proj.bias"));

    // The norm is per head: scaling one head of q_proj's output leaves the logits unchanged (RMSNorm is
    // scale-invariant), which a norm over the whole projection would not.
    config.numHiddenLayers = 1;
    LlamaForCausalLM model = randomLlama(config, 5);
    torch::NoGradGuard noGrad;
    const torch::Tensor ids = someIds(2, 7);
    const torch::Tensor before = model->forward(ids);
    model->model->decoderLayers()[0]->self_attn->q_proj->weight.narrow(0, 12, 12).mul_(7.0);
    model->model->decoderLayers()[0]->self_attn->k_proj->weight.narrow(0, 0, 12).mul_(0.25);
    EXPECT_LT(maxAbsDiff(model->forward(ids), before), 1e-4);
    model->model->decoderLayers()[0]->self_attn->q_norm->weight.narrow(0, 0, 1).mul_(3.0);
    EXPECT_GT(maxAbsDiff(model->forward(ids), before), 1e-3) << "q_norm's weight is used";
}

TEST(LlamaFamily, InitializeWeightsZeroesBiases)
{
    LlamaForCausalLM model(tinyLlama("qwen2"));
    model->initializeWeights(5);
    for (const auto &item : model->named_parameters()) {
        const bool isBias = item.key().ends_with(".bias");
        if (isBias) {
            EXPECT_TRUE(torch::equal(item.value(), torch::zeros_like(item.value()))) << item.key();
        } else if (item.value().dim() == 1) {
            EXPECT_TRUE(torch::equal(item.value(), torch::ones_like(item.value()))) << item.key();
        }
    }
}

TEST(LlamaFamily, BiasesWindowAndQkNormGetFiniteGradients)
{
    for (const LlamaConfig &config : {tinyLlama("qwen2", true), withWindow(tinyLlama("mistral"), 3), tinyQwen3(true, true),
                                      testing_support::tinyGemma2(), testing_support::tinyGemma3()}) {
        LlamaForCausalLM model = randomLlama(config);
        const torch::Tensor ids = someIds(2, 9);
        const torch::Tensor logits = model->forward(ids.slice(1, 0, 8));
        torch::nn::functional::cross_entropy(logits.reshape({-1, 64}), ids.slice(1, 1, 9).reshape({-1})).backward();
        for (const auto &item : model->named_parameters()) {
            const torch::Tensor grad = item.value().grad();
            ASSERT_TRUE(grad.defined()) << item.key();
            EXPECT_TRUE(torch::isfinite(grad).all().item<bool>()) << item.key();
            EXPECT_GT(grad.abs().max().item<double>(), 0.0) << item.key();
        }
    }
}

// With one layer, query i reads keys i - W + 1 .. i only (transformers: kv_idx > q_idx - W).
TEST(LlamaFamily, SlidingWindowLimitsWhatATokenSees)
{
    LlamaConfig config = withWindow(tinyLlama("mistral"), 3);
    config.numHiddenLayers = 1;
    LlamaForCausalLM model = randomLlama(config);
    torch::NoGradGuard noGrad;
    const torch::Tensor ids = someIds(1, 12);
    const torch::Tensor before = model->forward(ids);
    const int64_t changed = 4;
    torch::Tensor other = ids.clone();
    other.select(1, changed).add_(1).remainder_(64);
    const torch::Tensor after = model->forward(other);
    for (int64_t i = 0; i < 12; ++i) {
        const double diff = maxAbsDiff(before.select(1, i), after.select(1, i));
        if (i >= changed && i < changed + 3)
            EXPECT_GT(diff, 1e-3) << "position " << i << " sees position " << changed;
        else
            EXPECT_LT(diff, 1e-6) << "position " << i << " must not see position " << changed;
    }
    // Without the window every later position sees it.
    config.slidingWindow = 0;
    LlamaForCausalLM full = randomLlama(config);
    EXPECT_GT(maxAbsDiff(full->forward(ids).select(1, 11), full->forward(other).select(1, 11)), 1e-3);
}

TEST(LlamaFamily, SlidingWindowAtLeastTheSequenceChangesNothing)
{
    LlamaForCausalLM windowed = randomLlama(withWindow(tinyLlama("mistral"), 8));
    LlamaForCausalLM plain = randomLlama(tinyLlama("mistral"));
    torch::NoGradGuard noGrad;
    const torch::Tensor ids = someIds(2, 8);
    EXPECT_LT(maxAbsDiff(windowed->forward(ids), plain->forward(ids)), 1e-6);
    EXPECT_GT(maxAbsDiff(windowed->forward(someIds(2, 9)), plain->forward(someIds(2, 9))), 1e-3);
}

TEST(LlamaFamily, KvCacheWithSlidingWindowGivesTheSameLogitsAsOneFullPass)
{
    LlamaForCausalLM model = randomLlama(withWindow(tinyLlama("mistral"), 3));
    torch::NoGradGuard noGrad;
    const torch::Tensor ids = someIds(2, 11);
    const torch::Tensor full = model->forward(ids);
    KvCache cache;
    EXPECT_LT(maxAbsDiff(model->forward(ids.slice(1, 0, 2), 0, &cache), full.slice(1, 0, 2)), 1e-5);
    for (int64_t pos = 2; pos < 7; ++pos) {
        const torch::Tensor step = model->forward(ids.slice(1, pos, pos + 1), cache.length(), &cache);
        EXPECT_LT(maxAbsDiff(step, full.slice(1, pos, pos + 1)), 1e-5) << "position " << pos;
    }
    EXPECT_LT(maxAbsDiff(model->forward(ids.slice(1, 7, 11), 7, &cache), full.slice(1, 7, 11)), 1e-5);
}

TEST(LlamaFamily, Llama3ScalingWithFactorOneIsPlainRope)
{
    LlamaConfig scaled = tinyLlama("llama");
    scaled.ropeScaling = {"llama3", 1.0, 1.0, 4.0, 8};
    LlamaForCausalLM a = randomLlama(scaled);
    LlamaForCausalLM b = randomLlama(tinyLlama("llama"));
    torch::NoGradGuard noGrad;
    const torch::Tensor ids = someIds(1, 20);
    EXPECT_LT(maxAbsDiff(a->forward(ids, 5), b->forward(ids, 5)), 1e-5);
    // A real factor changes positions beyond the short wavelengths.
    scaled.ropeScaling.factor = 8.0;
    LlamaForCausalLM c = randomLlama(scaled);
    EXPECT_GT(maxAbsDiff(c->forward(ids, 5), b->forward(ids, 5)), 1e-3);
}

TEST(LlamaFamily, RealConfigsLoadIntoTheModelConfig)
{
    const auto dir = std::filesystem::path(TUNEBENCH_TEST_DATA) / "model" / "configs";
    const LlamaConfig mistral = LlamaConfig::fromFile(dir / "mistral-7b-v0.1.json");
    EXPECT_EQ(mistral.modelType, "mistral");
    EXPECT_EQ(mistral.slidingWindow, 4096);
    EXPECT_EQ(mistral.numKeyValueHeads, 8);
    const LlamaConfig qwen = LlamaConfig::fromFile(dir / "qwen2-0.5b.json");
    EXPECT_TRUE(qwen.hasQkvBias());
    EXPECT_FALSE(qwen.hasOutputBias());
    EXPECT_TRUE(qwen.tieWordEmbeddings);
    EXPECT_EQ(qwen.slidingWindow, 0) << "use_sliding_window is false";
    const LlamaConfig llama31 = LlamaConfig::fromFile(dir / "llama-3.1-8b.json");
    EXPECT_EQ(llama31.ropeScaling, (engine::model::RopeScaling{"llama3", 8.0, 1.0, 4.0, 8192}));
    EXPECT_DOUBLE_EQ(llama31.ropeTheta, 500000.0);
}
