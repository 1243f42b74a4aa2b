#include "engine/core/error.h"
#include "engine/core/paths.h"
#include "engine/model/llamaconfig.h"

#include <filesystem>
#include <fstream>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

using engine::model::LlamaConfig;
using nlohmann::json;

namespace {

json tinyJson()
{
    return json{{"model_type", "llama"},      {"vocab_size", 64},         {"hidden_size", 32},
                {"intermediate_size", 48},    {"num_hidden_layers", 2},   {"num_attention_heads", 4},
                {"num_key_value_heads", 2},   {"max_position_embeddings", 128},
                {"rms_norm_eps", 1e-5},       {"rope_theta", 10000.0},    {"hidden_act", "silu"}};
}

// Expects fromJson to throw InvalidInput whose message names `source`, `field` and every `words`.
void expectRefused(const json &config, const std::string &field, std::initializer_list<std::string> words = {})
{
    try {
        LlamaConfig::fromJson(config, "cfg.json");
        FAIL() << "accepted a config with a bad '" << field << "': " << config.dump();
    } catch (const engine::Error &e) {
        const std::string message = e.what();
        EXPECT_EQ(e.kind(), engine::ErrorKind::InvalidInput) << message;
        EXPECT_NE(message.find("cfg.json"), std::string::npos) << message;
        EXPECT_NE(message.find("'" + field + "'"), std::string::npos) << message;
        for (const std::string &word : words)
            EXPECT_NE(message.find(word), std::string::npos) << "missing '" << word << "' in: " << message;
    }
}

json with(json config, const std::string &key, const json &value)
{
    config[key] = value;
    return config;
}

struct TempDir {
    std::filesystem::path path;
    TempDir()
    {
        path = std::filesystem::temp_directory_path()
            / ("tunebench-config-" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()) + "-"
               + ::testing::UnitTest::GetInstance()->current_test_info()->name());
        std::filesystem::remove_all(path);
        std::filesystem::create_directories(path);
    }
    ~TempDir() { std::filesystem::remove_all(path); }
};

} // namespace

TEST(LlamaConfig, ParsesHuggingFaceKeys)
{
    json j = tinyJson();
    j["tie_word_embeddings"] = true;
    j["bos_token_id"] = 5;
    j["eos_token_id"] = json::array({6, 7});
    j["initializer_range"] = 0.05;
    j["torch_dtype"] = "bfloat16";   // unknown keys are ignored
    j["rope_scaling"] = nullptr;
    j["attention_bias"] = false;
    const LlamaConfig c = LlamaConfig::fromJson(j, "cfg.json");
    EXPECT_EQ(c.vocabSize, 64);
    EXPECT_EQ(c.hiddenSize, 32);
    EXPECT_EQ(c.intermediateSize, 48);
    EXPECT_EQ(c.numHiddenLayers, 2);
    EXPECT_EQ(c.numAttentionHeads, 4);
    EXPECT_EQ(c.numKeyValueHeads, 2);
    EXPECT_EQ(c.effectiveHeadDim(), 8);
    EXPECT_EQ(c.maxPositionEmbeddings, 128);
    EXPECT_DOUBLE_EQ(c.rmsNormEps, 1e-5);
    EXPECT_DOUBLE_EQ(c.ropeTheta, 10000.0);
    EXPECT_TRUE(c.tieWordEmbeddings);
    EXPECT_EQ(c.bosTokenId, 5);
    EXPECT_EQ(c.eosTokenId, 6);
    EXPECT_DOUBLE_EQ(c.initializerRange, 0.05);
}

TEST(LlamaConfig, DefaultsWhenKeysAreMissing)
{
    json j = tinyJson();
    j.erase("model_type");
    j.erase("num_key_value_heads");
    const LlamaConfig c = LlamaConfig::fromJson(j, "cfg.json");
    EXPECT_EQ(c.modelType, "llama");
    EXPECT_EQ(c.numKeyValueHeads, 4) << "num_key_value_heads defaults to num_attention_heads";
    EXPECT_FALSE(c.tieWordEmbeddings) << "llama's default is untied";
    EXPECT_EQ(c.headDim, 0);
}

