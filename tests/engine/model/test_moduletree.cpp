#include "engine/core/error.h"
#include "engine/model/llamaconfig.h"
#include "engine/model/moduletree.h"

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include <unistd.h>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

using engine::model::ModuleNode;
using engine::model::ModuleTree;
using engine::model::moduleTreeFromConfig;
using engine::model::moduleTreeFromFolder;
using nlohmann::json;

namespace {

const std::filesystem::path kConfigs = std::filesystem::path(TUNEBENCH_TEST_DATA) / "model" / "configs";

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

// One line per module ("path Class", " noSplit" when set), then one per direct parameter
// ("  name [shape]", " tied TARGET" when tied), then one per direct buffer ("  buffer name [shape]
// dtype", " non-persistent" when so), in tree order.
void dump(const ModuleNode &node, std::ostringstream &out)
{
    out << node.name << ' ' << node.className << (node.noSplit ? " noSplit" : "") << '\n';
    for (const auto &p : node.parameters)
        out << "  " << p.name << ' ' << shapeText(p.shape) << (p.tiedTo.empty() ? "" : " tied " + p.tiedTo) << '\n';
    for (const auto &b : node.buffers)
        out << "  buffer " << b.name << ' ' << shapeText(b.shape) << ' ' << b.dtype << (b.persistent ? "" : " non-persistent")
            << '\n';
    for (const ModuleNode &child : node.children)
        dump(child, out);
}

std::string dump(const ModuleTree &tree)
{
    std::ostringstream out;
    dump(tree.root, out);
    return out.str();
}

void expectAllDtypes(const ModuleTree &tree, const std::string &dtype)
{
    EXPECT_EQ(tree.dtype, dtype);
    for (const auto &p : tree.namedParameters(true))
        EXPECT_EQ(p.info.dtype, dtype) << p.name;
}

// Expects moduleTreeFromConfig to throw InvalidInput naming cfg.json, the field and `word`.
void expectRefused(const json &config, const std::string &field, const std::string &word)
{
    try {
        moduleTreeFromConfig(config, "cfg.json");
        FAIL() << "accepted " << config.dump();
    } catch (const engine::Error &e) {
        const std::string message = e.what();
        EXPECT_EQ(e.kind(), engine::ErrorKind::InvalidInput) << message;
        EXPECT_NE(message.find("cfg.json"), std::string::npos) << message;
        EXPECT_NE(message.find("'" + field + "'"), std::string::npos) << message;
        EXPECT_NE(message.find(word), std::string::npos) << message;
    }
}

json tinyLlama()
{
    return {{"model_type", "llama"},        {"vocab_size", 16},          {"hidden_size", 8},
            {"intermediate_size", 12},      {"num_hidden_layers", 2},    {"num_attention_heads", 2},
            {"num_key_value_heads", 1},     {"torch_dtype", "float16"}};
}

} // namespace

