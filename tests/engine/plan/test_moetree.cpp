// Mixture-of-experts module trees (mixtral, qwen3_moe) as transformers 5 registers them, their sizes against
// hand-derived counts of the published models, the config keys refused by name, and the mapping of older
// per-expert checkpoint names onto the fused expert parameters.

#include "engine/core/error.h"
#include "engine/model/moetree.h"
#include "engine/plan/accelerate.h"
#include "engine/plan/memorymodel.h"
#include "engine/plan/planner.h"

#include "support/expecterror.h"
#include "support/safetensorsheaders.h"
#include "support/tempdir.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <fstream>
#include <map>
#include <sstream>

namespace {

using engine::model::ExpertPart;
using engine::model::legacyExpertTensor;
using engine::model::ModuleNode;
using engine::model::ModuleTree;
using engine::model::moduleTreeFromConfig;
using nlohmann::json;
using testing_support::expectError;

std::string shapeText(const std::vector<int64_t> &shape)
{
    std::string text = "[";
    for (size_t i = 0; i < shape.size(); ++i) {
        if (i)
            text += ',';
        text += std::to_string(shape[i]);
    }
    return text + "]";
}

// One line per module ("path Class", " noSplit"), then its parameters and buffers, in registration order.
void dump(const ModuleNode &node, std::ostringstream &out)
{
    out << node.name << ' ' << node.className << (node.noSplit ? " noSplit" : "") << '\n';
    for (const auto &p : node.parameters)
        out << "  " << p.name << ' ' << shapeText(p.shape) << ' ' << p.dtype << '\n';
    for (const auto &b : node.buffers)
        out << "  buffer " << b.name << ' ' << shapeText(b.shape) << ' ' << b.dtype << '\n';
    for (const ModuleNode &child : node.children)
        dump(child, out);
}

std::string dump(const ModuleTree &tree)
{
    std::ostringstream out;
    dump(tree.root, out);
    return out.str();
}

json tinyMixtral()
{
    return {{"model_type", "mixtral"},   {"vocab_size", 16},        {"hidden_size", 8},     {"intermediate_size", 12},
            {"num_hidden_layers", 1},    {"num_attention_heads", 2}, {"num_key_value_heads", 1},
            {"num_local_experts", 4},    {"num_experts_per_tok", 2}, {"torch_dtype", "bfloat16"}};
}

json tinyQwen3Moe()
{
    return {{"model_type", "qwen3_moe"},  {"vocab_size", 16},          {"hidden_size", 8},
            {"intermediate_size", 20},    {"moe_intermediate_size", 6}, {"num_hidden_layers", 2},
            {"num_attention_heads", 2},   {"num_key_value_heads", 1},  {"head_dim", 4},
            {"num_experts", 4},           {"num_experts_per_tok", 2},  {"decoder_sparse_step", 2},
            {"torch_dtype", "float32"}};
}

// Hand-derived parameter count of a Mixtral-shaped model: V vocab, h hidden, a heads, g kv heads (head h / a),
// f expert width, E experts, L layers, untied.
int64_t mixtralCount(int64_t V, int64_t h, int64_t a, int64_t g, int64_t f, int64_t E, int64_t L)
{
    const int64_t d = h / a;
    const int64_t attention = h * a * d + 2 * h * g * d + a * d * h;
    const int64_t layer = attention + E * h /*router*/ + E * 3 * h * f /*experts*/ + 2 * h /*norms*/;
    return 2 * V * h + L * layer + h;
}

} // namespace