TEST(LlamaConfig, ExplicitHeadDim)
{
    json j = with(tinyJson(), "head_dim", 16);
    const LlamaConfig c = LlamaConfig::fromJson(j, "cfg.json");
    EXPECT_EQ(c.effectiveHeadDim(), 16);
    // head_dim equal to hidden / heads (as transformers writes it) means the default.
    EXPECT_EQ(LlamaConfig::fromJson(with(tinyJson(), "head_dim", 8), "cfg.json").effectiveHeadDim(), 8);
    EXPECT_EQ(LlamaConfig::fromJson(with(tinyJson(), "head_dim", nullptr), "cfg.json").effectiveHeadDim(), 8);
}

TEST(LlamaConfig, RefusesUnimplementedFeaturesByName)
{
    expectRefused(with(tinyJson(), "model_type", "gemma"), "model_type",
                  {"gemma is not supported yet", "llama, mistral, qwen2"});
    expectRefused(with(tinyJson(), "model_type", "gpt2"), "model_type", {"gpt2"});
    for (const char *type : {"dynamic", "yarn", "longrope", "su"}) {
        expectRefused(with(tinyJson(), "rope_scaling", json{{"rope_type", type}, {"factor", 2.0}}),
                      "rope_scaling.rope_type", {type, "not supported", "linear, llama3"});
    }
    expectRefused(with(tinyJson(), "rope_scaling", json{{"type", "dynamic"}, {"factor", 2.0}}), "rope_scaling.rope_type",
                  {"dynamic"});
    expectRefused(with(with(tinyJson(), "model_type", "mistral"), "mlp_bias", true), "mlp_bias", {"not supported"});
    expectRefused(with(tinyJson(), "hidden_act", "gelu"), "hidden_act", {"gelu", "silu"});
    expectRefused(with(tinyJson(), "attention_dropout", 0.1), "attention_dropout", {"not supported"});
    expectRefused(with(tinyJson(), "partial_rotary_factor", 0.5), "partial_rotary_factor", {"not supported"});
    expectRefused(with(with(tinyJson(), "model_type", "qwen2"), "use_sliding_window", true), "use_sliding_window",
                  {"not supported"});
    expectRefused(with(with(tinyJson(), "model_type", "mistral"), "attention_bias", true), "attention_bias",
                  {"MistralAttention has no biases"});
    expectRefused(with(with(tinyJson(), "model_type", "qwen2"), "attention_bias", false), "attention_bias",
                  {"Qwen2Attention always has q/k/v biases"});
}

TEST(LlamaConfig, Qwen3RefusesWhatWouldChangeItsMathsByName)
{
    const json qwen3 = with(tinyJson(), "model_type", "qwen3");
    // use_sliding_window makes layers max_window_layers.. sliding-window layers (Qwen3Config).
    json sliding = with(with(qwen3, "use_sliding_window", true), "max_window_layers", 1);
    expectRefused(sliding, "use_sliding_window", {"sliding-window", "not supported", "layers 1 and above"});
    // Without max_window_layers the class default, 28, applies: 30 layers reach it, 2 do not.
    expectRefused(with(with(with(qwen3, "use_sliding_window", true), "sliding_window", 8), "num_hidden_layers", 30),
                  "use_sliding_window", {"layers 28 and above"});
    EXPECT_NO_THROW(LlamaConfig::fromJson(with(with(qwen3, "use_sliding_window", true), "sliding_window", 8), "cfg.json"));
    expectRefused(with(qwen3, "layer_types", json{"full_attention", "sliding_attention"}), "layer_types",
                  {"\"sliding_attention\"", "not supported"});
    expectRefused(with(qwen3, "mlp_bias", true), "mlp_bias", {"not supported"});
    expectRefused(with(qwen3, "rope_scaling", json{{"rope_type", "yarn"}, {"factor", 4.0}}), "rope_scaling.rope_type",
                  {"yarn"});
    expectRefused(with(qwen3, "attention_dropout", 0.1), "attention_dropout", {"not supported"});
    expectRefused(with(qwen3, "hidden_act", "gelu"), "hidden_act", {"gelu"});

    // What changes nothing is accepted: a window that reaches no layer, a window without use_sliding_window,
    // layer_types of full attention only.
    EXPECT_NO_THROW(LlamaConfig::fromJson(with(with(qwen3, "use_sliding_window", true), "max_window_layers", 2), "cfg.json"));
    EXPECT_NO_THROW(LlamaConfig::fromJson(with(with(qwen3, "use_sliding_window", true), "sliding_window", nullptr), "cfg.json"));
    EXPECT_NO_THROW(LlamaConfig::fromJson(with(qwen3, "sliding_window", 4096), "cfg.json"));
    EXPECT_NO_THROW(LlamaConfig::fromJson(with(qwen3, "layer_types", json{"full_attention", "full_attention"}), "cfg.json"));
}

