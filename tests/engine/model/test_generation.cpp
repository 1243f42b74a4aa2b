// Generation with a KV cache (greedy, top-k, top-p, seeds, stop ids, limits, cancel) and scoring,
// each checked against a plain full forward pass without a cache.
#include "engine/core/error.h"
#include "engine/core/jobcontrol.h"
#include "engine/model/generation.h"
#include "support/expecterror.h"
#include "support/tinymodels.h"

#include <ATen/CPUGeneratorImpl.h>

#include <cmath>
#include <algorithm>
#include <limits>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <torch/torch.h>

using engine::ErrorKind;
using engine::model::GenerationOptions;
using engine::model::GenerationResult;
using engine::model::LlamaConfig;
using engine::model::LlamaForCausalLM;
using engine::model::StopReason;
using testing_support::expectError;
using testing_support::randomLlama;
using testing_support::tinyLlama;

namespace {

/// Logits of the last position of one full forward over `ids`, without a cache.
torch::Tensor lastLogits(LlamaForCausalLM &model, const std::vector<int64_t> &ids)
{
    torch::NoGradGuard noGrad;
    return model->forward(torch::tensor(ids, torch::kInt64).unsqueeze(0))[0][-1];
}

std::vector<int64_t> concat(std::vector<int64_t> a, const std::vector<int64_t> &b)
{
    a.insert(a.end(), b.begin(), b.end());
    return a;
}

std::vector<int64_t> somePrompt(int64_t length, int64_t vocab, int64_t salt = 0)
{
    std::vector<int64_t> ids;
    for (int64_t i = 0; i < length; ++i)
        ids.push_back((7 * i + 3 + salt) % vocab);
    return ids;
}

GenerationOptions sampling(double temperature, uint64_t seed, int64_t maxNewTokens = 16)
{
    GenerationOptions o;
    o.temperature = temperature;
    o.seed = seed;
    o.maxNewTokens = maxNewTokens;
    return o;
}

/// A token sequence sampled without a cache: a full forward per step, the same generator sequence.
std::vector<int64_t> generateWithoutCache(LlamaForCausalLM &model, const std::vector<int64_t> &prompt,
                                          const GenerationOptions &options)
{
    at::Generator generator = at::detail::createCPUGenerator(options.seed);
    std::vector<int64_t> tokens;
    for (int64_t i = 0; i < options.maxNewTokens; ++i)
        tokens.push_back(engine::model::sampleNextToken(lastLogits(model, concat(prompt, tokens)), options, generator));
    return tokens;
}

std::vector<LlamaConfig> generationConfigs()
{
    LlamaConfig window = tinyLlama("mistral", false, 1);
    window.slidingWindow = 4;
    // Gemma 3's own head: a random tied one mostly repeats the scaled input embedding, too few tokens to test.
    LlamaConfig gemma3 = testing_support::tinyGemma3();
    gemma3.tieWordEmbeddings = false;
    return {tinyLlama("llama", false, 2), tinyLlama("qwen2", true, 2), window, testing_support::tinyQwen3(),
            testing_support::tinyGemma2(), gemma3};
}

torch::Tensor logitsOf(std::vector<float> probs)
{
    return torch::tensor(probs).log();
}

std::map<int64_t, int> drawCounts(const torch::Tensor &logits, const GenerationOptions &options, int draws)
{
    at::Generator generator = at::detail::createCPUGenerator(options.seed);
    std::map<int64_t, int> counts;
    for (int i = 0; i < draws; ++i)
        ++counts[engine::model::sampleNextToken(logits, options, generator)];
    return counts;
}

} // namespace