TEST(ModuleTree, TinyLlamaFullListing)
{
    const ModuleTree tree = moduleTreeFromConfig(tinyLlama(), "cfg.json");
    EXPECT_EQ(dump(tree), R"( LlamaForCausalLM
model LlamaModel
model.embed_tokens Embedding
  weight [16,8]
model.layers ModuleList
model.layers.0 LlamaDecoderLayer noSplit
model.layers.0.self_attn LlamaAttention
model.layers.0.self_attn.q_proj Linear
  weight [8,8]
model.layers.0.self_attn.k_proj Linear
  weight [4,8]
model.layers.0.self_attn.v_proj Linear
  weight [4,8]
model.layers.0.self_attn.o_proj Linear
  weight [8,8]
model.layers.0.mlp LlamaMLP
model.layers.0.mlp.gate_proj Linear
  weight [12,8]
model.layers.0.mlp.up_proj Linear
  weight [12,8]
model.layers.0.mlp.down_proj Linear
  weight [8,12]
model.layers.0.input_layernorm LlamaRMSNorm
  weight [8]
model.layers.0.post_attention_layernorm LlamaRMSNorm
  weight [8]
model.layers.1 LlamaDecoderLayer noSplit
model.layers.1.self_attn LlamaAttention
model.layers.1.self_attn.q_proj Linear
  weight [8,8]
model.layers.1.self_attn.k_proj Linear
  weight [4,8]
model.layers.1.self_attn.v_proj Linear
  weight [4,8]
model.layers.1.self_attn.o_proj Linear
  weight [8,8]
model.layers.1.mlp LlamaMLP
model.layers.1.mlp.gate_proj Linear
  weight [12,8]
model.layers.1.mlp.up_proj Linear
  weight [12,8]
model.layers.1.mlp.down_proj Linear
  weight [8,12]
model.layers.1.input_layernorm LlamaRMSNorm
  weight [8]
model.layers.1.post_attention_layernorm LlamaRMSNorm
  weight [8]
model.norm LlamaRMSNorm
  weight [8]
model.rotary_emb LlamaRotaryEmbedding
  buffer inv_freq [2] float32 non-persistent
lm_head Linear
  weight [16,8]
)");
    expectAllDtypes(tree, "float16");
    EXPECT_EQ(tree.modelType, "llama");
    EXPECT_EQ(tree.noSplitClasses, std::vector<std::string>{"LlamaDecoderLayer"});
    EXPECT_TRUE(tree.tiedParameters.empty());
    // 128 + 2 × (64 + 32 + 32 + 64 + 3 × 96 + 16) + 8 + 128; buffers are no parameters
    EXPECT_EQ(tree.parameterCount(), 128 + 2 * 496 + 8 + 128);
    EXPECT_EQ(tree.parameterBytes(), 2 * tree.parameterCount());
    // The module a device map may name though no checkpoint tensor lies under it.
    EXPECT_EQ(tree.bufferOnlyModules(), std::vector<std::string>{"model.rotary_emb"});
    EXPECT_TRUE(tree.find("model.rotary_emb")->holdsOnlyBuffers());
    EXPECT_FALSE(tree.find("model")->holdsOnlyBuffers());
    EXPECT_FALSE(tree.find("model.norm")->holdsOnlyBuffers()) << "no buffers at all";
}

TEST(ModuleTree, TinyQwen2FullListingWithQkvBiasesAndTiedHead)
{
    json config = tinyLlama();
    config["model_type"] = "qwen2";
    config["num_hidden_layers"] = 1;
    config["tie_word_embeddings"] = true;
    config["torch_dtype"] = "bfloat16";
    config["use_sliding_window"] = false;
    const ModuleTree tree = moduleTreeFromConfig(config, "cfg.json");
    EXPECT_EQ(dump(tree), R"( Qwen2ForCausalLM
model Qwen2Model
model.embed_tokens Embedding
  weight [16,8]
model.layers ModuleList
model.layers.0 Qwen2DecoderLayer noSplit
model.layers.0.self_attn Qwen2Attention
model.layers.0.self_attn.q_proj Linear
  weight [8,8]
  bias [8]
model.layers.0.self_attn.k_proj Linear
  weight [4,8]
  bias [4]
model.layers.0.self_attn.v_proj Linear
  weight [4,8]
  bias [4]
model.layers.0.self_attn.o_proj Linear
  weight [8,8]
model.layers.0.mlp Qwen2MLP
model.layers.0.mlp.gate_proj Linear
  weight [12,8]
model.layers.0.mlp.up_proj Linear
  weight [12,8]
model.layers.0.mlp.down_proj Linear
  weight [8,12]
model.layers.0.input_layernorm Qwen2RMSNorm
  weight [8]
model.layers.0.post_attention_layernorm Qwen2RMSNorm
  weight [8]
model.norm Qwen2RMSNorm
  weight [8]
model.rotary_emb Qwen2RotaryEmbedding
  buffer inv_freq [2] float32 non-persistent
lm_head Linear
  weight [16,8] tied model.embed_tokens.weight
)");
    expectAllDtypes(tree, "bfloat16");
    EXPECT_EQ(tree.noSplitClasses, std::vector<std::string>{"Qwen2DecoderLayer"});
    EXPECT_EQ(tree.tiedParameters,
              (std::vector<std::vector<std::string>>{{"lm_head.weight", "model.embed_tokens.weight"}}));
    EXPECT_EQ(tree.parameterCount(), 128 + (72 + 36 + 36 + 64 + 3 * 96 + 16) + 8);
    EXPECT_EQ(tree.root.parameterCount(true), tree.parameterCount() + 128) << "the tied head, counted again";
    EXPECT_EQ(tree.find("lm_head")->parameterCount(false), 0);
    EXPECT_EQ(tree.find("lm_head")->parameterCount(), 128);
    // As PyTorch's named_parameters(): the tied head weight is not listed twice.
    const auto named = tree.namedParameters();
    EXPECT_EQ(named.back().name, "model.norm.weight");
    EXPECT_EQ(tree.namedParameters(true).back().name, "lm_head.weight");
}