TEST(MoeModuleTree, TinyMixtralRegistersRouterThenExpertsUnderMlp)
{
    const ModuleTree tree = moduleTreeFromConfig(tinyMixtral(), "cfg.json");
    EXPECT_EQ(dump(tree), R"( MixtralForCausalLM
model MixtralModel
model.embed_tokens Embedding
  weight [16,8] bfloat16
model.layers ModuleList
model.layers.0 MixtralDecoderLayer noSplit
model.layers.0.self_attn MixtralAttention
model.layers.0.self_attn.q_proj Linear
  weight [8,8] bfloat16
model.layers.0.self_attn.k_proj Linear
  weight [4,8] bfloat16
model.layers.0.self_attn.v_proj Linear
  weight [4,8] bfloat16
model.layers.0.self_attn.o_proj Linear
  weight [8,8] bfloat16
model.layers.0.mlp MixtralSparseMoeBlock
model.layers.0.mlp.gate MixtralTopKRouter
  weight [4,8] bfloat16
model.layers.0.mlp.experts MixtralExperts
  gate_up_proj [4,24,8] bfloat16
  down_proj [4,8,12] bfloat16
model.layers.0.input_layernorm MixtralRMSNorm
  weight [8] bfloat16
model.layers.0.post_attention_layernorm MixtralRMSNorm
  weight [8] bfloat16
model.norm MixtralRMSNorm
  weight [8] bfloat16
model.rotary_emb MixtralRotaryEmbedding
  buffer inv_freq [2] float32
lm_head Linear
  weight [16,8] bfloat16
)");
    EXPECT_EQ(tree.modelType, "mixtral");
    EXPECT_EQ(tree.noSplitClasses, std::vector<std::string>{"MixtralDecoderLayer"});
    EXPECT_TRUE(tree.tiedParameters.empty());
    EXPECT_EQ(tree.parameterCount(), mixtralCount(16, 8, 2, 1, 12, 4, 1));
}

// Qwen3MoeSparseMoeBlock registers experts before gate; a layer that is not sparse (decoder_sparse_step 2 makes
// layer 0 dense) keeps Qwen3MoeMLP at intermediate_size; the attention is Qwen3's with q/k norms over head_dim.
TEST(MoeModuleTree, TinyQwen3MoeRegistersExpertsThenGateAndDenseLayers)
{
    const ModuleTree tree = moduleTreeFromConfig(tinyQwen3Moe(), "cfg.json");
    EXPECT_EQ(dump(tree), R"( Qwen3MoeForCausalLM
model Qwen3MoeModel
model.embed_tokens Embedding
  weight [16,8] float32
model.layers ModuleList
model.layers.0 Qwen3MoeDecoderLayer noSplit
model.layers.0.self_attn Qwen3MoeAttention
model.layers.0.self_attn.q_proj Linear
  weight [8,8] float32
model.layers.0.self_attn.k_proj Linear
  weight [4,8] float32
model.layers.0.self_attn.v_proj Linear
  weight [4,8] float32
model.layers.0.self_attn.o_proj Linear
  weight [8,8] float32
model.layers.0.self_attn.q_norm Qwen3MoeRMSNorm
  weight [4] float32
model.layers.0.self_attn.k_norm Qwen3MoeRMSNorm
  weight [4] float32
model.layers.0.mlp Qwen3MoeMLP
model.layers.0.mlp.gate_proj Linear
  weight [20,8] float32
model.layers.0.mlp.up_proj Linear
  weight [20,8] float32
model.layers.0.mlp.down_proj Linear
  weight [8,20] float32
model.layers.0.input_layernorm Qwen3MoeRMSNorm
  weight [8] float32
model.layers.0.post_attention_layernorm Qwen3MoeRMSNorm
  weight [8] float32
model.layers.1 Qwen3MoeDecoderLayer noSplit
model.layers.1.self_attn Qwen3MoeAttention
model.layers.1.self_attn.q_proj Linear
  weight [8,8] float32
model.layers.1.self_attn.k_proj Linear
  weight [4,8] float32
model.layers.1.self_attn.v_proj Linear
  weight [4,8] float32
model.layers.1.self_attn.o_proj Linear
  weight [8,8] float32
model.layers.1.self_attn.q_norm Qwen3MoeRMSNorm
  weight [4] float32
model.layers.1.self_attn.k_norm Qwen3MoeRMSNorm
  weight [4] float32
model.layers.1.mlp Qwen3MoeSparseMoeBlock
model.layers.1.mlp.experts Qwen3MoeExperts
  gate_up_proj [4,12,8] float32
  down_proj [4,8,6] float32
model.layers.1.mlp.gate Qwen3MoeTopKRouter
  weight [4,8] float32
model.layers.1.input_layernorm Qwen3MoeRMSNorm
  weight [8] float32
model.layers.1.post_attention_layernorm Qwen3MoeRMSNorm
  weight [8] float32
model.norm Qwen3MoeRMSNorm
  weight [8] float32
model.rotary_emb Qwen3MoeRotaryEmbedding
  buffer inv_freq [2] float32
lm_head Linear
  weight [16,8] float32
)");
    EXPECT_EQ(tree.noSplitClasses, std::vector<std::string>{"Qwen3MoeDecoderLayer"});

    // mlp_only_layers makes a layer dense whatever decoder_sparse_step says.
    json config = tinyQwen3Moe();
    config["decoder_sparse_step"] = 1;
    config["mlp_only_layers"] = {1};
    const ModuleTree only = moduleTreeFromConfig(config, "cfg.json");
    EXPECT_EQ(only.find("model.layers.0.mlp")->className, "Qwen3MoeSparseMoeBlock");
    EXPECT_EQ(only.find("model.layers.1.mlp")->className, "Qwen3MoeMLP");
    // num_experts 0: every layer dense.
    config["num_experts"] = 0;
    config["mlp_only_layers"] = json::array();
    const ModuleTree dense = moduleTreeFromConfig(config, "cfg.json");
    EXPECT_EQ(dense.find("model.layers.0.mlp")->className, "Qwen3MoeMLP");
}