TEST(Generation, GreedyIsTheArgmaxOfAFullForwardAtEveryStep)
{
    uint64_t seed = 30;
    for (const LlamaConfig &config : generationConfigs()) {
        const std::string what = config.toJson().dump();
        LlamaForCausalLM model = randomLlama(config, ++seed);
        const std::vector<int64_t> prompt = somePrompt(5, config.vocabSize, int64_t(seed));
        GenerationOptions options;
        options.maxNewTokens = 14;
        std::vector<int64_t> streamed;
        const GenerationResult out = engine::model::generate(model, prompt, options, nullptr,
                                                             [&](int64_t id) { streamed.push_back(id); });
        ASSERT_EQ(out.tokens.size(), 14u) << what;
        EXPECT_EQ(out.reason, StopReason::MaxTokens);
        EXPECT_EQ(streamed, out.tokens) << "onToken sees each token in order";
        for (size_t i = 0; i < out.tokens.size(); ++i) {
            const std::vector<int64_t> prefix = concat(prompt, {out.tokens.begin(), out.tokens.begin() + long(i)});
            const torch::Tensor logits = lastLogits(model, prefix);
            EXPECT_EQ(logits.argmax().item<int64_t>(), out.tokens[i]) << what << " step " << i;
        }
        // Not a degenerate model that repeats one token.
        EXPECT_GT(std::set<int64_t>(out.tokens.begin(), out.tokens.end()).size(), 2u) << what;
    }
}

TEST(Generation, KvCacheSamplingEqualsRecomputingWithoutCache)
{
    uint64_t seed = 40;
    for (const LlamaConfig &config : generationConfigs()) {
        LlamaForCausalLM model = randomLlama(config, ++seed);
        const std::vector<int64_t> prompt = somePrompt(4, config.vocabSize, int64_t(seed));
        for (const GenerationOptions &options : {sampling(1.0, 3), sampling(0.7, 11)}) {
            const GenerationResult cached = engine::model::generate(model, prompt, options);
            EXPECT_EQ(cached.tokens, generateWithoutCache(model, prompt, options)) << config.toJson().dump();
        }
    }
}

TEST(Generation, TopKOneIsGreedy)
{
    LlamaForCausalLM model = randomLlama(tinyLlama("llama", false, 2), 3);
    const std::vector<int64_t> prompt = somePrompt(3, 64);
    GenerationOptions greedy;
    greedy.maxNewTokens = 12;
    GenerationOptions topK = sampling(1.3, 99, 12);
    topK.topK = 1;
    EXPECT_EQ(engine::model::generate(model, prompt, topK).tokens, engine::model::generate(model, prompt, greedy).tokens);
}

TEST(Generation, SameSeedSameSampleOtherSeedsDiffer)
{
    LlamaForCausalLM model = randomLlama(tinyLlama("llama", false, 2), 3);
    const std::vector<int64_t> prompt = somePrompt(3, 64);
    const auto first = engine::model::generate(model, prompt, sampling(1.5, 5, 20)).tokens;
    EXPECT_EQ(engine::model::generate(model, prompt, sampling(1.5, 5, 20)).tokens, first);
    int differing = 0;
    for (uint64_t seed : {6, 7, 8, 9})
        differing += engine::model::generate(model, prompt, sampling(1.5, seed, 20)).tokens != first;
    EXPECT_GE(differing, 3);
    // Temperature 0 ignores the seed.
    EXPECT_EQ(engine::model::generate(model, prompt, sampling(0.0, 1, 10)).tokens,
              engine::model::generate(model, prompt, sampling(0.0, 2, 10)).tokens);
}