TEST(ModuleTree, TinyMistralFullListingWithHeadDim)
{
    json config = tinyLlama();
    config["model_type"] = "mistral";
    config["num_hidden_layers"] = 1;
    config["head_dim"] = 6;  // 2 heads × 6 != hidden 8
    config["sliding_window"] = 4;
    config.erase("torch_dtype");
    const ModuleTree tree = moduleTreeFromConfig(config, "cfg.json");
    EXPECT_EQ(dump(tree), R"( MistralForCausalLM
model MistralModel
model.embed_tokens Embedding
  weight [16,8]
model.layers ModuleList
model.layers.0 MistralDecoderLayer noSplit
model.layers.0.self_attn MistralAttention
model.layers.0.self_attn.q_proj Linear
  weight [12,8]
model.layers.0.self_attn.k_proj Linear
  weight [6,8]
model.layers.0.self_attn.v_proj Linear
  weight [6,8]
model.layers.0.self_attn.o_proj Linear
  weight [8,12]
model.layers.0.mlp MistralMLP
model.layers.0.mlp.gate_proj Linear
  weight [12,8]
model.layers.0.mlp.up_proj Linear
  weight [12,8]
model.layers.0.mlp.down_proj Linear
  weight [8,12]
model.layers.0.input_layernorm MistralRMSNorm
  weight [8]
model.layers.0.post_attention_layernorm MistralRMSNorm
  weight [8]
model.norm MistralRMSNorm
  weight [8]
model.rotary_emb MistralRotaryEmbedding
  buffer inv_freq [3] float32 non-persistent
lm_head Linear
  weight [16,8]
)");
    expectAllDtypes(tree, "float32");
    EXPECT_EQ(tree.noSplitClasses, std::vector<std::string>{"MistralDecoderLayer"});
    EXPECT_EQ(tree.parameterBytes(), 4 * tree.parameterCount());
}

TEST(ModuleTree, TinyChatGlmFullListing)
{
    const json config = {{"model_type", "chatglm"},    {"vocab_size", 16},         {"hidden_size", 8},
                         {"num_layers", 1},            {"num_attention_heads", 2}, {"inner_hidden_size", 20},
                         {"torch_dtype", "float16"},   {"position_encoding_2d", true}};
    const ModuleTree tree = moduleTreeFromConfig(config, "cfg.json");
    EXPECT_EQ(dump(tree), R"( ChatGLMForConditionalGeneration
transformer ChatGLMModel
transformer.word_embeddings Embedding
  weight [16,8]
transformer.layers ModuleList
transformer.layers.0 GLMBlock noSplit
transformer.layers.0.input_layernorm LayerNorm
  weight [8]
  bias [8]
transformer.layers.0.attention SelfAttention
transformer.layers.0.attention.rotary_emb RotaryEmbedding
  buffer inv_freq [1] float16
transformer.layers.0.attention.query_key_value Linear
  weight [24,8]
  bias [24]
transformer.layers.0.attention.dense Linear
  weight [8,8]
  bias [8]
transformer.layers.0.post_attention_layernorm LayerNorm
  weight [8]
  bias [8]
transformer.layers.0.mlp GLU
transformer.layers.0.mlp.dense_h_to_4h Linear
  weight [20,8]
  bias [20]
transformer.layers.0.mlp.dense_4h_to_h Linear
  weight [8,20]
  bias [8]
transformer.final_layernorm LayerNorm
  weight [8]
  bias [8]
lm_head Linear
  weight [16,8] tied transformer.word_embeddings.weight
)");
    expectAllDtypes(tree, "float16");
    EXPECT_EQ(tree.noSplitClasses, std::vector<std::string>{"GLMBlock"});
    EXPECT_EQ(tree.tiedParameters,
              (std::vector<std::vector<std::string>>{{"lm_head.weight", "transformer.word_embeddings.weight"}}));
    EXPECT_EQ(tree.parameterCount(), 128 + (16 + 216 + 72 + 16 + 180 + 168) + 16);
    // inv_freq is persistent in ChatGLM-6B (its checkpoint holds it), inside the no-split block.
    EXPECT_EQ(tree.bufferOnlyModules(), std::vector<std::string>{"transformer.layers.0.attention.rotary_emb"});

    json untied = config;
    untied["tie_word_embeddings"] = false;
    untied["inner_hidden_size"] = nullptr; // null means 4 × hidden_size
    untied["position_encoding_2d"] = false; // rotary over the whole head: dim 4, inv_freq [2]
    const ModuleTree separate = moduleTreeFromConfig(untied, "cfg.json");
    EXPECT_EQ(separate.find("transformer.layers.0.attention.rotary_emb")->buffers.front().shape,
              std::vector<int64_t>{2});
    EXPECT_TRUE(separate.tiedParameters.empty());
    EXPECT_TRUE(separate.find("lm_head")->parameters.front().tiedTo.empty());
    EXPECT_EQ(separate.find("transformer.layers.0.mlp.dense_h_to_4h")->parameters.front().shape,
              (std::vector<int64_t>{32, 8}));
}