TEST(LlamaConfig, Qwen3ReadsHeadDimBiasAndItsClassDefaults)
{
    const json qwen3 = with(tinyJson(), "model_type", "qwen3");
    const LlamaConfig plain = LlamaConfig::fromJson(qwen3, "cfg.json");
    EXPECT_TRUE(plain.hasQkNorm());
    EXPECT_FALSE(plain.hasQkvBias());
    EXPECT_FALSE(plain.hasOutputBias());
    EXPECT_EQ(plain.effectiveHeadDim(), 128) << "Qwen3Config's head_dim default, not hidden_size / heads";
    EXPECT_EQ(plain.className("Attention"), "Qwen3Attention");
    EXPECT_EQ(LlamaConfig::fromJson(with(qwen3, "head_dim", 12), "cfg.json").effectiveHeadDim(), 12);
    const LlamaConfig bias = LlamaConfig::fromJson(with(qwen3, "attention_bias", true), "cfg.json");
    EXPECT_TRUE(bias.hasQkvBias());
    EXPECT_TRUE(bias.hasOutputBias()) << "Qwen3Attention's attention_bias covers o_proj too";
    json bare = qwen3;
    bare.erase("vocab_size");
    bare.erase("max_position_embeddings");
    const LlamaConfig defaults = LlamaConfig::fromJson(bare, "cfg.json");
    EXPECT_EQ(defaults.vocabSize, 151936);
    EXPECT_EQ(defaults.maxPositionEmbeddings, 32768);
    EXPECT_FALSE(LlamaConfig::fromJson(tinyJson(), "cfg.json").hasQkNorm());

    // toJson reads back to the same config, head_dim and attention_bias included.
    for (const LlamaConfig &c : {LlamaConfig::fromJson(with(qwen3, "head_dim", 12), "cfg.json"), bias}) {
        const LlamaConfig back = LlamaConfig::fromJson(c.toJson(), "back");
        EXPECT_EQ(back.toJson(), c.toJson());
        EXPECT_EQ(back.effectiveHeadDim(), c.effectiveHeadDim());
        EXPECT_EQ(back.attentionBias, c.attentionBias);
        EXPECT_EQ(c.toJson().at("architectures"), json{"Qwen3ForCausalLM"});
    }

    // The published Qwen/Qwen3-0.6B config.json.
    const auto file = std::filesystem::path(TUNEBENCH_TEST_DATA) / "model" / "configs" / "qwen3-0.6b.json";
    const LlamaConfig published = LlamaConfig::fromFile(file);
    EXPECT_EQ(published.modelType, "qwen3");
    EXPECT_EQ(published.effectiveHeadDim(), 128);
    EXPECT_EQ(published.hiddenSize, 1024);
    EXPECT_EQ(published.numAttentionHeads * published.effectiveHeadDim(), 2048) << "wider than hidden_size";
    EXPECT_TRUE(published.tieWordEmbeddings);
    EXPECT_DOUBLE_EQ(published.ropeTheta, 1e6);
    EXPECT_DOUBLE_EQ(published.rmsNormEps, 1e-6);
    EXPECT_EQ(published.slidingWindow, 0);
    EXPECT_EQ(published.eosTokenId, 151645);
}