TEST(Generation, TopPKeepsTheTokenThatCrossesTheThreshold)
{
    GenerationOptions options = sampling(1.0, 1);
    options.topP = 0.5;
    // 0.6 alone reaches 0.5: only token 0.
    auto counts = drawCounts(logitsOf({0.6f, 0.3f, 0.1f}), options, 300);
    EXPECT_EQ(counts.size(), 1u);
    EXPECT_EQ(counts[0], 300);
    // 0.4 does not, 0.4 + 0.35 does: tokens 0 and 1, in about their renormalised proportions.
    counts = drawCounts(logitsOf({0.4f, 0.35f, 0.25f}), options, 2000);
    EXPECT_EQ(counts.count(2), 0u);
    EXPECT_NEAR(counts[0] / 2000.0, 0.4 / 0.75, 0.04);
    EXPECT_NEAR(counts[1] / 2000.0, 0.35 / 0.75, 0.04);
    // The order of the vocabulary does not matter.
    counts = drawCounts(logitsOf({0.25f, 0.35f, 0.4f}), options, 500);
    EXPECT_EQ(counts.count(0), 0u);
    EXPECT_GT(counts[1], 0);
    EXPECT_GT(counts[2], 0);
    // top-p 1 keeps everything, with the model's probabilities.
    options.topP = 1.0;
    counts = drawCounts(logitsOf({0.6f, 0.3f, 0.1f}), options, 4000);
    EXPECT_NEAR(counts[0] / 4000.0, 0.6, 0.03);
    EXPECT_NEAR(counts[1] / 4000.0, 0.3, 0.03);
    EXPECT_NEAR(counts[2] / 4000.0, 0.1, 0.03);
}

TEST(Generation, TopKAndTemperatureOnHandMadeLogits)
{
    GenerationOptions options = sampling(1.0, 2);
    options.topK = 2;
    auto counts = drawCounts(logitsOf({0.1f, 0.5f, 0.15f, 0.25f}), options, 1000);
    EXPECT_EQ(counts.count(0), 0u);
    EXPECT_EQ(counts.count(2), 0u);
    EXPECT_NEAR(counts[1] / 1000.0, 0.5 / 0.75, 0.05);
    // Temperature sharpens: at 0.25 p ∝ p^4, so 0.5^4 / (0.5^4 + 0.25^4) ≈ 0.94.
    options.temperature = 0.25;
    counts = drawCounts(logitsOf({0.1f, 0.5f, 0.15f, 0.25f}), options, 1000);
    EXPECT_NEAR(counts[1] / 1000.0, 16.0 / 17.0, 0.03);
    // Greedy is the argmax whatever the filters say.
    at::Generator generator = at::detail::createCPUGenerator(0);
    GenerationOptions greedy;
    greedy.topK = 3;
    greedy.topP = 0.1;
    EXPECT_EQ(engine::model::sampleNextToken(logitsOf({0.1f, 0.2f, 0.6f, 0.1f}), greedy, generator), 2);
}

TEST(Generation, StopIdsEndGenerationAndAreIncluded)
{
    LlamaForCausalLM model = randomLlama(tinyLlama("llama", false, 2), 12);
    const std::vector<int64_t> prompt = somePrompt(4, 64);
    GenerationOptions options;
    options.maxNewTokens = 16;
    const auto free = engine::model::generate(model, prompt, options).tokens;
    // The first token that is new at index >= 2 is the stop token.
    size_t stopAt = 2;
    while (stopAt < free.size() && std::find(free.begin(), free.begin() + long(stopAt), free[stopAt]) != free.begin() + long(stopAt))
        ++stopAt;
    ASSERT_LT(stopAt, free.size());
    options.stopIds = {63 == free[stopAt] ? 62 : 63, free[stopAt]};
    if (std::find(free.begin(), free.begin() + long(stopAt), options.stopIds[0]) != free.begin() + long(stopAt))
        options.stopIds.erase(options.stopIds.begin());
    const GenerationResult out = engine::model::generate(model, prompt, options);
    EXPECT_EQ(out.reason, StopReason::StopToken);
    EXPECT_EQ(out.tokens, std::vector<int64_t>(free.begin(), free.begin() + long(stopAt) + 1));
}

TEST(Generation, MaxNewTokensZeroGivesNothing)
{
    LlamaForCausalLM model = randomLlama(tinyLlama("llama"), 1);
    GenerationOptions options;
    options.maxNewTokens = 0;
    int calls = 0;
    const GenerationResult out = engine::model::generate(model, {1, 2, 3}, options, nullptr, [&](int64_t) { ++calls; });
    EXPECT_TRUE(out.tokens.empty());
    EXPECT_EQ(out.reason, StopReason::MaxTokens);
    EXPECT_EQ(calls, 0);
}