TEST(ModuleTree, TinyGpt2FullListingWithConv1DWeightsInOut)
{
    const json config = {{"model_type", "gpt2"}, {"vocab_size", 16}, {"n_embd", 8},     {"n_layer", 1},
                         {"n_head", 2},          {"n_positions", 6}, {"n_inner", nullptr}};
    const ModuleTree tree = moduleTreeFromConfig(config, "cfg.json");
    EXPECT_EQ(dump(tree), R"( GPT2LMHeadModel
transformer GPT2Model
transformer.wte Embedding
  weight [16,8]
transformer.wpe Embedding
  weight [6,8]
transformer.h ModuleList
transformer.h.0 GPT2Block noSplit
transformer.h.0.ln_1 LayerNorm
  weight [8]
  bias [8]
transformer.h.0.attn GPT2Attention
  buffer bias [1,1,6,6] bool
  buffer masked_bias [] float32
transformer.h.0.attn.c_attn Conv1D
  weight [8,24]
  bias [24]
transformer.h.0.attn.c_proj Conv1D
  weight [8,8]
  bias [8]
transformer.h.0.ln_2 LayerNorm
  weight [8]
  bias [8]
transformer.h.0.mlp GPT2MLP
transformer.h.0.mlp.c_fc Conv1D
  weight [8,32]
  bias [32]
transformer.h.0.mlp.c_proj Conv1D
  weight [32,8]
  bias [8]
transformer.ln_f LayerNorm
  weight [8]
  bias [8]
lm_head Linear
  weight [16,8] tied transformer.wte.weight
)");
    expectAllDtypes(tree, "float32");
    EXPECT_EQ(tree.noSplitClasses, std::vector<std::string>{"GPT2Block"});
    EXPECT_EQ(tree.tiedParameters, (std::vector<std::vector<std::string>>{{"lm_head.weight", "transformer.wte.weight"}}));
    EXPECT_EQ(tree.parameterCount(), 128 + 48 + (16 + 216 + 72 + 16 + 288 + 264) + 16);
}

TEST(ModuleTree, TinyQwen3ListsQkNormsAfterTheProjections)
{
    json config = tinyLlama();
    config["model_type"] = "qwen3";
    config["num_hidden_layers"] = 1;
    config["head_dim"] = 6; // not hidden_size / heads = 4
    config["attention_bias"] = false;
    config["use_sliding_window"] = false;
    config["sliding_window"] = nullptr;
    const ModuleTree tree = moduleTreeFromConfig(config, "cfg.json");
    EXPECT_EQ(dump(tree), R"( Qwen3ForCausalLM
model Qwen3Model
model.embed_tokens Embedding
  weight [16,8]
model.layers ModuleList
model.layers.0 Qwen3DecoderLayer noSplit
model.layers.0.self_attn Qwen3Attention
model.layers.0.self_attn.q_proj Linear
  weight [12,8]
model.layers.0.self_attn.k_proj Linear
  weight [6,8]
model.layers.0.self_attn.v_proj Linear
  weight [6,8]
model.layers.0.self_attn.o_proj Linear
  weight [8,12]
model.layers.0.self_attn.q_norm Qwen3RMSNorm
  weight [6]
model.layers.0.self_attn.k_norm Qwen3RMSNorm
  weight [6]
model.layers.0.mlp Qwen3MLP
model.layers.0.mlp.gate_proj Linear
  weight [12,8]
model.layers.0.mlp.up_proj Linear
  weight [12,8]
model.layers.0.mlp.down_proj Linear
  weight [8,12]
model.layers.0.input_layernorm Qwen3RMSNorm
  weight [8]
model.layers.0.post_attention_layernorm Qwen3RMSNorm
  weight [8]
model.norm Qwen3RMSNorm
  weight [8]
model.rotary_emb Qwen3RotaryEmbedding
  buffer inv_freq [3] float32 non-persistent
lm_head Linear
  weight [16,8]
)");
    EXPECT_EQ(tree.noSplitClasses, std::vector<std::string>{"Qwen3DecoderLayer"});
    EXPECT_TRUE(tree.tiedParameters.empty());
    // Without head_dim Qwen3Config's default of 128 applies, not hidden_size / heads.
    config.erase("head_dim");
    EXPECT_EQ(moduleTreeFromConfig(config, "cfg.json").find("model.layers.0.self_attn.q_norm")->parameters.front().shape,
              std::vector<int64_t>{128});
}