// Mixtral-8x7B-v0.1's config.json (resources/plan-catalog/mixtral-8x7b.json), entry by entry:
//   embed_tokens, lm_head  32000 x 4096                 = 131,072,000 each
//   q_proj, o_proj         4096 x 4096                  = 16,777,216 each
//   k_proj, v_proj         1024 x 4096 (8 kv heads)     = 4,194,304 each
//   mlp.gate (router)      8 x 4096                     = 32,768
//   mlp.experts            8 x (2 x 14336 + 14336) x 4096 = 1,409,286,144
//   two norms              2 x 4096
//   layer                  1,451,270,144; x 32 layers = 46,440,644,608
//   total                  46,702,792,704 (published: 46.7B)
TEST(MoeModuleTree, Mixtral8x7bHasItsPublishedSizeEntryByEntry)
{
    const json config = {{"model_type", "mixtral"},       {"vocab_size", 32000},          {"hidden_size", 4096},
                         {"intermediate_size", 14336},    {"num_hidden_layers", 32},      {"num_attention_heads", 32},
                         {"num_key_value_heads", 8},      {"num_local_experts", 8},       {"num_experts_per_tok", 2},
                         {"max_position_embeddings", 32768}, {"rope_theta", 1e6},         {"sliding_window", nullptr},
                         {"tie_word_embeddings", false},  {"torch_dtype", "bfloat16"}};
    const ModuleTree tree = moduleTreeFromConfig(config, "mixtral.json");
    EXPECT_EQ(tree.find("model.embed_tokens")->parameterCount(), 131'072'000);
    EXPECT_EQ(tree.find("lm_head")->parameterCount(), 131'072'000);
    EXPECT_EQ(tree.find("model.layers.0.self_attn.q_proj")->parameterCount(), 16'777'216);
    EXPECT_EQ(tree.find("model.layers.0.self_attn.k_proj")->parameterCount(), 4'194'304);
    EXPECT_EQ(tree.find("model.layers.0.self_attn")->parameterCount(), 41'943'040);
    EXPECT_EQ(tree.find("model.layers.0.mlp.gate")->parameterCount(), 32'768);
    EXPECT_EQ(tree.find("model.layers.0.mlp.experts")->parameterCount(), 1'409'286'144);
    EXPECT_EQ(tree.find("model.layers.31")->parameterCount(), 1'451'270'144);
    EXPECT_EQ(tree.find("model.layers")->children.size(), 32u);
    EXPECT_EQ(tree.parameterCount(), 46'702'792'704);
    EXPECT_EQ(tree.parameterCount(), mixtralCount(32000, 4096, 32, 8, 14336, 8, 32));
    EXPECT_EQ(tree.parameterBytes(), 2 * 46'702'792'704);
    // Mixtral has no sliding window unless its config sets one; then every layer slides.
    const engine::model::MoeConfig windowless = engine::model::MoeConfig::fromJson(config, "mixtral.json");
    EXPECT_EQ(windowless.dense.attentionWindow(5), 0);
    json sliding = config;
    sliding["sliding_window"] = 4096;
    EXPECT_EQ(engine::model::MoeConfig::fromJson(sliding, "mixtral.json").dense.attentionWindow(31), 4096);
}

// Qwen3-30B-A3B's config.json (resources/plan-catalog/qwen3-30b-a3b.json), entry by entry:
//   embed_tokens, lm_head  151936 x 2048                   = 311,164,928 each
//   q_proj, o_proj         (32 x 128) x 2048               = 8,388,608 each
//   k_proj, v_proj         (4 x 128) x 2048                = 1,048,576 each
//   q_norm, k_norm         128 each
//   mlp.experts            128 x (2 x 768 + 768) x 2048    = 603,979,776
//   mlp.gate (router)      128 x 2048                      = 262,144
//   two norms              2 x 2048
//   layer                  623,120,640; x 48 layers = 29,909,790,720
//   total                  30,532,122,624 (published: 30.5B)
TEST(MoeModuleTree, Qwen3_30bA3bHasItsPublishedSizeEntryByEntry)
{
    const json config = {{"model_type", "qwen3_moe"},     {"vocab_size", 151936},      {"hidden_size", 2048},
                         {"intermediate_size", 6144},     {"moe_intermediate_size", 768}, {"num_hidden_layers", 48},
                         {"num_attention_heads", 32},     {"num_key_value_heads", 4},  {"head_dim", 128},
                         {"num_experts", 128},            {"num_experts_per_tok", 8},  {"decoder_sparse_step", 1},
                         {"mlp_only_layers", json::array()}, {"use_sliding_window", false}, {"sliding_window", nullptr},
                         {"max_window_layers", 48},       {"tie_word_embeddings", false}, {"torch_dtype", "bfloat16"}};
    const ModuleTree tree = moduleTreeFromConfig(config, "qwen3moe.json");
    EXPECT_EQ(tree.find("model.embed_tokens")->parameterCount(), 311'164'928);
    EXPECT_EQ(tree.find("model.layers.0.self_attn.q_proj")->parameterCount(), 8'388'608);
    EXPECT_EQ(tree.find("model.layers.0.self_attn.k_proj")->parameterCount(), 1'048'576);
    EXPECT_EQ(tree.find("model.layers.0.self_attn.q_norm")->parameterCount(), 128);
    EXPECT_EQ(tree.find("model.layers.0.self_attn")->parameterCount(), 18'874'624);
    EXPECT_EQ(tree.find("model.layers.0.mlp.experts")->parameterCount(), 603'979'776);
    EXPECT_EQ(tree.find("model.layers.0.mlp.gate")->parameterCount(), 262'144);
    EXPECT_EQ(tree.find("model.layers.47")->parameterCount(), 623'120'640);
    EXPECT_EQ(tree.parameterCount(), 30'532'122'624);
    // Without head_dim, Qwen3MoeConfig has none: the attention uses hidden / heads (not Qwen3's 128).
    json noHeadDim = config;
    noHeadDim.erase("head_dim");
    EXPECT_EQ(moduleTreeFromConfig(noHeadDim, "qwen3moe.json").find("model.layers.0.self_attn.q_norm")->parameterCount(), 64);
}

TEST(MoeModuleTree, RefusesWhatItDoesNotLayOutByName)
{
    const auto refused = [](json config, const std::string &field, const std::string &word) {
        SCOPED_TRACE(field);
        expectError([&] { moduleTreeFromConfig(config, "cfg.json"); }, engine::ErrorKind::InvalidInput,
                    "'" + field + "'");
        expectError([&] { moduleTreeFromConfig(config, "cfg.json"); }, engine::ErrorKind::InvalidInput, word);
    };
    json sliding = tinyQwen3Moe();
    sliding["use_sliding_window"] = true;
    refused(sliding, "use_sliding_window", "sliding-window");
    json shared = tinyQwen3Moe();
    shared["shared_expert_intermediate_size"] = 64;
    refused(shared, "shared_expert_intermediate_size", "shared expert");
    json jitter = tinyMixtral();
    jitter["router_jitter_noise"] = 0.01;
    refused(jitter, "router_jitter_noise", "jitter");
    json topk = tinyMixtral();
    topk["num_experts_per_tok"] = 5;
    refused(topk, "num_experts_per_tok", "5");
    json noExperts = tinyMixtral();
    noExperts["num_local_experts"] = 0;
    refused(noExperts, "num_local_experts", "0");
    json layers = tinyQwen3Moe();
    layers["mlp_only_layers"] = {2};
    refused(layers, "mlp_only_layers", "0..1");
    json bias = tinyMixtral();
    bias["attention_bias"] = true;
    refused(bias, "attention_bias", "no biases");
    json rope = tinyMixtral();
    rope["rope_scaling"] = {{"rope_type", "yarn"}, {"factor", 4.0}};
    refused(rope, "rope_scaling.rope_type", "yarn");
}

// transformers 5's conversion mapping: Mixtral's w1 (gate) and w3 (up) are concatenated on dim 1 into
// gate_up_proj, w2 stacked into down_proj, block_sparse_moe.gate renamed; Qwen3-MoE's per-expert
// gate_proj / up_proj / down_proj likewise.
TEST(MoeModuleTree, OlderPerExpertCheckpointNamesMapToTheFusedParameters)
{
    auto m = legacyExpertTensor("mixtral", "model.layers.3.block_sparse_moe.experts.7.w1.weight");
    ASSERT_TRUE(m);
    EXPECT_EQ(m->parameter, "model.layers.3.mlp.experts.gate_up_proj");
    EXPECT_EQ(m->expert, 7);
    EXPECT_EQ(m->part, ExpertPart::Gate);
    m = legacyExpertTensor("mixtral", "model.layers.3.block_sparse_moe.experts.0.w3.weight");
    ASSERT_TRUE(m);
    EXPECT_EQ(m->part, ExpertPart::Up);
    m = legacyExpertTensor("mixtral", "model.layers.3.block_sparse_moe.experts.0.w2.weight");
    ASSERT_TRUE(m);
    EXPECT_EQ(m->parameter, "model.layers.3.mlp.experts.down_proj");
    EXPECT_EQ(m->part, ExpertPart::Down);
    m = legacyExpertTensor("mixtral", "model.layers.3.block_sparse_moe.gate.weight");
    ASSERT_TRUE(m);
    EXPECT_EQ(m->parameter, "model.layers.3.mlp.gate.weight");
    EXPECT_EQ(m->part, ExpertPart::Whole);
    m = legacyExpertTensor("qwen3_moe", "model.layers.0.mlp.experts.127.up_proj.weight");
    ASSERT_TRUE(m);
    EXPECT_EQ(m->parameter, "model.layers.0.mlp.experts.gate_up_proj");
    EXPECT_EQ(m->expert, 127);
    EXPECT_EQ(m->part, ExpertPart::Up);
    EXPECT_FALSE(legacyExpertTensor("qwen3_moe", "model.layers.0.mlp.gate.weight"));
    EXPECT_FALSE(legacyExpertTensor("qwen3_moe", "model.layers.0.mlp.gate_proj.weight")); // a dense layer
    EXPECT_FALSE(legacyExpertTensor("mixtral", "model.layers.0.mlp.experts.gate_up_proj"));
    EXPECT_FALSE(legacyExpertTensor("llama", "model.layers.3.block_sparse_moe.experts.7.w1.weight"));
}

namespace {

using namespace engine::plan;

std::map<std::string, std::string> mapOf(const Plan &plan)
{
    std::map<std::string, std::string> out;
    for (const Placement &p : plan.deviceMap)
        out[p.module] = p.device;
    return out;
}

json twoLayerMixtral()
{
    json config = tinyMixtral();
    config["num_hidden_layers"] = 2;
    return config;
}

} // namespace

// Accelerate's walk over the tiny Mixtral in bfloat16, by hand (docs: FORMATS.md, "Accelerate's device map"):
//   embed_tokens 16 x 8 x 2 B = 256 B; each MixtralDecoderLayer (never split) = attention 192 + router 32 +
//   experts 4 x 24 x 8 + 4 x 8 x 12 = 1152 + norms 16 = 1392 parameters = 2784 B; norm 16 B; rotary_emb's
//   float32 inv_freq [2] 8 B; lm_head 256 B.
//   GPU 0 (main) keeps the largest layer (2784 B) in reserve: 3500 - 2784 = 716 B usable. model (5848 B) is
//   split; embed_tokens fits (256 B); layers is split; layers.0 would make 3040 B > 716: GPU 1.
//   GPU 1 (not main, no reserve, 3500 B): layers.0 (2784 B); layers.1 would make 5568 B: cpu.
//   cpu (main): the largest remaining layer is layers.1 (2784 B), 10000 - 2784 = 7216 B usable: layers.1,
//   norm, rotary_emb and lm_head.
TEST(PlanMoe, WeightsOnlyMapFollowsAccelerateWithExpertsInsideTheirLayer)
{
    const PlanModel model = planModelFromConfig(twoLayerMixtral(), "mixtral.json");
    PlanSettings settings;
    settings.strategy = Strategy::Sequential;
    const Plan plan = Planner(model).plan(parseMaxMemory("0=3500,1=3500,cpu=10000"), settings);
    EXPECT_EQ(mapOf(plan), (std::map<std::string, std::string>{{"model.embed_tokens", "0"},
                                                                {"model.layers.0", "1"},
                                                                {"model.layers.1", "cpu"},
                                                                {"model.norm", "cpu"},
                                                                {"model.rotary_emb", "cpu"},
                                                                {"lm_head", "cpu"}}));
    EXPECT_EQ(plan.noSplit, std::vector<std::string>{"MixtralDecoderLayer"});
    EXPECT_EQ(plan.usageOf("0")->memory.weights, 256);
    EXPECT_EQ(plan.usageOf("1")->memory.weights, 2784);
    EXPECT_EQ(plan.usageOf("cpu")->memory.weights, 2784 + 16 + 8 + 256);
}

// A folder saved before transformers 5 stores Mixtral's experts one by one (block_sparse_moe.experts.N.w1/w2/w3)
// and the router as block_sparse_moe.gate: their dtypes reach the fused parameters of the tree.
TEST(PlanMoe, PerExpertCheckpointNamesGiveTheFusedParametersTheirDtype)
{
    testing_support::TempDir dir("moe-legacy");
    json config = tinyMixtral();
    config["torch_dtype"] = "float32";
    std::ofstream(dir / "config.json") << config.dump();
    std::vector<testing_support::HeaderTensor> tensors = {{"model.embed_tokens.weight", {16, 8}, "BF16"},
                                                          {"model.layers.0.block_sparse_moe.gate.weight", {4, 8}, "BF16"}};
    for (int e = 0; e < 4; ++e) {
        const std::string prefix = "model.layers.0.block_sparse_moe.experts." + std::to_string(e);
        tensors.push_back({prefix + ".w1.weight", {12, 8}, "BF16"});
        tensors.push_back({prefix + ".w2.weight", {8, 12}, "F16"});
        tensors.push_back({prefix + ".w3.weight", {12, 8}, "BF16"});
    }
    testing_support::writeSafetensorsHeaders(dir / "model.safetensors", tensors);
    const PlanModel model = planModelFromPath(dir.path());
    const auto dtypeOf = [&](const std::string &module, const std::string &parameter) {
        for (const auto &p : model.tree.find(module)->parameters) {
            if (p.name == parameter)
                return p.dtype;
        }
        return std::string("missing");
    };
    EXPECT_EQ(dtypeOf("model.layers.0.mlp.experts", "gate_up_proj"), "bfloat16");
    EXPECT_EQ(dtypeOf("model.layers.0.mlp.experts", "down_proj"), "float16");
    EXPECT_EQ(dtypeOf("model.layers.0.mlp.gate", "weight"), "bfloat16");
    EXPECT_EQ(dtypeOf("model.layers.0.self_attn.q_proj", "weight"), "float32"); // not in the checkpoint
    EXPECT_TRUE(model.warnings.empty()) << model.warnings.front();

    // One expert's up half missing: the fused parameter keeps config.json's dtype, and the plan says why.
    tensors.erase(tensors.end() - 1);
    testing_support::writeSafetensorsHeaders(dir / "model.safetensors", tensors);
    const PlanModel partial = planModelFromPath(dir.path());
    ASSERT_EQ(partial.warnings.size(), 1u);
    EXPECT_NE(partial.warnings[0].find("model.layers.0.mlp.experts.gate_up_proj (7 of 8 expected)"), std::string::npos)
        << partial.warnings[0];
}

// Training memory of a tiny Mixtral, by hand (docs/memory-estimate.md, "Mixture of experts"), bf16 (e = 2), b = 2
// sequences of s = 8 tokens (B = 16), hidden h = 8, E = 4 experts of width f = 12, top k = 2:
//   every expert's weights train in full fine-tuning: gate_up_proj 4 x 24 x 8 = 768 and down_proj 4 x 8 x 12 = 384
//     parameters, 4 B of gradient and 8 + 4 B of AdamW and master weights each;
//   the router keeps its input eBh (trained), its fp32 softmax over the experts 4BE and the top-k indices 8Bk;
//   the experts see kB = 32 token rows together: the gate_up input ekBh and output 2ekBf, the SiLU output ekBf,
//     the down input ekBf, the down output ekBh (kept by the product with the trained routing weights) and
//     16 B of indices per row.
// Under LoRA (q_proj, v_proj) the experts and router are frozen: no gradients, and only what backward to their input
// needs: the gate_up output and SiLU output 3ekBf, the indices, the router's softmax and top-k.
TEST(PlanMoe, TrainingCountsEveryExpertAndTheRoutedShareOfTokens)
{
    const PlanModel model = planModelFromConfig(twoLayerMixtral(), "mixtral.json");
    EXPECT_EQ(model.arch.experts, 4);
    EXPECT_EQ(model.arch.expertsPerToken, 2);
    EXPECT_EQ(model.arch.intermediate, 12);
    const FlatTree flat = flatten(model.tree);
    const std::vector<char> noSplit = noSplitFlags(flat, model.tree.noSplitClasses);
    PlanSettings settings;
    settings.train = TrainMode::Full;
    settings.batchSize = 2;
    settings.sequenceLength = 8;
    const int64_t e = 2, B = 16, h = 8, E = 4, f = 12, k = 2, kB = k * B;

    const NodeCosts full = computeCosts(flat, model, settings, 2, noSplit);
    const int experts = flat.find("model.layers.1.mlp.experts");
    const int router = flat.find("model.layers.1.mlp.gate");
    EXPECT_EQ(full.saved[router], e * B * h + 4 * B * E + 8 * B * k);
    EXPECT_EQ(full.saved[experts], e * kB * h + 2 * e * kB * f + e * kB * f + e * kB * f + e * kB * h + 16 * kB);
    int64_t expertGradients = 0, expertOptimizer = 0;
    for (int i = experts; i < flat.nodes[experts].end; ++i) {
        expertGradients += full.gradients[i];
        expertOptimizer += full.optimizer[i];
    }
    EXPECT_EQ(expertGradients, 4 * (768 + 384));
    EXPECT_EQ(expertOptimizer, 12 * (768 + 384));
    int64_t allGradients = 0;
    for (const int64_t g : full.gradients)
        allGradients += g;
    EXPECT_EQ(allGradients, 4 * model.tree.parameterCount());

    settings.train = TrainMode::Lora;
    const NodeCosts lora = computeCosts(flat, model, settings, 2, noSplit);
    EXPECT_EQ(lora.saved[router], 4 * B * E + 8 * B * k);
    EXPECT_EQ(lora.saved[experts], 3 * e * kB * f + 16 * kB);
    EXPECT_EQ(lora.gradients[flat.find("model.layers.1.mlp.experts.gate_up_proj")], 0);

    // The router is no Linear: PEFT cannot adapt it, so "gate" names nothing to adapt in Mixtral.
    settings.loraTargets = {"gate"};
    expectError([&] { computeCosts(flat, model, settings, 2, noSplit); }, engine::ErrorKind::InvalidInput, "\"gate\"");
}

// Mixtral-8x7B (bfloat16 as stored) over two 40 GiB GPUs, sequential, by Accelerate's rules worked by hand:
// a MixtralDecoderLayer (never split, its 8 experts inside) is 1,451,270,144 x 2 = 2,902,540,288 B, the largest
// layer, so GPU 0 (main) keeps it in reserve: 42,949,672,960 - 2,902,540,288 = 40,047,132,672 B usable; the
// embedding (262,144,000 B) and 13 layers fit (37,995,167,744 B), a 14th would not. GPU 1 (no reserve) takes
// 14 layers (40,635,564,032 B of 42,949,672,960). The last 5 layers, the norm, the rotary buffer and lm_head go
// to the CPU.
TEST(PlanMoe, Mixtral8x7bSplitsBetweenWholeLayersAsAccelerateDoes)
{
    const json config = {{"model_type", "mixtral"},       {"vocab_size", 32000},     {"hidden_size", 4096},
                         {"intermediate_size", 14336},    {"num_hidden_layers", 32}, {"num_attention_heads", 32},
                         {"num_key_value_heads", 8},      {"num_local_experts", 8},  {"num_experts_per_tok", 2},
                         {"rope_theta", 1e6},             {"sliding_window", nullptr}, {"torch_dtype", "bfloat16"}};
    PlanSettings settings;
    settings.strategy = Strategy::Sequential;
    const Plan plan = Planner(planModelFromConfig(config, "mixtral.json")).plan(parseMaxMemory("0=40GiB,1=40GiB,cpu=200GiB"), settings);
    std::map<std::string, std::string> expected = {{"model.embed_tokens", "0"}, {"model.norm", "cpu"},
                                                   {"model.rotary_emb", "cpu"}, {"lm_head", "cpu"}};
    for (int i = 0; i < 32; ++i)
        expected["model.layers." + std::to_string(i)] = i < 13 ? "0" : i < 27 ? "1" : "cpu";
    EXPECT_EQ(mapOf(plan), expected);
    EXPECT_EQ(plan.usageOf("0")->memory.weights, 262'144'000LL + 13 * 2'902'540'288LL);
    EXPECT_EQ(plan.usageOf("1")->memory.weights, 14 * 2'902'540'288LL);
    EXPECT_EQ(plan.usageOf("cpu")->memory.weights, 5 * 2'902'540'288LL + 4096 * 2 + 64 * 4 + 262'144'000LL);
}

// Qwen3-MoE with a dense layer (decoder_sparse_step 2: layer 0 dense of intermediate_size 20, layer 1 experts of
// moe_intermediate_size 6), float32 (e = 4), b = 1, s = 4 (B = 4), h = 8, E = 4, k = 2, full fine-tuning: the dense
// MLP keeps its own width (gate_proj: input eBh + gate output and SiLU 2eB x 20; up_proj eB x 20; down_proj's input
// eB x 20), the experts theirs (k x B = 8 rows of width 6: inputs and down outputs 2ekBh, gate_up output, SiLU output
// and down input 4ekBf, indices 16kB). A checkpoint with per-expert names fills the fused ones.
TEST(PlanMoe, Qwen3MoeDenseLayersKeepTheirOwnWidth)
{
    const PlanModel model = planModelFromConfig(tinyQwen3Moe(), "qwen3moe.json");
    EXPECT_EQ(model.arch.experts, 4);
    const FlatTree flat = flatten(model.tree);
    PlanSettings settings;
    settings.train = TrainMode::Full;
    settings.batchSize = 1;
    settings.sequenceLength = 4;
    const NodeCosts c = computeCosts(flat, model, settings, 4, noSplitFlags(flat, model.tree.noSplitClasses));
    const int64_t e = 4, B = 4, h = 8, kB = 8, f = 6;
    EXPECT_EQ(c.saved[flat.find("model.layers.0.mlp.gate_proj")], e * B * h + 2 * e * B * 20);
    EXPECT_EQ(c.saved[flat.find("model.layers.0.mlp.up_proj")], e * B * 20);
    EXPECT_EQ(c.saved[flat.find("model.layers.0.mlp.down_proj")], e * B * 20);
    EXPECT_EQ(c.saved[flat.find("model.layers.1.mlp.experts")], 2 * e * kB * h + 4 * e * kB * f + 16 * kB);
    EXPECT_EQ(c.saved[flat.find("model.layers.1.mlp.gate")], e * B * h + 4 * B * 4 + 8 * B * 2);

    testing_support::TempDir dir("qwen3moe-legacy");
    std::ofstream(dir / "config.json") << tinyQwen3Moe().dump();
    std::vector<testing_support::HeaderTensor> tensors;
    for (int x = 0; x < 4; ++x) {
        const std::string prefix = "model.layers.1.mlp.experts." + std::to_string(x);
        tensors.push_back({prefix + ".gate_proj.weight", {6, 8}, "BF16"});
        tensors.push_back({prefix + ".up_proj.weight", {6, 8}, "BF16"});
        tensors.push_back({prefix + ".down_proj.weight", {8, 6}, "BF16"});
    }
    testing_support::writeSafetensorsHeaders(dir / "model.safetensors", tensors);
    const PlanModel loaded = planModelFromPath(dir.path());
    for (const auto &p : loaded.tree.find("model.layers.1.mlp.experts")->parameters)
        EXPECT_EQ(p.dtype, "bfloat16") << p.name;
    EXPECT_TRUE(loaded.warnings.empty()) << loaded.warnings.front();
}