// The last token is predicted from position max_position_embeddings - 1; no token is fed beyond it.
TEST(Generation, ContextFullStopsAtMaxPositionEmbeddings)
{
    LlamaConfig config = tinyLlama("llama", false, 2);
    config.maxPositionEmbeddings = 16;
    LlamaForCausalLM model = randomLlama(config, 2);
    GenerationOptions options;
    options.maxNewTokens = 100;
    const std::vector<int64_t> prompt = somePrompt(10, 64);
    const GenerationResult out = engine::model::generate(model, prompt, options);
    EXPECT_EQ(out.reason, StopReason::ContextFull);
    EXPECT_EQ(int64_t(prompt.size() + out.tokens.size()), config.maxPositionEmbeddings + 1);
    // Each token is still the argmax of a full forward over at most max_position_embeddings tokens.
    for (size_t i = 0; i < out.tokens.size(); ++i) {
        const auto prefix = concat(prompt, {out.tokens.begin(), out.tokens.begin() + long(i)});
        ASSERT_LE(int64_t(prefix.size()), config.maxPositionEmbeddings);
        EXPECT_EQ(lastLogits(model, prefix).argmax().item<int64_t>(), out.tokens[i]) << i;
    }
    // A prompt that fills the context gets one token.
    const GenerationResult full = engine::model::generate(model, somePrompt(16, 64), options);
    EXPECT_EQ(full.tokens.size(), 1u);
    EXPECT_EQ(full.reason, StopReason::ContextFull);
    // A limit reached first is reported as such.
    options.maxNewTokens = 3;
    EXPECT_EQ(engine::model::generate(model, prompt, options).reason, StopReason::MaxTokens);
}

TEST(Generation, CancelStops)
{
    LlamaForCausalLM model = randomLlama(tinyLlama("llama"), 2);
    GenerationOptions options;
    options.maxNewTokens = 50;
    engine::JobControl before;
    before.requestCancel();
    GenerationResult out = engine::model::generate(model, {1, 2}, options, &before);
    EXPECT_TRUE(out.tokens.empty());
    EXPECT_EQ(out.reason, StopReason::Cancelled);

    engine::JobControl during;
    int seen = 0;
    out = engine::model::generate(model, {1, 2}, options, &during, [&](int64_t) {
        if (++seen == 3)
            during.requestCancel();
    });
    EXPECT_EQ(out.tokens.size(), 3u);
    EXPECT_EQ(out.reason, StopReason::Cancelled);
}

TEST(Generation, LeavesTrainingModeAndGradientsAlone)
{
    LlamaForCausalLM model = randomLlama(tinyLlama("llama"), 2);
    model->train();
    GenerationOptions options;
    options.maxNewTokens = 3;
    engine::model::generate(model, {1, 2, 3}, options);
    engine::model::scoreLogprobs(model, {1, 2, 3});
    EXPECT_TRUE(model->is_training());
    for (const auto &p : model->parameters())
        EXPECT_FALSE(p.grad().defined());
    model->eval();
    engine::model::generate(model, {1, 2, 3}, options);
    EXPECT_FALSE(model->is_training());
}