TEST(ModuleTree, TinyGemma2HasFourNormsPerLayerAndATiedHead)
{
    json config = tinyLlama();
    config["model_type"] = "gemma2";
    config["num_hidden_layers"] = 1;
    config["head_dim"] = 6;
    const ModuleTree tree = moduleTreeFromConfig(config, "cfg.json");
    EXPECT_EQ(dump(tree), R"( Gemma2ForCausalLM
model Gemma2Model
model.embed_tokens Embedding
  weight [16,8]
model.layers ModuleList
model.layers.0 Gemma2DecoderLayer noSplit
model.layers.0.self_attn Gemma2Attention
model.layers.0.self_attn.q_proj Linear
  weight [12,8]
model.layers.0.self_attn.k_proj Linear
  weight [6,8]
model.layers.0.self_attn.v_proj Linear
  weight [6,8]
model.layers.0.self_attn.o_proj Linear
  weight [8,12]
model.layers.0.mlp Gemma2MLP
model.layers.0.mlp.gate_proj Linear
  weight [12,8]
model.layers.0.mlp.up_proj Linear
  weight [12,8]
model.layers.0.mlp.down_proj Linear
  weight [8,12]
model.layers.0.input_layernorm Gemma2RMSNorm
  weight [8]
model.layers.0.post_attention_layernorm Gemma2RMSNorm
  weight [8]
model.layers.0.pre_feedforward_layernorm Gemma2RMSNorm
  weight [8]
model.layers.0.post_feedforward_layernorm Gemma2RMSNorm
  weight [8]
model.norm Gemma2RMSNorm
  weight [8]
model.rotary_emb Gemma2RotaryEmbedding
  buffer inv_freq [3] float32 non-persistent
lm_head Linear
  weight [16,8] tied model.embed_tokens.weight
)");
    EXPECT_EQ(tree.noSplitClasses, std::vector<std::string>{"Gemma2DecoderLayer"});
    EXPECT_EQ(tree.tiedParameters, (std::vector<std::vector<std::string>>{{"lm_head.weight", "model.embed_tokens.weight"}}));
    EXPECT_EQ(tree.parameterCount(), 16 * 8 + (96 + 48 + 48 + 96) + 3 * 96 + 4 * 8 + 8);
}