TEST(LlamaConfig, MistralAndQwen2WithTheirClassDefaults)
{
    json mistral = with(tinyJson(), "model_type", "mistral");
    mistral.erase("num_key_value_heads");
    mistral["num_attention_heads"] = 8;
    mistral["hidden_size"] = 64;
    const LlamaConfig m = LlamaConfig::fromJson(mistral, "cfg.json");
    EXPECT_EQ(m.modelType, "mistral");
    EXPECT_EQ(m.numKeyValueHeads, 8) << "MistralConfig's default";
    EXPECT_EQ(m.slidingWindow, 4096) << "MistralConfig's default";
    EXPECT_FALSE(m.tieWordEmbeddings);
    EXPECT_FALSE(m.hasQkvBias());
    EXPECT_EQ(m.className("DecoderLayer"), "MistralDecoderLayer");
    EXPECT_EQ(LlamaConfig::fromJson(with(mistral, "sliding_window", nullptr), "cfg.json").slidingWindow, 0);
    EXPECT_EQ(LlamaConfig::fromJson(with(mistral, "sliding_window", 16), "cfg.json").slidingWindow, 16);
    expectRefused(with(mistral, "sliding_window", 0), "sliding_window", {"between 1 and"});
    expectRefused(with(mistral, "sliding_window", "4096"), "sliding_window", {"integer"});

    json qwen2 = with(tinyJson(), "model_type", "qwen2");
    qwen2["sliding_window"] = 4096;  // ignored by transformers while use_sliding_window is false
    qwen2["use_sliding_window"] = false;
    qwen2.erase("intermediate_size");
    const LlamaConfig q = LlamaConfig::fromJson(qwen2, "cfg.json");
    EXPECT_EQ(q.intermediateSize, 22016) << "Qwen2Config's default";
    EXPECT_EQ(q.slidingWindow, 0);
    EXPECT_TRUE(q.hasQkvBias());
    EXPECT_FALSE(q.hasOutputBias());
    EXPECT_FALSE(q.tieWordEmbeddings);
    EXPECT_EQ(q.bosTokenId, -1) << "Qwen2Config has no bos_token_id default";
    EXPECT_EQ(q.className("ForCausalLM"), "Qwen2ForCausalLM");
    EXPECT_EQ(LlamaConfig::fromJson(with(qwen2, "attention_bias", true), "cfg.json").hasQkvBias(), true);

    const LlamaConfig bias = LlamaConfig::fromJson(with(tinyJson(), "attention_bias", true), "cfg.json");
    EXPECT_TRUE(bias.hasQkvBias());
    EXPECT_TRUE(bias.hasOutputBias());
    EXPECT_EQ(bias.parameterCount(), LlamaConfig::fromJson(tinyJson(), "cfg.json").parameterCount() + 2 * (32 + 16 + 16 + 32));
}

TEST(LlamaConfig, RopeScalingLinearAndLlama3)
{
    const LlamaConfig linear =
        LlamaConfig::fromJson(with(tinyJson(), "rope_scaling", json{{"type", "linear"}, {"factor", 2.0}}), "cfg.json");
    EXPECT_EQ(linear.ropeScaling.type, "linear");
    EXPECT_DOUBLE_EQ(linear.ropeScaling.factor, 2.0);
    const json llama3Scaling = {{"rope_type", "llama3"},
                                {"factor", 8.0},
                                {"low_freq_factor", 1.0},
                                {"high_freq_factor", 4.0},
                                {"original_max_position_embeddings", 8192}};
    const LlamaConfig llama3 = LlamaConfig::fromJson(with(tinyJson(), "rope_scaling", llama3Scaling), "cfg.json");
    EXPECT_EQ(llama3.ropeScaling, (engine::model::RopeScaling{"llama3", 8.0, 1.0, 4.0, 8192}));
    EXPECT_TRUE(LlamaConfig::fromJson(with(tinyJson(), "rope_scaling", json{{"rope_type", "default"}}), "cfg.json")
                    .ropeScaling.type.empty());
    // transformers 5: rope_parameters holds rope_theta and the scaling.
    json v5 = tinyJson();
    v5.erase("rope_theta");
    v5["rope_parameters"] = {{"rope_type", "linear"}, {"factor", 4.0}, {"rope_theta", 500.0}};
    const LlamaConfig fromV5 = LlamaConfig::fromJson(v5, "cfg.json");
    EXPECT_DOUBLE_EQ(fromV5.ropeTheta, 500.0);
    EXPECT_EQ(fromV5.ropeScaling.type, "linear");

    for (const char *key : {"factor", "low_freq_factor", "high_freq_factor", "original_max_position_embeddings"}) {
        json missing = llama3Scaling;
        missing.erase(key);
        expectRefused(with(tinyJson(), "rope_scaling", missing), std::string("rope_scaling.") + key, {"missing", "llama3"});
    }
    expectRefused(with(tinyJson(), "rope_scaling", json{{"rope_type", "linear"}}), "rope_scaling.factor", {"missing"});
    expectRefused(with(tinyJson(), "rope_scaling", json{{"rope_type", "linear"}, {"factor", "2"}}), "rope_scaling.factor",
                  {"number"});
    expectRefused(with(tinyJson(), "rope_scaling", json{{"rope_type", "linear"}, {"factor", -2.0}}),
                  "rope_scaling.factor", {"positive"});
    expectRefused(with(tinyJson(), "rope_scaling", with(llama3Scaling, "high_freq_factor", 1.0)),
                  "rope_scaling.high_freq_factor", {"larger than low_freq_factor"});
    expectRefused(with(tinyJson(), "rope_scaling", with(llama3Scaling, "original_max_position_embeddings", 0.5)),
                  "rope_scaling.original_max_position_embeddings", {"integer"});
    expectRefused(with(tinyJson(), "rope_scaling", json{{"rope_type", "linear"}, {"type", "dynamic"}, {"factor", 2.0}}),
                  "rope_scaling.rope_type", {"dynamic"});
    expectRefused(with(tinyJson(), "rope_scaling", "linear"), "rope_scaling", {"object"});
}