TEST(Scoring, EqualsLogSoftmaxOfTheForwardGathered)
{
    uint64_t seed = 50;
    for (const LlamaConfig &config : generationConfigs()) {
        LlamaForCausalLM model = randomLlama(config, ++seed);
        const std::vector<int64_t> ids = somePrompt(13, config.vocabSize, int64_t(seed));
        const std::vector<double> logprobs = engine::model::scoreLogprobs(model, ids);
        ASSERT_EQ(logprobs.size(), ids.size() - 1);
        torch::NoGradGuard noGrad;
        const torch::Tensor logits = model->forward(torch::tensor(ids, torch::kInt64).unsqueeze(0))[0].to(torch::kFloat64);
        for (size_t t = 0; t + 1 < ids.size(); ++t) {
            const torch::Tensor row = logits[long(t)];
            const double expected = (row[ids[t + 1]] - row.exp().sum().log()).item<double>();
            EXPECT_NEAR(logprobs[t], expected, 1e-5) << "position " << t;
            // log p of a position depends only on the tokens before it.
            const double prefixOnly = torch::log_softmax(lastLogits(model, {ids.begin(), ids.begin() + long(t) + 1}).to(torch::kFloat64), -1)[ids[t + 1]].item<double>();
            EXPECT_NEAR(logprobs[t], prefixOnly, 1e-5) << "position " << t;
        }
    }
}

// The last token is only predicted: max_position_embeddings + 1 tokens can be scored, as many as
// generation produces when it fills the context.
TEST(Scoring, UpToMaxPositionEmbeddingsPlusOneTokensAreScored)
{
    LlamaConfig config = tinyLlama("llama");
    config.maxPositionEmbeddings = 12;
    LlamaForCausalLM model = randomLlama(config);
    EXPECT_EQ(engine::model::scoreLogprobs(model, somePrompt(13, 64)).size(), 12u);
    expectError([&] { engine::model::scoreLogprobs(model, somePrompt(14, 64)); }, ErrorKind::InvalidInput,
                "max_position_embeddings = 12");
}

TEST(Generation, BadInputIsRefusedByName)
{
    LlamaForCausalLM model = randomLlama(tinyLlama("llama"));
    expectError([&] { engine::model::scoreLogprobs(model, {5}); }, ErrorKind::InvalidInput, "at least 2 tokens");
    expectError([&] { engine::model::scoreLogprobs(model, {}); }, ErrorKind::InvalidInput, "at least 2 tokens");
    expectError([&] { engine::model::scoreLogprobs(model, {1, 64, 2}); }, ErrorKind::InvalidInput,
                "token id 64 at position 1");
    expectError([&] { engine::model::scoreLogprobs(model, {-1, 3}); }, ErrorKind::InvalidInput, "token id -1");
    expectError([&] { engine::model::scoreLogprobs(model, somePrompt(66, 64)); }, ErrorKind::InvalidInput,
                "max_position_embeddings");

    GenerationOptions ok;
    expectError([&] { engine::model::generate(model, {}, ok); }, ErrorKind::InvalidInput, "prompt");
    expectError([&] { engine::model::generate(model, {3, 99}, ok); }, ErrorKind::InvalidInput, "token id 99");
    expectError([&] { engine::model::generate(model, somePrompt(65, 64), ok); }, ErrorKind::InvalidInput,
                "max_position_embeddings");

    auto bad = [&](auto change, const std::string &needle) {
        GenerationOptions o;
        change(o);
        expectError([&] { o.validate(); }, ErrorKind::InvalidInput, needle);
        expectError([&] { engine::model::generate(model, {1, 2}, o); }, ErrorKind::InvalidInput, needle);
    };
    bad([](GenerationOptions &o) { o.maxNewTokens = -1; }, "max new tokens");
    bad([](GenerationOptions &o) { o.temperature = -0.5; }, "temperature");
    bad([](GenerationOptions &o) { o.temperature = std::numeric_limits<double>::quiet_NaN(); }, "temperature");
    bad([](GenerationOptions &o) { o.temperature = std::numeric_limits<double>::infinity(); }, "temperature");
    bad([](GenerationOptions &o) { o.topK = -2; }, "top-k");
    bad([](GenerationOptions &o) { o.topP = 0.0; }, "top-p");
    bad([](GenerationOptions &o) { o.topP = 1.5; }, "top-p");
    bad([](GenerationOptions &o) { o.topP = std::numeric_limits<double>::quiet_NaN(); }, "top-p");
}