TEST(ModuleTree, TinyGemma3TextHoldsTheEmbedScaleAndARotaryTablePerLayerType)
{
    json config = tinyLlama();
    config["model_type"] = "gemma3_text";
    config["head_dim"] = 6;
    config["sliding_window_pattern"] = 2; // layer 0 local, layer 1 global
    const ModuleTree tree = moduleTreeFromConfig(config, "cfg.json");
    const std::string layer1 = R"(model.layers.1 Gemma3DecoderLayer noSplit
model.layers.1.self_attn Gemma3Attention
model.layers.1.self_attn.q_proj Linear
  weight [12,8]
model.layers.1.self_attn.k_proj Linear
  weight [6,8]
model.layers.1.self_attn.v_proj Linear
  weight [6,8]
model.layers.1.self_attn.o_proj Linear
  weight [8,12]
model.layers.1.self_attn.q_norm Gemma3RMSNorm
  weight [6]
model.layers.1.self_attn.k_norm Gemma3RMSNorm
  weight [6]
model.layers.1.mlp Gemma3MLP
model.layers.1.mlp.gate_proj Linear
  weight [12,8]
model.layers.1.mlp.up_proj Linear
  weight [12,8]
model.layers.1.mlp.down_proj Linear
  weight [8,12]
model.layers.1.input_layernorm Gemma3RMSNorm
  weight [8]
model.layers.1.post_attention_layernorm Gemma3RMSNorm
  weight [8]
model.layers.1.pre_feedforward_layernorm Gemma3RMSNorm
  weight [8]
model.layers.1.post_feedforward_layernorm Gemma3RMSNorm
  weight [8]
model.norm Gemma3RMSNorm
  weight [8]
model.rotary_emb Gemma3RotaryEmbedding
  buffer full_attention_inv_freq [3] float32 non-persistent
  buffer sliding_attention_inv_freq [3] float32 non-persistent
lm_head Linear
  weight [16,8] tied model.embed_tokens.weight
)";
    const std::string listing = dump(tree);
    EXPECT_EQ(listing.substr(0, listing.find("model.layers ModuleList")), R"( Gemma3ForCausalLM
model Gemma3TextModel
model.embed_tokens Gemma3TextScaledWordEmbedding
  weight [16,8]
  buffer embed_scale [] float32 non-persistent
)");
    ASSERT_NE(listing.find("model.layers.1 "), std::string::npos);
    EXPECT_EQ(listing.substr(listing.find("model.layers.1 ")), layer1);
    EXPECT_EQ(tree.noSplitClasses, std::vector<std::string>{"Gemma3DecoderLayer"});
    EXPECT_EQ(tree.parameterCount(), 16 * 8 + 2 * ((96 + 48 + 48 + 96) + 2 * 6 + 3 * 96 + 4 * 8) + 8);
    EXPECT_EQ(engine::model::LlamaConfig::fromJson(config, "cfg.json").parameterCount(), tree.parameterCount());
}

// Hand-derived parameter counts of Qwen3 shapes: V vocab, h hidden, a heads, g kv heads, d head_dim,
// f intermediate, L layers.
int64_t qwen3Count(int64_t V, int64_t h, int64_t a, int64_t g, int64_t d, int64_t f, int64_t L, bool tied)
{
    const int64_t perLayer = h * (a * d)       // q_proj
        + 2 * h * (g * d)                      // k_proj, v_proj
        + (a * d) * h                          // o_proj
        + 2 * d                                // q_norm, k_norm
        + 3 * h * f                            // gate_proj, up_proj, down_proj
        + 2 * h;                               // input_layernorm, post_attention_layernorm
    return V * h + L * perLayer + h + (tied ? 0 : V * h);
}