TEST(LlamaConfig, FamilyRoundTripsThroughJson)
{
    json mistral = with(with(tinyJson(), "model_type", "mistral"), "sliding_window", 8);
    json qwen2 = with(with(tinyJson(), "model_type", "qwen2"), "tie_word_embeddings", true);
    json llama3 = with(with(tinyJson(), "head_dim", 16), "attention_bias", true);
    llama3["rope_scaling"] = {{"rope_type", "llama3"},
                              {"factor", 8.0},
                              {"low_freq_factor", 1.0},
                              {"high_freq_factor", 4.0},
                              {"original_max_position_embeddings", 64}};
    for (const json &source : {mistral, qwen2, llama3}) {
        const LlamaConfig original = LlamaConfig::fromJson(source, "cfg.json");
        const json j = original.toJson();
        const LlamaConfig back = LlamaConfig::fromJson(json::parse(j.dump()), "roundtrip");
        EXPECT_EQ(back.toJson(), j);
        EXPECT_EQ(back.modelType, original.modelType);
        EXPECT_EQ(back.slidingWindow, original.slidingWindow);
        EXPECT_EQ(back.ropeScaling, original.ropeScaling);
        EXPECT_EQ(back.attentionBias, original.attentionBias);
        EXPECT_EQ(back.parameterCount(), original.parameterCount());
        EXPECT_EQ(j.at("architectures").at(0), original.className("ForCausalLM"));
    }
}

TEST(LlamaConfig, RefusesWrongTypesNamingTheField)
{
    expectRefused(with(tinyJson(), "vocab_size", "64"), "vocab_size", {"integer", "string"});
    expectRefused(with(tinyJson(), "hidden_size", 32.5), "hidden_size", {"integer"});
    expectRefused(with(tinyJson(), "num_hidden_layers", nullptr), "num_hidden_layers", {"integer"});
    expectRefused(with(tinyJson(), "rms_norm_eps", "1e-5"), "rms_norm_eps", {"number"});
    expectRefused(with(tinyJson(), "rope_theta", json::array({1})), "rope_theta", {"number"});
    expectRefused(with(tinyJson(), "tie_word_embeddings", "yes"), "tie_word_embeddings", {"true or false"});
    expectRefused(with(tinyJson(), "attention_bias", 1), "attention_bias", {"true or false"});
    expectRefused(with(tinyJson(), "hidden_act", 3), "hidden_act", {"string"});
    expectRefused(with(tinyJson(), "model_type", 1), "model_type", {"string"});
    expectRefused(with(tinyJson(), "eos_token_id", "</s>"), "eos_token_id", {"integer"});
}

TEST(LlamaConfig, RefusesImpossibleValuesNamingTheFieldAndLimit)
{
    expectRefused(with(tinyJson(), "vocab_size", 0), "vocab_size", {"between 1 and"});
    expectRefused(with(tinyJson(), "vocab_size", 20'000'000), "vocab_size", {"10000000"});
    expectRefused(with(tinyJson(), "hidden_size", -32), "hidden_size", {"-32"});
    expectRefused(with(tinyJson(), "hidden_size", 2'000'000), "hidden_size", {"1000000"});
    expectRefused(with(tinyJson(), "intermediate_size", 0), "intermediate_size");
    expectRefused(with(tinyJson(), "num_hidden_layers", 0), "num_hidden_layers");
    expectRefused(with(tinyJson(), "num_hidden_layers", 20000), "num_hidden_layers", {"10000"});
    expectRefused(with(tinyJson(), "num_attention_heads", 0), "num_attention_heads");
    expectRefused(with(with(tinyJson(), "num_attention_heads", 5), "num_key_value_heads", 5), "num_attention_heads",
                  {"does not divide hidden_size 32"});
    expectRefused(with(tinyJson(), "num_key_value_heads", 3), "num_key_value_heads", {"does not divide"});
    expectRefused(with(tinyJson(), "num_key_value_heads", 8), "num_key_value_heads", {"between 1 and 4"});
    expectRefused(with(tinyJson(), "head_dim", 7), "head_dim", {"even"});
    expectRefused(with(tinyJson(), "head_dim", -4), "head_dim");
    expectRefused(with(tinyJson(), "max_position_embeddings", 0), "max_position_embeddings");
    expectRefused(with(tinyJson(), "rms_norm_eps", 0.0), "rms_norm_eps");
    expectRefused(with(tinyJson(), "rope_theta", -1.0), "rope_theta");
    expectRefused(with(tinyJson(), "eos_token_id", 64), "eos_token_id", {"63"});
}

