// Phi-3's fused projections in the training-memory estimate: qkv_proj and gate_up_proj keep what q_proj,
// k_proj, v_proj and gate_proj, up_proj keep between them in a LLaMA layer of the same sizes (the same
// tensors, as views of one output), and the plan reads the MLP's width from the config, not from a
// gate_proj Phi-3 does not have.

#include "engine/plan/accelerate.h"
#include "engine/plan/memorymodel.h"
#include "engine/plan/planmodel.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

using namespace engine::plan;
using nlohmann::json;

namespace {

json tinyConfig(const char *modelType)
{
    return {{"model_type", modelType},     {"vocab_size", 64},      {"hidden_size", 32},
            {"intermediate_size", 48},     {"num_hidden_layers", 2}, {"num_attention_heads", 4},
            {"num_key_value_heads", 2},    {"torch_dtype", "float32"}, {"tie_word_embeddings", false},
            {"bos_token_id", 1},           {"eos_token_id", 2}};
}

NodeCosts fullTrainingCosts(const PlanModel &model, const FlatTree &flat)
{
    PlanSettings settings;
    settings.train = TrainMode::Full;
    settings.batchSize = 2;
    settings.sequenceLength = 16;
    return computeCosts(flat, model, settings, 4, noSplitFlags(flat, model.tree.noSplitClasses));
}

} // namespace

TEST(PlanFusedProjections, Phi3KeepsWhatTheSeparateProjectionsKeep)
{
    const PlanModel phi3 = planModelFromConfig(tinyConfig("phi3"), "phi3.json");
    const PlanModel llama = planModelFromConfig(tinyConfig("llama"), "llama.json");
    EXPECT_EQ(phi3.arch.intermediate, 48);
    EXPECT_EQ(phi3.arch.headDim, 8);
    const FlatTree phiFlat = flatten(phi3.tree);
    const FlatTree llamaFlat = flatten(llama.tree);
    const NodeCosts phi = fullTrainingCosts(phi3, phiFlat);
    const NodeCosts ref = fullTrainingCosts(llama, llamaFlat);
    const auto saved = [](const NodeCosts &c, const FlatTree &flat, const std::string &name) {
        const int node = flat.find(name);
        EXPECT_GE(node, 0) << name;
        return node >= 0 ? c.saved[static_cast<size_t>(node)] : -1;
    };
    const std::string attn = "model.layers.1.self_attn.", mlp = "model.layers.1.mlp.";
    EXPECT_EQ(saved(phi, phiFlat, attn + "qkv_proj"),
              saved(ref, llamaFlat, attn + "q_proj") + saved(ref, llamaFlat, attn + "k_proj") +
                  saved(ref, llamaFlat, attn + "v_proj"));
    EXPECT_EQ(saved(phi, phiFlat, mlp + "gate_up_proj"), saved(ref, llamaFlat, mlp + "gate_proj") + saved(ref, llamaFlat, mlp + "up_proj"));

    // By hand, e = 4, B = b x T = 32 token rows, h = 32, heads a = 4 of d = 8, g = 2, f = 48,
    // S = b x a x T x T = 2048 scores: qkv_proj keeps its input eBh, its output eB(a + 2g)d and the fp32 softmax
    // 4S; gate_up_proj its input eBh, its output eB2f and silu(gate) eBf.
    const int64_t e = 4, B = 32, h = 32, d = 8, a = 4, g = 2, f = 48, S = 2 * 4 * 16 * 16;
    EXPECT_EQ(saved(phi, phiFlat, attn + "qkv_proj"), e * B * h + e * B * (a + 2 * g) * d + 4 * S);
    EXPECT_EQ(saved(phi, phiFlat, mlp + "gate_up_proj"), e * B * h + e * B * 2 * f + e * B * f);
}

// A LoRA plan of Phi-3 without targets adapts qkv_proj, as PEFT does for phi3 (q_proj and v_proj do not exist).
TEST(PlanFusedProjections, Phi3sDefaultLoraTargetIsItsFusedQkv)
{
    EXPECT_EQ(defaultLoraTargets("phi3"), std::vector<std::string>{"qkv_proj"});
    const PlanModel phi3 = planModelFromConfig(tinyConfig("phi3"), "phi3.json");
    const FlatTree flat = flatten(phi3.tree);
    PlanSettings settings;
    settings.train = TrainMode::Lora;
    settings.batchSize = 2;
    settings.sequenceLength = 16;
    const NodeCosts costs = computeCosts(flat, phi3, settings, 4, noSplitFlags(flat, phi3.tree.noSplitClasses));
    int targets = 0;
    for (size_t i = 0; i < flat.nodes.size(); ++i) {
        if (costs.loraTarget[i]) {
            EXPECT_EQ(flat.nodes[i].localName, "qkv_proj");
            ++targets;
        }
    }
    EXPECT_EQ(targets, 2) << "one per layer";
}

// Gemma 2's soft-capping keeps tanh's output: e*S more per layer's attention (the scores), e*B*V more for
// the logits, by hand against the same config without soft-capping.
TEST(PlanSoftcap, Gemma2KeepsTheTanhOfItsScoresAndLogits)
{
    json capped = {{"model_type", "gemma2"},        {"vocab_size", 64},        {"hidden_size", 32},
                   {"intermediate_size", 48},        {"num_hidden_layers", 2},  {"num_attention_heads", 4},
                   {"num_key_value_heads", 2},       {"head_dim", 8},           {"torch_dtype", "float32"},
                   {"bos_token_id", 2},              {"eos_token_id", 1},       {"pad_token_id", 0},
                   {"attn_logit_softcapping", 50.0}, {"final_logit_softcapping", 30.0}, {"sliding_window", 4}};
    json plain = capped;
    plain["attn_logit_softcapping"] = nullptr;
    plain["final_logit_softcapping"] = nullptr;
    const PlanModel withCaps = planModelFromConfig(capped, "capped.json");
    const PlanModel without = planModelFromConfig(plain, "plain.json");
    EXPECT_TRUE(withCaps.arch.attentionSoftcap && withCaps.arch.logitSoftcap);
    EXPECT_FALSE(without.arch.attentionSoftcap || without.arch.logitSoftcap);
    const FlatTree flat = flatten(withCaps.tree);
    const NodeCosts a = fullTrainingCosts(withCaps, flat);
    const NodeCosts b = fullTrainingCosts(without, flatten(without.tree));
    const int64_t e = 4, B = 2 * 16, V = 64, S = 2 * 4 * 16 * 16;
    int64_t savedA = 0, savedB = 0, logitsA = 0, logitsB = 0;
    for (size_t i = 0; i < flat.nodes.size(); ++i) {
        savedA += a.saved[i];
        savedB += b.saved[i];
        logitsA += a.logitsForward[i];
        logitsB += b.logitsForward[i];
    }
    EXPECT_EQ(savedA - savedB, 2 * e * S) << "two layers";
    EXPECT_EQ(logitsA - logitsB, e * B * V);
}
