// Sliding-window attention in the plan: each layer's window comes from LlamaConfig::attentionWindow (through
// ArchInfo::attentionWindows), bounds the KV cache of a long generation, and does not shrink training's scores
// (tunebench's engine and transformers' eager attention mask a full T x T product). Every number worked by hand.

#include "engine/plan/devicemapjson.h"
#include "engine/plan/memorymodel.h"
#include "engine/plan/planner.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace {

using namespace engine::plan;
using nlohmann::json;

// Mistral-shaped: hidden 32, 4 heads of 8, 2 kv heads, 2 layers, float32.
json tinyMistral(const json &window)
{
    return {{"model_type", "mistral"},   {"vocab_size", 64},       {"hidden_size", 32},
            {"intermediate_size", 48},   {"num_hidden_layers", 2}, {"num_attention_heads", 4},
            {"num_key_value_heads", 2},  {"sliding_window", window}, {"torch_dtype", "float32"}};
}

PlanSettings lora(int64_t batch, int64_t tokens)
{
    PlanSettings s;
    s.train = TrainMode::Lora;
    s.batchSize = batch;
    s.sequenceLength = tokens;
    return s;
}

} // namespace

// b = 2 sequences of T = 64 tokens, e = 4 (float32):
//   scores per layer 4 x b x heads x T x T = 4 x 2 x 4 x 64 x 64 = 131,072 B, window or not;
//   KV cache per layer 2 x b x tokens x kv heads x head_dim x e: full 2 x 2 x 64 x 2 x 8 x 4 = 16,384 B,
//   window 16: 2 x 2 x 16 x 2 x 8 x 4 = 4,096 B; a window of 128 > T keeps T tokens.
TEST(PlanAttention, AWindowBelowTheSequenceBoundsTheKvCacheNotTheScores)
{
    const auto devices = parseMaxMemory("cpu=1GiB");
    const Plan full = Planner(planModelFromConfig(tinyMistral(nullptr), "full.json")).plan(devices, lora(2, 64));
    const Plan local = Planner(planModelFromConfig(tinyMistral(16), "local.json")).plan(devices, lora(2, 64));
    const Plan wide = Planner(planModelFromConfig(tinyMistral(128), "wide.json")).plan(devices, lora(2, 64));

    EXPECT_EQ(full.attention, (std::vector<AttentionSpan>{{0, 1, 0, 131'072, 64, 16'384}}));
    EXPECT_EQ(local.attention, (std::vector<AttentionSpan>{{0, 1, 16, 131'072, 16, 4'096}}));
    EXPECT_EQ(wide.attention, (std::vector<AttentionSpan>{{0, 1, 128, 131'072, 64, 16'384}}));
    // The engine's additive mask leaves every score in place: training memory is the same with the window.
    EXPECT_EQ(local.usageOf("cpu")->forwardBytes, full.usageOf("cpu")->forwardBytes);
    EXPECT_EQ(local.usageOf("cpu")->backwardBytes, full.usageOf("cpu")->backwardBytes);

    // bfloat16: e = 2, the softmax kept in fp32 and its bf16 copy: (4 + 2) x 2 x 4 x 64 x 64; the cache halves.
    PlanSettings bf16 = lora(2, 64);
    bf16.dtype = "bfloat16";
    const Plan half = Planner(planModelFromConfig(tinyMistral(16), "local.json")).plan(devices, bf16);
    EXPECT_EQ(half.attention, (std::vector<AttentionSpan>{{0, 1, 16, 196'608, 16, 2'048}}));

    // The plan's JSON carries the same numbers (a full layer's window is null).
    const json attention = json::parse(planJson(local).dump()).at("attention");
    EXPECT_EQ(attention.at("implementation"), "eager");
    EXPECT_EQ(attention.at("layers").at(0).at("window"), 16);
    EXPECT_EQ(attention.at("layers").at(0).at("kv_cache_per_layer"), 4'096);
    EXPECT_TRUE(json::parse(planJson(full).dump()).at("attention").at("layers").at(0).at("window").is_null());
}

// Layers with different windows (Gemma's local and global layers declare theirs through the same
// attentionWindow): one span per run, each with its own cache. Windows {0, 16, 16, 0}, b = 1, T = 32, 8 heads,
// 1 kv head of 16, e = 2: scores (4 + 2) x 1 x 8 x 32 x 32 = 49,152 B per layer; cache 2 x 1 x tokens x 1 x 16 x 2
// = 64 B per token: 2,048 B full, 1,024 B at window 16.
TEST(PlanAttention, EachRunOfLayersKeepsItsOwnWindow)
{
    ArchInfo arch;
    arch.family = "llama";
    arch.layers = 4;
    arch.heads = 8;
    arch.kvHeads = 1;
    arch.headDim = 16;
    arch.attentionWindows = {0, 16, 16, 0};
    PlanSettings s;
    s.batchSize = 1;
    s.sequenceLength = 32;
    EXPECT_EQ(attentionSpans(arch, s, 2), (std::vector<AttentionSpan>{{0, 0, 0, 49'152, 32, 2'048},
                                                                      {1, 2, 16, 49'152, 16, 1'024},
                                                                      {3, 3, 0, 49'152, 32, 2'048}}));
    arch.heads = 0; // sizes unknown (a model planned from tensor names without a config)
    EXPECT_TRUE(attentionSpans(arch, s, 2).empty());
}