TEST(LlamaConfig, RoundTripsThroughJson)
{
    for (const LlamaConfig &original :
         {engine::model::demoConfig(), LlamaConfig::fromJson(with(tinyJson(), "head_dim", 16), "cfg.json")}) {
        const json j = original.toJson();
        EXPECT_EQ(j.at("model_type"), "llama");
        EXPECT_TRUE(j.at("rope_scaling").is_null());
        const LlamaConfig back = LlamaConfig::fromJson(json::parse(j.dump()), "roundtrip");
        EXPECT_EQ(back.toJson(), j);
        EXPECT_EQ(back.vocabSize, original.vocabSize);
        EXPECT_EQ(back.effectiveHeadDim(), original.effectiveHeadDim());
        EXPECT_EQ(back.numKeyValueHeads, original.numKeyValueHeads);
        EXPECT_EQ(back.tieWordEmbeddings, original.tieWordEmbeddings);
        EXPECT_DOUBLE_EQ(back.rmsNormEps, original.rmsNormEps);
        EXPECT_EQ(back.parameterCount(), original.parameterCount());
    }
}

TEST(LlamaConfig, FromFileAcceptsFolderOrFile)
{
    TempDir dir;
    {
        std::ofstream out(dir.path / "config.json");
        out << tinyJson().dump(2);
    }
    EXPECT_EQ(LlamaConfig::fromFile(dir.path).hiddenSize, 32);
    EXPECT_EQ(LlamaConfig::fromFile(dir.path / "config.json").numKeyValueHeads, 2);
}

TEST(LlamaConfig, FromFileNamesTheFileOnErrors)
{
    TempDir dir;
    const auto file = dir.path / "config.json";
    {
        std::ofstream out(file);
        out << "{\"vocab_size\": 64,";
    }
    try {
        LlamaConfig::fromFile(dir.path);
        FAIL() << "accepted invalid JSON";
    } catch (const engine::Error &e) {
        EXPECT_EQ(e.kind(), engine::ErrorKind::InvalidInput);
        EXPECT_NE(std::string(e.what()).find(file.string()), std::string::npos) << e.what();
    }
    {
        std::ofstream out(file);
        out << with(tinyJson(), "hidden_act", "relu").dump();
    }
    try {
        LlamaConfig::fromFile(file);
        FAIL() << "accepted relu";
    } catch (const engine::Error &e) {
        EXPECT_NE(std::string(e.what()).find(file.string()), std::string::npos) << e.what();
        EXPECT_NE(std::string(e.what()).find("hidden_act"), std::string::npos) << e.what();
    }
    EXPECT_THROW(LlamaConfig::fromFile(dir.path / "missing"), engine::Error);
}

TEST(LlamaConfig, DemoConfig)
{
    const LlamaConfig demo = engine::model::demoConfig();
    EXPECT_NO_THROW(demo.validate("demo"));
    EXPECT_EQ(demo.effectiveHeadDim(), 32);
    EXPECT_TRUE(demo.tieWordEmbeddings);
    EXPECT_GT(demo.parameterCount(), 1'900'000);
    EXPECT_LT(demo.parameterCount(), 2'000'000);
}

// The demo's config.json shipped in resources/ is the built-in demo model, field for field.
TEST(LlamaConfigDemo, ShippedConfigEqualsTheBuiltInDemo)
{
    const auto shipped = engine::model::LlamaConfig::fromFile(engine::demoCorpusPath().parent_path() / "config.json");
    const auto builtIn = engine::model::demoConfig();
    EXPECT_EQ(shipped.toJson(), builtIn.toJson());
    EXPECT_EQ(shipped.parameterCount(), builtIn.parameterCount());
    EXPECT_GT(builtIn.parameterCount(), 1'000'000);
    EXPECT_LT(builtIn.parameterCount(), 5'000'000);
}
