// Plans of real model configs (tests/data/model/configs), training-aware plans, the lint, and the
// drag-and-revalidate edit.

#include "engine/core/atomicfile.h"
#include "engine/core/format.h"
#include "engine/plan/accelerate.h"
#include "engine/plan/devicemapjson.h"
#include "engine/plan/memorymodel.h"
#include "engine/plan/planner.h"
#include "planfixtures.h"
#include "support/expecterror.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <map>
#include <set>

using namespace engine::plan;
using engine::ErrorKind;
using testing_support::expectError;

namespace {

const std::filesystem::path kConfigs = std::filesystem::path(TUNEBENCH_TEST_DATA) / "model" / "configs";

Planner plannerFor(const char *config) { return Planner(planModelFromPath(kConfigs / config)); }

std::set<std::string> lintIds(const Plan &plan)
{
    std::set<std::string> ids;
    for (const LintFinding &f : plan.lint)
        ids.insert(f.id);
    return ids;
}

PlanSettings chatglmLora()
{
    PlanSettings s;
    s.dtype = "float16";
    s.train = TrainMode::Lora;
    s.loraRank = 32;
    s.loraTargets = {"query_key_value"};
    s.batchSize = 3;
    return s;
}

} // namespace

// ChatGLM-6B in fp16: embedding 130528 x 4096 x 2 = 1,069,285,376 B; a GLMBlock 201,379,840 params =
// 402,759,680 B plus its rotary inv_freq buffer (32 x fp16 = 64 B) = 402,759,744 B; final LayerNorm
// 16,384 B; lm_head tied (0 B). Total 12,346,574,592 B.
// auto = balanced: per_gpu = 12,346,574,592 // 2 + int(1.25 * 402,759,744) = 6,173,287,296 + 503,449,680
// = 6,676,736,976 for GPU 0; GPU 1 keeps 15 GiB. `transformer` does not fit and is split; the embedding is
// placed with its tied lm_head; the largest remaining layer is then a block, so GPU 0's usable size is
// 6,676,736,976 - 402,759,744 = 6,273,977,232: the embedding + 12 blocks (5,902,402,304 B); block 12 would
// make 6,305,162,048. GPU 1 (no reserve) takes blocks 12-27 and the final LayerNorm.
TEST(PlanConfigs, ChatGlmWeightsOnlyMap)
{
    PlanSettings s;
    s.dtype = "float16";
    const Plan plan = plannerFor("chatglm-6b.json").plan(parseMaxMemory("0=15GiB,1=15GiB,cpu=13GiB"), s);
    std::map<std::string, std::string> expected{{"transformer.word_embeddings", "0"}, {"lm_head", "0"},
                                                {"transformer.final_layernorm", "1"}};
    // Emplaced: assigning a literal through [] makes GCC 12 at -O3 warn (-Wrestrict, a false positive).
    for (int i = 0; i < 28; ++i)
        expected.emplace("transformer.layers." + std::to_string(i), i < 12 ? "0" : "1");
    std::map<std::string, std::string> actual;
    for (const Placement &p : plan.deviceMap)
        actual[p.module] = p.device;
    EXPECT_EQ(actual, expected);
    EXPECT_EQ(plan.usageOf("0")->memory.weights, 1'069'285'376LL + 12 * 402'759'744LL);
    EXPECT_EQ(plan.usageOf("1")->memory.weights, 16 * 402'759'744LL + 16'384);
    EXPECT_TRUE(plan.fits);
    EXPECT_EQ(plan.deviceMap.size(), 31u);
}

// The case: LoRA r=32 on query_key_value, batch 3 x 128, two 15 GiB T4s and 13 GiB of RAM.
TEST(PlanConfigs, ChatGlmLoraOnTwoT4s)
{
    auto devices = parseMaxMemory("0=15GiB,1=15GiB,cpu=13GiB");
    for (DeviceSpec &d : devices) {
        if (d.isGpu()) {
            const int64_t budget = d.budget;
            applyGpuPreset(d, *findGpuPreset("T4"));
            d.budget = budget;
        }
    }
    const Plan plan = plannerFor("chatglm-6b.json").plan(devices, chatglmLora());
    EXPECT_TRUE(plan.fits);
    const DeviceUsage &g0 = *plan.usageOf("0");
    const DeviceUsage &g1 = *plan.usageOf("1");
    // Everything on the two GPUs, nothing on cpu or disk.
    EXPECT_EQ(g0.memory.weights + g1.memory.weights, 12'346'574'592LL); // with 28 x 64 B of rotary buffers
    EXPECT_EQ(plan.usageOf("cpu")->memory.weights, 0);
    // LoRA: 28 blocks x 32 x (4096 + 12288) fp32 parameters = 58,720,256 B, each with 4 B gradients and 8 B AdamW.
    const int64_t lora = g0.memory.lora + g1.memory.lora;
    EXPECT_EQ(lora, 28LL * 32 * (4096 + 12288) * 4);
    EXPECT_EQ(g0.memory.overhead, kDefaultGpuOverheadBytes);
    EXPECT_GT(g0.memory.activations + g1.memory.activations, 0);
    // The logits (130528 x 384 tokens, fp32, and log-softmax) sit with lm_head, which follows the embedding.
    EXPECT_EQ(plan.deviceOf("lm_head"), plan.deviceOf("transformer.word_embeddings"));
    EXPECT_GE(plan.usageOf(plan.deviceOf("lm_head"))->memory.logits, 8LL * 384 * 130528);
    for (const DeviceUsage &u : plan.usage) {
        if (u.device.isGpu()) {
            EXPECT_LE(u.peakBytes, u.device.budget) << u.verdict;
        }
    }
    const auto ids = lintIds(plan);
    EXPECT_TRUE(ids.count("clip_grad_norm_across_devices"));
    EXPECT_TRUE(ids.count("optimizer_trainable_only"));
    EXPECT_TRUE(ids.count("no_redispatch"));
    EXPECT_TRUE(ids.count("fp16_training_loss_scaling"));
    EXPECT_TRUE(ids.count("lora_adapters_fp32"));
    EXPECT_FALSE(ids.count("does_not_fit"));
    EXPECT_FALSE(ids.count("trainable_on_disk"));
    for (const Placement &p : plan.deviceMap)
        EXPECT_FALSE(p.explanation.empty());
    EXPECT_NE(plan.peak.device, "");

    // bf16 on T4s is refused by the lint.
    PlanSettings bf16 = chatglmLora();
    bf16.dtype = "bfloat16";
    EXPECT_TRUE(lintIds(plannerFor("chatglm-6b.json").plan(devices, bf16)).count("bf16_unsupported"));
}

TEST(PlanConfigs, LlamaFamily)
{
    PlanSettings s;
    s.dtype = "float16";
    // Llama-2-7B fp16 (13.5 GB) on one 24 GB GPU: fits whole, as Accelerate says {"": 0}. The weights hold
    // model.rotary_emb's inv_freq too: 64 float32 values, counted at 2 B in fp16 as Accelerate counts them.
    const Plan one = plannerFor("llama-2-7b.json").plan(parseMaxMemory("0=24GB,cpu=64GB"), s);
    ASSERT_EQ(one.deviceMap.size(), 1u);
    EXPECT_EQ(one.deviceMap[0].module, "");
    EXPECT_EQ(one.deviceMap[0].device, "0");
    EXPECT_EQ(one.usageOf("0")->memory.weights, 6'738'415'616LL * 2 + 64 * 2);

    // Llama-3-8B on a 10 GiB GPU: GPU 0 keeps room for the largest layer (the 1 GiB embedding or lm_head),
    // so what it holds stays within 10 GiB minus that layer.
    const Plan small = plannerFor("llama-3.1-8b.json").plan(parseMaxMemory("0=10GiB,cpu=30GiB"), s);
    const int64_t embedding = 128256LL * 4096 * 2;
    EXPECT_LE(small.usageOf("0")->memory.weights, (10LL << 30) - embedding);
    EXPECT_GT(small.usageOf("cpu")->memory.weights, 0);
    EXPECT_EQ(small.usageOf("0")->memory.weights + small.usageOf("cpu")->memory.weights, 8'030'261'248LL * 2 + 64 * 2);
    EXPECT_EQ(small.deviceOf("model.embed_tokens"), "0");
    EXPECT_EQ(small.deviceOf("lm_head"), "cpu");
    // The model is split, so the map names the rotary embedding (transformers >= 4.45 wants it in a custom
    // map) where Accelerate's walk puts it: after model.norm, before lm_head.
    EXPECT_EQ(small.deviceOf("model.rotary_emb"), small.deviceOf("model.norm"));
    bool named = false;
    for (const Placement &p : small.deviceMap)
        named = named || p.module == "model.rotary_emb";
    EXPECT_TRUE(named);

    // Mistral-7B balanced over two GPUs splits at layer granularity (MistralDecoderLayer never split).
    const Plan two = plannerFor("mistral-7b-v0.1.json").plan(parseMaxMemory("0=10GiB,1=10GiB,cpu=30GiB"), s);
    EXPECT_EQ(two.noSplit, std::vector<std::string>{"MistralDecoderLayer"});
    for (const Placement &p : two.deviceMap)
        EXPECT_EQ(p.module.find(".self_attn"), std::string::npos) << p.module;
    EXPECT_GT(two.usageOf("0")->memory.weights, 0);
    EXPECT_GT(two.usageOf("1")->memory.weights, 0);
}

// transformers >= 4.45 keeps the rotary embedding at model.rotary_emb (a buffer, no weights). A map from
// Accelerate names it and imports as is; an older map without it still imports, counts its buffer where
// Accelerate's walk would have put it (after model.norm), and says what to add for transformers.
TEST(PlanConfigs, MapsNameTheRotaryEmbedding)
{
    const Planner planner = plannerFor("llama-2-7b.json");
    PlanSettings s;
    s.dtype = "float16";
    const Plan plan = planner.plan(parseMaxMemory("0=10GiB,1=10GiB,cpu=30GiB"), s);
    nlohmann::ordered_json map = deviceMapJson(plan);
    ASSERT_TRUE(map.contains("model.rotary_emb")) << map.dump();
    const Plan back = planner.revalidate(importDeviceMap(map, "map.json", plan.devices, s));
    EXPECT_TRUE(back.warnings.empty()) << back.warnings.front();
    EXPECT_EQ(deviceMapJson(back), map);

    const std::string rotaryDevice = plan.deviceOf("model.rotary_emb");
    map["model.rotary_emb"] = rotaryDevice == "0" ? 1 : 0; // away from model.norm
    const Plan moved = planner.revalidate(importDeviceMap(map, "map.json", plan.devices, s));
    EXPECT_EQ(moved.usageOf(rotaryDevice)->memory.weights, plan.usageOf(rotaryDevice)->memory.weights - 128);

    map.erase("model.rotary_emb");
    const Plan old = planner.revalidate(importDeviceMap(map, "old.json", plan.devices, s));
    ASSERT_EQ(old.warnings.size(), 1u);
    EXPECT_NE(old.warnings[0].find("model.rotary_emb.inv_freq"), std::string::npos) << old.warnings[0];
    EXPECT_NE(old.warnings[0].find("add \"model.rotary_emb\": " + plan.deviceOf("model.norm")), std::string::npos)
        << old.warnings[0];
    for (const DeviceUsage &u : plan.usage)
        EXPECT_EQ(old.usageOf(u.device.key())->memory, u.memory) << u.device.key();
}

// Qwen2-0.5B ties lm_head to model.embed_tokens (151936 x 896, 272 MB in bf16): wherever the
// embedding goes, lm_head goes, and it costs nothing of its own. The weights' totals are worked by hand
// from the configs' sizes, and agree with the parameter counts the model cards give (transformers'
// num_parameters(): Qwen2-0.5B 494,032,768; gpt2 124,439,808).
TEST(PlanConfigs, Qwen2TiedAndGpt2)
{
    const Planner qwen = plannerFor("qwen2-0.5b.json");
    PlanSettings s;
    s.strategy = Strategy::Sequential;
    const Plan plan = qwen.plan(parseMaxMemory("0=400MB,cpu=8GB"), s);
    EXPECT_EQ(plan.deviceOf("lm_head"), plan.deviceOf("model.embed_tokens"));
    EXPECT_EQ(plan.deviceOf("lm_head"), "0");
    const auto totalWeights = [](const Plan &p) {
        int64_t total = 0;
        for (const DeviceUsage &u : p.usage)
            total += u.memory.weights;
        return total;
    };
    {
        // Qwen2: h 896, 24 layers, MLP 4864, 14 heads of 64, 2 key/value heads (k, v 128 wide), vocabulary
        // 151936; q, k and v carry a bias, o_proj and the MLP none; RMSNorms have a weight only.
        const int64_t h = 896, layers = 24, f = 4864, kv = 2 * 64, vocab = 151936;
        const int64_t layer = (h * h + h) + 2 * (h * kv + kv) + h * h + 3 * h * f + 2 * h;
        const int64_t params = vocab * h + layers * layer + h; // embedding, layers, final norm; lm_head tied
        EXPECT_EQ(params, 494'032'768);
        // bf16 (the config's torch_dtype) and, with no --dtype, the rotary inv_freq keeps float32: head_dim 64
        // gives 32 values.
        EXPECT_EQ(totalWeights(plan), params * 2 + 32 * 4);
    }

    const Planner gpt2 = plannerFor("gpt2.json");
    const Plan g = gpt2.plan(parseMaxMemory("0=200MB,cpu=8GB"), s);
    EXPECT_EQ(g.deviceOf("lm_head"), g.deviceOf("transformer.wte"));
    EXPECT_EQ(g.noSplit, std::vector<std::string>{"GPT2Block"});
    {
        // gpt2: n_embd 768, 12 blocks, MLP 4 x 768, vocabulary 50257, 1024 positions; Conv1D and LayerNorm
        // carry a bias. No torch_dtype: float32. Each block's attention also keeps its causal mask (bool,
        // 1024 x 1024, counted at 1/8 byte an element as Accelerate's dtype_byte_size counts it, so that
        // the budgets mean what they mean to Accelerate) and masked_bias (one float32).
        const int64_t h = 768, layers = 12, f = 4 * 768, vocab = 50257, positions = 1024;
        const int64_t block = 2 * (2 * h) + (h * 3 * h + 3 * h) + (h * h + h) + (h * f + f) + (f * h + h);
        const int64_t params = vocab * h + positions * h + layers * block + 2 * h;
        EXPECT_EQ(params, 124'439'808);
        EXPECT_EQ(totalWeights(g), params * 4 + layers * (positions * positions / 8 + 4));
    }
    // Moving the tied lm_head away from wte by hand is flagged.
    const Plan moved = gpt2.move(g, "lm_head", g.deviceOf("transformer.wte") == "0" ? "cpu" : "0");
    EXPECT_TRUE(lintIds(moved).count("tied_parameters_split"));
}

// Training memory on the tiny fixture, worked by hand (float32, full fine-tuning: weights 4 B, gradients
// 4 B, AdamW 8 B per parameter; the fixture's lm_head is a 25-element vector, so it has no logits).
TEST(PlanTraining, FullFineTuningComponents)
{
    PlanSettings s;
    s.train = TrainMode::Full;
    s.batchSize = 1;
    s.sequenceLength = 1;
    const Plan plan = Planner(plan_fixtures::tinyModel()).plan(parseMaxMemory("cpu=1GB"), s);
    const DeviceUsage &cpu = *plan.usageOf("cpu");
    // Optimizer step: weights + gradients + moments + AdamW's temporaries for the largest tensor (8 x 50 B),
    // and the process's own runtime memory on the CPU.
    EXPECT_EQ(cpu.optimizerBytes, 1420 + 1420 + 2840 + 400 + kDefaultCpuOverheadBytes);
    EXPECT_EQ(cpu.memory.overhead, kDefaultCpuOverheadBytes);
    EXPECT_EQ(plan.usageOf("cpu")->peakPhase, Phase::OptimizerStep);
    EXPECT_EQ(cpu.memory.weights, 1420);
    EXPECT_EQ(cpu.memory.gradients, 1420);
    EXPECT_EQ(cpu.memory.optimizer, 2840);
}

// The forward pass's saved activations of each mode, from the config's sizes by the formulas of
// docs/memory-estimate.md (bf16: e = 2; B = batch x sequence tokens; S = batch x heads x seq^2):
//   a LoRA block (q_proj and v_proj adapted): the two RMSNorms' fp32 input, its square and their rstd
//     2 x (8Bh + 4B); q, k, v 3eBh; the softmax (4 + e)S; the MLP's gate, its SiLU and up 3eBf; each
//     adapter A's output 4Br and its input in fp32 4Bh, or with dropout the dropped input and the noise 8Bh;
//   a checkpointed block: its input eBh only (the rest is rebuilt in its backward);
//   a fully trained block: the LLaMA block formula 16Bh + 8eBh + 8B + (4 + e)S + 4eBf;
// plus the final norm: 8Bh + 4B, and with full training also its normed output and the head's input 2eBh.
// The figures come from the forward phase: forwardBytes less the weights, adapters, optimizer state, the
// loss's logits (8BV: fp32 logits and log-softmax) and the GPU's runtime overhead.
TEST(PlanTraining, CheckpointingAndLoraShrinkActivations)
{
    const nlohmann::json config = nlohmann::json::parse(engine::readFile(kConfigs / "llama-2-7b.json"));
    const int64_t h = config.at("hidden_size"), f = config.at("intermediate_size"), L = config.at("num_hidden_layers"),
                  heads = config.at("num_attention_heads"), V = config.at("vocab_size");
    ASSERT_EQ(config.at("num_key_value_heads").get<int64_t>(), heads) << "the formulas below assume no GQA";
    const int64_t batch = 4, seq = 512, r = 16, e = 2;
    const int64_t B = batch * seq, S = batch * heads * seq * seq;

    const Planner llama = plannerFor("llama-2-7b.json");
    PlanSettings s;
    s.dtype = "bfloat16";
    s.train = TrainMode::Lora;
    s.loraRank = r;
    s.batchSize = batch;
    s.sequenceLength = seq;
    ASSERT_GT(s.loraDropout, 0.0);
    // Room for everything on GPU 0 in every mode, so that one device holds the whole model's activations.
    const auto devices = parseMaxMemory("0=400GB,cpu=64GB");
    const auto forwardActivations = [&](const Plan &plan) {
        for (const Placement &p : plan.deviceMap)
            EXPECT_EQ(p.device, "0") << p.module;
        const DeviceUsage &u = *plan.usageOf("0");
        return u.forwardBytes - u.memory.weights - u.memory.lora - u.memory.optimizer - 8 * B * V - u.device.overheadBytes;
    };
    const Plan lora = llama.plan(devices, s);
    s.checkpointing = true;
    const Plan ckpt = llama.plan(devices, s);
    s.checkpointing = false;
    s.loraDropout = 0;
    const Plan loraNoDropout = llama.plan(devices, s);
    s.train = TrainMode::Full;
    const Plan full = llama.plan(devices, s);

    const int64_t finalNorm = 8 * B * h + 4 * B;
    const int64_t frozenBlock = 2 * (8 * B * h + 4 * B) + 3 * e * B * h + (4 + e) * S + 3 * e * B * f;
    const int64_t loraBlock = frozenBlock + 2 * (8 * B * h + 4 * B * r);
    const int64_t loraNoDropoutBlock = frozenBlock + 2 * (4 * B * h + 4 * B * r);
    const int64_t fullBlock = 16 * B * h + 8 * e * B * h + 8 * B + (4 + e) * S + 4 * e * B * f;
    EXPECT_EQ(forwardActivations(ckpt), L * e * B * h + finalNorm);
    EXPECT_EQ(forwardActivations(lora), L * loraBlock + finalNorm);
    EXPECT_EQ(forwardActivations(loraNoDropout), L * loraNoDropoutBlock + finalNorm);
    EXPECT_EQ(forwardActivations(full), L * fullBlock + finalNorm + 2 * e * B * h);
    // What the name claims, on those figures: checkpointing keeps a small fraction of the saved set, and
    // LoRA's frozen Linears keep less than fully trained ones (without dropout: with it, each adapter's
    // fp32 noise and dropped input outweigh what the frozen Linears save).
    EXPECT_LT(forwardActivations(ckpt) * 10, forwardActivations(lora));
    EXPECT_LT(forwardActivations(loraNoDropout), forwardActivations(full));
    EXPECT_LT(forwardActivations(loraNoDropout), forwardActivations(lora));
}

// The LLaMA block formula written out: B*h*(16 + 6e) + 2*e*B*g*d + 8*B + (4 + e')*S + 4*e*B*f (memorymodel.cpp;
// 16*B*h of it the two fp32 norms' inputs and their squares, measured in test_memorymeasure.cpp).
TEST(PlanTraining, LlamaBlockFormula)
{
    const int64_t b = 2, s = 16, h = 64, a = 4, f = 172;
    const int64_t B = b * s, S = b * a * s * s;
    // No GQA (g = a, g*d = h): B*h*(16 + 8e).
    EXPECT_EQ(llamaBlockSavedBytes(b, s, h, a, a, f, 2), B * h * 32 + 8 * B + 6 * S + 8 * B * f);
    EXPECT_EQ(llamaBlockSavedBytes(b, s, h, a, a, f, 4), B * h * 48 + 8 * B + 4 * S + 16 * B * f);
    // One kv head of size d = 16: k and v keep 2*e*B*16 instead of 2*e*B*h.
    EXPECT_EQ(llamaBlockSavedBytes(b, s, h, a, 1, f, 2), B * h * 28 + 4 * B * 16 + 8 * B + 6 * S + 8 * B * f);
}

// Qwen3's q_norm and k_norm normalize each head: they keep what an RMSNorm keeps over q's a*d and k's g*d
// elements per token (a and g rstd values), not over the hidden size (test_plan_memory measures it).
TEST(PlanTraining, Qwen3QkNormsKeepPerHeadActivations)
{
    const int64_t h = 64, a = 8, g = 2, d = 16, b = 2, s = 32; // a*d = 128 = 2h
    const nlohmann::json config = {{"model_type", "qwen3"},      {"vocab_size", 100},   {"hidden_size", h},
                                   {"intermediate_size", 96},    {"num_hidden_layers", 2}, {"num_attention_heads", a},
                                   {"num_key_value_heads", g},   {"head_dim", d},       {"torch_dtype", "float32"}};
    const PlanModel model = planModelFromConfig(config, "qwen3");
    const FlatTree flat = flatten(model.tree);
    PlanSettings settings;
    settings.train = TrainMode::Full;
    settings.batchSize = b;
    settings.sequenceLength = s;
    const NodeCosts costs = computeCosts(flat, model, settings, 4, noSplitFlags(flat, model.tree.noSplitClasses));
    const int64_t B = b * s, e = 4;
    // fp32 input, its square, the normalized output (the weight trains), rstd per head.
    EXPECT_EQ(costs.saved[flat.find("model.layers.1.self_attn.q_norm")], (8 + e) * B * a * d + 4 * B * a);
    EXPECT_EQ(costs.saved[flat.find("model.layers.1.self_attn.k_norm")], (8 + e) * B * g * d + 4 * B * g);
    EXPECT_EQ(costs.saved[flat.find("model.layers.1.input_layernorm")], (8 + e) * B * h + 4 * B);
    // LoRA's default targets are the LLaMA family's.
    EXPECT_EQ(defaultLoraTargets("qwen3"), (std::vector<std::string>{"q_proj", "v_proj"}));
}

// Dragging a layer: the breakdown and lint follow at once; moving it back restores the plan's sums.
TEST(PlanEdit, MoveAndRevalidate)
{
    const Planner planner = plannerFor("llama-2-7b.json");
    PlanSettings s;
    s.dtype = "float16";
    s.train = TrainMode::Lora;
    const Plan plan = planner.plan(parseMaxMemory("0=10GiB,1=10GiB,cpu=30GiB"), s);
    const std::string from = plan.deviceOf("model.layers.3");
    const std::string to = from == "0" ? "1" : "0";
    const Plan moved = planner.move(plan, "model.layers.3", to);
    EXPECT_EQ(moved.deviceOf("model.layers.3"), to);
    const int64_t layer = 202'383'360LL * 2; // q,k,v,o 4 x 4096^2 + 3 x 4096 x 11008 + 2 x 4096
    EXPECT_EQ(moved.usageOf(to)->memory.weights, plan.usageOf(to)->memory.weights + layer);
    EXPECT_EQ(moved.usageOf(from)->memory.weights, plan.usageOf(from)->memory.weights - layer);
    const Plan back = planner.move(moved, "model.layers.3", from);
    EXPECT_EQ(back.usageOf(from)->memory, plan.usageOf(from)->memory);
    EXPECT_EQ(back.usageOf(to)->memory, plan.usageOf(to)->memory);
    // The map stays in coarsest form.
    std::set<std::string> modules;
    for (const Placement &p : back.deviceMap)
        modules.insert(p.module);
    EXPECT_TRUE(modules.count("model.layers.3"));
    // Placements for the dispatched loader use torch device strings.
    for (const auto &[module, device] : back.placements())
        EXPECT_TRUE(device == "cuda:0" || device == "cuda:1" || device == "cpu" || device == "disk") << device;

    expectError([&] { planner.move(plan, "model.layers.99", "0"); }, ErrorKind::InvalidInput, "no module");
    expectError([&] { planner.move(plan, "model.layers.3", "7"); }, ErrorKind::InvalidInput, "no device");
}

TEST(PlanLint, Pitfalls)
{
    const Planner planner = plannerFor("llama-2-7b.json");
    PlanSettings s;
    s.dtype = "float16";
    s.train = TrainMode::Lora;
    s.strategy = Strategy::BalancedLow0;
    s.quantization = "nf4";
    s.dataParallel = true;
    const Plan plan = planner.plan(parseMaxMemory("0=6GiB,1=6GiB,cpu=30GiB"), s);
    const auto ids = lintIds(plan);
    for (const char *id : {"balanced_low_0_training", "quantized_offload_training", "data_parallel_dispatched",
                           "labels_device", "optimizer_trainable_only"})
        EXPECT_TRUE(ids.count(id)) << id;
    for (const LintFinding &f : plan.lint) {
        EXPECT_FALSE(f.message.empty()) << f.id;
        EXPECT_FALSE(f.fix.empty()) << f.id;
        EXPECT_TRUE(f.severity == "error" || f.severity == "warning") << f.id;
    }
    // Full fine-tuning that does not fit: the planner keeps the trainable layers off disk (on the CPU, which
    // then does not fit, naming the budget it would need); a layer moved to disk by hand is an error.
    PlanSettings full;
    full.train = TrainMode::Full;
    full.dtype = "float16";
    const Plan spill = planner.plan(parseMaxMemory("0=4GiB,cpu=4GiB"), full);
    EXPECT_EQ(spill.deviceOf("model.layers.31"), "cpu");
    EXPECT_FALSE(lintIds(spill).count("trainable_on_disk"));
    EXPECT_FALSE(spill.fits);
    EXPECT_TRUE(lintIds(spill).count("does_not_fit"));
    const DeviceUsage &cpu = *spill.usageOf("cpu");
    bool named = false;
    for (const std::string &w : spill.warnings)
        named = named || w.find("needs at least " + engine::formatBytes(cpu.peakBytes)) != std::string::npos;
    EXPECT_TRUE(named) << "the warning names the smallest cpu budget that would hold the plan";
    const Plan onDisk = planner.move(spill, "model.layers.31", "disk");
    EXPECT_TRUE(lintIds(onDisk).count("trainable_on_disk"));
    EXPECT_FALSE(onDisk.fits);
}

TEST(PlanBadInput, SettingsAndTargets)
{
    const Planner planner = plannerFor("chatglm-6b.json");
    const auto devices = parseMaxMemory("0=15GiB,cpu=13GiB");
    PlanSettings s = chatglmLora();
    s.loraTargets = {"q_proj"};
    expectError([&] { planner.plan(devices, s); }, ErrorKind::InvalidInput, "\"q_proj\" names no Linear");
    s = chatglmLora();
    s.batchSize = 0;
    expectError([&] { planner.plan(devices, s); }, ErrorKind::InvalidInput, "--batch-size");
    s = chatglmLora();
    s.dtype = "int4";
    expectError([&] { planner.plan(devices, s); }, ErrorKind::InvalidInput, "--dtype");
}