TEST(ModuleTree, Qwen3TreesHaveHandDerivedAndPublishedCounts)
{
    // Qwen/Qwen3-0.6B's config.json (tests/data): tied embeddings, head_dim 128 with hidden 1024 and 16 heads.
    const ModuleTree small = moduleTreeFromFolder(kConfigs / "qwen3-0.6b.json");
    EXPECT_EQ(small.parameterCount(), qwen3Count(151936, 1024, 16, 8, 128, 3072, 28, true));
    EXPECT_EQ(small.parameterCount(), 596'049'920);
    EXPECT_NEAR(double(small.parameterCount()) / 1e9, 0.6, 0.01) << "published: 0.6B";
    EXPECT_EQ(small.parameterBytes(), 2 * small.parameterCount()) << "bfloat16";
    EXPECT_EQ(small.tiedParameters.size(), 1u);
    EXPECT_EQ(small.find("model.layers.27.self_attn.q_proj")->parameters.front().shape,
              (std::vector<int64_t>{2048, 1024}));
    EXPECT_EQ(small.find("model.layers.27")->parameterCount(), qwen3Count(0, 1024, 16, 8, 128, 3072, 1, true) - 1024);
    EXPECT_TRUE(small.find("model.layers.27")->noSplit);
    EXPECT_EQ(engine::model::LlamaConfig::fromFile(kConfigs / "qwen3-0.6b.json").parameterCount(), small.parameterCount());

    // Qwen/Qwen3-8B: the same keys with its sizes, untied.
    json config = json::parse(std::ifstream(kConfigs / "qwen3-0.6b.json"));
    config["hidden_size"] = 4096;
    config["intermediate_size"] = 12288;
    config["num_hidden_layers"] = 36;
    config["num_attention_heads"] = 32;
    config["max_window_layers"] = 36;
    config["tie_word_embeddings"] = false;
    const ModuleTree large = moduleTreeFromConfig(config, "qwen3-8b");
    EXPECT_EQ(large.parameterCount(), qwen3Count(151936, 4096, 32, 8, 128, 12288, 36, false));
    EXPECT_EQ(large.parameterCount(), 8'190'735'360);
    EXPECT_NEAR(double(large.parameterCount()) / 1e9, 8.2, 0.05) << "published: 8.2B";
    EXPECT_TRUE(large.tiedParameters.empty());
    EXPECT_EQ(large.find("lm_head")->parameterCount(false), 151936 * 4096);
}

// Published config.json files; the counts are those of the released checkpoints.
TEST(ModuleTree, RealConfigsHaveThePublishedParameterCounts)
{
    struct Case {
        const char *file;
        int64_t parameters;
        const char *dtype;
        const char *noSplit;
        bool tied;
    };
    for (const Case &c : {
             Case{"llama-2-7b.json", 6'738'415'616, "float16", "LlamaDecoderLayer", false},
             Case{"llama-3.1-8b.json", 8'030'261'248, "bfloat16", "LlamaDecoderLayer", false},
             Case{"mistral-7b-v0.1.json", 7'241'732'096, "bfloat16", "MistralDecoderLayer", false},
             Case{"qwen2-0.5b.json", 494'032'768, "bfloat16", "Qwen2DecoderLayer", true},
             Case{"gpt2.json", 124'439'808, "float32", "GPT2Block", true},
             Case{"chatglm-6b.json", 6'173'286'400, "float16", "GLMBlock", true},
         }) {
        const ModuleTree tree = moduleTreeFromFolder(kConfigs / c.file);
        EXPECT_EQ(tree.parameterCount(), c.parameters) << c.file;
        EXPECT_EQ(tree.dtype, c.dtype) << c.file;
        EXPECT_EQ(tree.parameterBytes(), c.parameters * engine::model::dtypeSize(c.dtype)) << c.file;
        EXPECT_EQ(tree.noSplitClasses, std::vector<std::string>{c.noSplit}) << c.file;
        EXPECT_EQ(tree.tiedParameters.size(), c.tied ? 1u : 0u) << c.file;
        int64_t sum = 0;
        for (const auto &p : tree.namedParameters())
            sum += p.info.numel();
        EXPECT_EQ(sum, c.parameters) << c.file;
    }
}

TEST(ModuleTree, RealConfigSubtreesAndLlamaConfigAgree)
{
    const ModuleTree llama = moduleTreeFromFolder(kConfigs / "llama-2-7b.json");
    // 4 × 4096² + 3 × 4096 × 11008 + 2 × 4096
    EXPECT_EQ(llama.find("model.layers.31")->parameterCount(), 202'383'360);
    EXPECT_EQ(llama.find("model.layers.31")->parameterBytes(), 2 * 202'383'360);
    EXPECT_TRUE(llama.find("model.layers.31")->noSplit);
    EXPECT_FALSE(llama.find("model.layers")->noSplit);
    EXPECT_EQ(llama.find("model.layers.31.mlp.down_proj")->parameters.front().shape, (std::vector<int64_t>{4096, 11008}));
    EXPECT_EQ(llama.find("model.layers.32"), nullptr);
    EXPECT_EQ(llama.find("model.layers.3.self_attn.x_proj"), nullptr);
    EXPECT_EQ(llama.find("model.lay"), nullptr);
    EXPECT_EQ(llama.find(""), &llama.root);
    EXPECT_EQ(llama.root.children.size(), 2u);
    EXPECT_EQ(llama.find("model")->children.size(), 4u); // embed_tokens, layers, norm, rotary_emb
    EXPECT_EQ(llama.find("model.rotary_emb")->buffers.front().shape, std::vector<int64_t>{64}); // head_dim 128 / 2

    const ModuleTree mistral = moduleTreeFromFolder(kConfigs / "mistral-7b-v0.1.json");
    EXPECT_EQ(mistral.find("model.layers.0.self_attn.k_proj")->parameters.front().shape,
              (std::vector<int64_t>{1024, 4096}));

    const ModuleTree qwen = moduleTreeFromFolder(kConfigs / "qwen2-0.5b.json");
    EXPECT_EQ(qwen.find("model.layers.0.self_attn.k_proj")->parameters.at(1).shape, (std::vector<int64_t>{128}));
    EXPECT_EQ(qwen.find("model.layers.0.self_attn.o_proj")->parameters.size(), 1u) << "no o_proj bias";

    const ModuleTree gpt2 = moduleTreeFromFolder(kConfigs / "gpt2.json");
    EXPECT_EQ(gpt2.find("transformer.h.11.attn.c_attn")->parameters.front().shape, (std::vector<int64_t>{768, 2304}));
    EXPECT_EQ(gpt2.find("transformer.h.11")->parameterCount(), 7'087'872);

    const ModuleTree glm = moduleTreeFromFolder(kConfigs / "chatglm-6b.json");
    EXPECT_EQ(glm.find("transformer.layers.27")->parameterCount(), 201'379'840);

    for (const char *file : {"llama-2-7b.json", "llama-3.1-8b.json", "mistral-7b-v0.1.json", "qwen2-0.5b.json"}) {
        const auto config = engine::model::LlamaConfig::fromFile(kConfigs / file);
        EXPECT_EQ(config.parameterCount(), moduleTreeFromFolder(kConfigs / file).parameterCount()) << file;
    }
}

TEST(ModuleTree, FromFolderReadsConfigJson)
{
    const auto dir = std::filesystem::temp_directory_path() / ("tunebench-moduletree-" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir);
    std::filesystem::copy_file(kConfigs / "gpt2.json", dir / "config.json",
                               std::filesystem::copy_options::overwrite_existing);
    EXPECT_EQ(moduleTreeFromFolder(dir).parameterCount(), 124'439'808);
    std::filesystem::remove(dir / "config.json");
    try {
        moduleTreeFromFolder(dir);
        FAIL() << "read a folder without config.json";
    } catch (const engine::Error &e) {
        EXPECT_NE(std::string(e.what()).find("config.json"), std::string::npos) << e.what();
    }
    std::filesystem::remove_all(dir);
}

TEST(ModuleTree, RefusesWhatItCannotLayOutByName)
{
    expectRefused(json{{"model_type", "falcon"}, {"hidden_size", 8}}, "model_type", "falcon");
    expectRefused(json{{"hidden_size", 8}}, "model_type", "missing");
    expectRefused(json{{"model_type", "gpt2"}, {"torch_dtype", "int4"}}, "torch_dtype", "int4");
    expectRefused(json{{"model_type", "gpt2"}, {"torch_dtype", 16}}, "torch_dtype", "string");
    expectRefused(json{{"model_type", "gpt2"}, {"n_embd", 10}, {"n_head", 4}}, "n_head", "does not divide");
    expectRefused(json{{"model_type", "gpt2"}, {"add_cross_attention", true}}, "add_cross_attention", "cross");
    expectRefused(json{{"model_type", "gpt2"}, {"n_layer", "12"}}, "n_layer", "integer");
    expectRefused(json{{"model_type", "chatglm"}, {"quantization_bit", 4}}, "quantization_bit", "quantized");
    expectRefused(json{{"model_type", "chatglm"}, {"pre_seq_len", 128}}, "pre_seq_len", "prefix");
    expectRefused(json{{"model_type", "chatglm"}, {"position_encoding_2d", "yes"}}, "position_encoding_2d", "true or false");
    expectRefused(json{{"model_type", "chatglm"}, {"padded_vocab_size", 65024}, {"ffn_hidden_size", 13696}},
                  "padded_vocab_size", "ChatGLM2");
    json yarn = tinyLlama();
    yarn["rope_scaling"] = {{"rope_type", "yarn"}, {"factor", 4.0}};
    expectRefused(yarn, "rope_scaling.rope_type", "yarn");
    json bias = tinyLlama();
    bias["model_type"] = "qwen2";
    bias["mlp_bias"] = true;
    expectRefused(bias, "mlp_bias", "not supported");
    json qwen3 = tinyLlama();
    qwen3["model_type"] = "qwen3";
    qwen3["use_sliding_window"] = true;
    qwen3["max_window_layers"] = 1;
    expectRefused(qwen3, "use_sliding_window", "sliding-window");
    // transformers 5 writes "dtype" instead of "torch_dtype".
    EXPECT_EQ(moduleTreeFromConfig(json{{"model_type", "gpt2"}, {"dtype", "bfloat16"}}, "cfg.json").dtype, "bfloat16");
}
