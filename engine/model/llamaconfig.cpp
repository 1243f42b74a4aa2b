#include "engine/model/llamaconfig.h"

#include "engine/core/atomicfile.h"
#include "engine/core/error.h"

#include <cmath>
#include <limits>

#include <nlohmann/json.hpp>

namespace engine::model {
namespace {

using nlohmann::json;

// Upper bounds that no real model reaches; they catch typos and keep parameterCount() in int64.
constexpr int64_t kMaxVocab = 10'000'000;
constexpr int64_t kMaxHidden = 1'000'000;
constexpr int64_t kMaxIntermediate = 10'000'000;
constexpr int64_t kMaxLayers = 10'000;
constexpr int64_t kMaxHeadDim = 65'536;
constexpr int64_t kMaxPositions = 1'000'000'000;

std::string describe(const json &value)
{
    std::string text = value.dump();
    if (text.size() > 40)
        text = text.substr(0, 37) + "...";
    return text + " (" + value.type_name() + ")";
}

Error fieldError(const std::string &source, const std::string &field, const std::string &what)
{
    return invalidInput(source + ": field '" + field + "' " + what);
}

// Reads an integer field; `nullAllowed` lets `null` leave the default in place.
void readInt(const json &object, const char *key, int64_t &out, const std::string &source, bool nullAllowed = false)
{
    const auto it = object.find(key);
    if (it == object.end() || (nullAllowed && it->is_null()))
        return;
    if (it->is_number_integer()) {
        out = it->get<int64_t>();
        return;
    }
    if (it->is_number_float()) {
        const double value = it->get<double>();
        if (std::isfinite(value) && value == std::floor(value) && std::fabs(value) < 9e15) {
            out = static_cast<int64_t>(value);
            return;
        }
    }
    throw fieldError(source, key, "must be an integer, got " + describe(*it));
}

void readDouble(const json &object, const char *key, double &out, const std::string &source)
{
    const auto it = object.find(key);
    if (it == object.end())
        return;
    if (!it->is_number())
        throw fieldError(source, key, "must be a number, got " + describe(*it));
    out = it->get<double>();
}

void readBool(const json &object, const char *key, bool &out, const std::string &source)
{
    const auto it = object.find(key);
    if (it == object.end())
        return;
    if (!it->is_boolean())
        throw fieldError(source, key, "must be true or false, got " + describe(*it));
    out = it->get<bool>();
}

void readString(const json &object, const char *key, std::string &out, const std::string &source)
{
    const auto it = object.find(key);
    if (it == object.end())
        return;
    if (!it->is_string())
        throw fieldError(source, key, "must be a string, got " + describe(*it));
    out = it->get<std::string>();
}

// bos/eos ids: an integer, null (no such token: -1) or, as in Llama 3, a list whose first entry is used.
void readTokenId(const json &object, const char *key, int64_t &out, const std::string &source)
{
    const auto it = object.find(key);
    if (it == object.end())
        return;
    if (it->is_null()) {
        out = -1;
        return;
    }
    if (it->is_array()) {
        if (it->empty() || !it->front().is_number_integer())
            throw fieldError(source, key, "must be an integer or a list of integers, got " + describe(*it));
        for (const json &entry : *it) {
            if (!entry.is_number_integer())
                throw fieldError(source, key, "must be an integer or a list of integers, got " + describe(*it));
        }
        out = it->front().get<int64_t>();
        return;
    }
    if (!it->is_number_integer())
        throw fieldError(source, key, "must be an integer, got " + describe(*it));
    out = it->get<int64_t>();
}

// A boolean feature flag that the model does not implement when true.
void refuseTrue(const json &object, const char *key, const std::string &source, const std::string &why)
{
    bool value = false;
    readBool(object, key, value, source);
    if (value)
        throw fieldError(source, key, "is true: " + why + " is not supported yet");
}

void checkRange(const std::string &source, const char *field, int64_t value, int64_t low, int64_t high)
{
    if (value < low || value > high) {
        throw fieldError(source, field,
                         "is " + std::to_string(value) + ", must be between " + std::to_string(low) + " and "
                             + std::to_string(high));
    }
}

} // namespace

int64_t LlamaConfig::effectiveHeadDim() const
{
    if (headDim > 0)
        return headDim;
    return numAttentionHeads > 0 ? hiddenSize / numAttentionHeads : 0;
}

int64_t LlamaConfig::parameterCount() const
{
    const int64_t head = effectiveHeadDim();
    const int64_t qWidth = numAttentionHeads * head;
    const int64_t kvWidth = numKeyValueHeads * head;
    const int64_t attention = hiddenSize * qWidth + 2 * hiddenSize * kvWidth + qWidth * hiddenSize;
    const int64_t mlp = 3 * hiddenSize * intermediateSize;
    const int64_t norms = 2 * hiddenSize;
    const int64_t embeddings = vocabSize * hiddenSize;
    return embeddings + numHiddenLayers * (attention + mlp + norms) + hiddenSize
        + (tieWordEmbeddings ? 0 : embeddings);
}

void LlamaConfig::validate(const std::string &source) const
{
    if (!modelType.empty() && modelType != "llama")
        throw fieldError(source, "model_type", "is \"" + modelType + "\": " + modelType + " is not supported yet");
    checkRange(source, "vocab_size", vocabSize, 1, kMaxVocab);
    checkRange(source, "hidden_size", hiddenSize, 1, kMaxHidden);
    checkRange(source, "intermediate_size", intermediateSize, 1, kMaxIntermediate);
    checkRange(source, "num_hidden_layers", numHiddenLayers, 1, kMaxLayers);
    checkRange(source, "num_attention_heads", numAttentionHeads, 1, kMaxHidden);
    checkRange(source, "num_key_value_heads", numKeyValueHeads, 1, numAttentionHeads);
    if (headDim != 0)
        checkRange(source, "head_dim", headDim, 1, kMaxHeadDim);
    else if (hiddenSize % numAttentionHeads != 0) {
        throw fieldError(source, "num_attention_heads",
                         "is " + std::to_string(numAttentionHeads) + ", which does not divide hidden_size "
                             + std::to_string(hiddenSize) + " (and head_dim is not given)");
    }
    if (numAttentionHeads % numKeyValueHeads != 0) {
        throw fieldError(source, "num_key_value_heads",
                         "is " + std::to_string(numKeyValueHeads) + ", which does not divide num_attention_heads "
                             + std::to_string(numAttentionHeads));
    }
    const int64_t head = effectiveHeadDim();
    if (head % 2 != 0) {
        throw fieldError(source, headDim != 0 ? "head_dim" : "num_attention_heads",
                         "gives a head dimension of " + std::to_string(head)
                             + ", which must be even for rotary position embeddings");
    }
    if (numAttentionHeads * head > kMaxHidden) {
        throw fieldError(source, "head_dim",
                         "times num_attention_heads is " + std::to_string(numAttentionHeads * head)
                             + ", more than the limit " + std::to_string(kMaxHidden));
    }
    checkRange(source, "max_position_embeddings", maxPositionEmbeddings, 1, kMaxPositions);
    if (!(rmsNormEps > 0.0 && rmsNormEps < 1.0))
        throw fieldError(source, "rms_norm_eps", "is " + std::to_string(rmsNormEps) + ", must be > 0 and < 1");
    if (!(ropeTheta > 0.0 && std::isfinite(ropeTheta)))
        throw fieldError(source, "rope_theta", "is " + std::to_string(ropeTheta) + ", must be a positive number");
    if (!(initializerRange >= 0.0 && initializerRange <= 10.0)) {
        throw fieldError(source, "initializer_range",
                         "is " + std::to_string(initializerRange) + ", must be between 0 and 10");
    }
    if (hiddenAct != "silu")
        throw fieldError(source, "hidden_act", "is \"" + hiddenAct + "\": only \"silu\" is supported");
    checkRange(source, "bos_token_id", bosTokenId, -1, vocabSize - 1);
    checkRange(source, "eos_token_id", eosTokenId, -1, vocabSize - 1);
}

LlamaConfig LlamaConfig::fromJson(const json &object, const std::string &source)
{
    if (!object.is_object())
        throw invalidInput(source + ": a model config must be a JSON object, got " + describe(object));

    LlamaConfig config;
    config.modelType = "llama";
    readString(object, "model_type", config.modelType, source);
    if (config.modelType.empty())
        config.modelType = "llama";
    if (config.modelType != "llama") {
        throw fieldError(source, "model_type",
                         "is \"" + config.modelType + "\": " + config.modelType
                             + " is not supported yet (supported: llama)");
    }

    readInt(object, "vocab_size", config.vocabSize, source);
    readInt(object, "hidden_size", config.hiddenSize, source);
    readInt(object, "intermediate_size", config.intermediateSize, source);
    readInt(object, "num_hidden_layers", config.numHiddenLayers, source);
    readInt(object, "num_attention_heads", config.numAttentionHeads, source);
    config.numKeyValueHeads = config.numAttentionHeads;
    readInt(object, "num_key_value_heads", config.numKeyValueHeads, source, true);
    readInt(object, "head_dim", config.headDim, source, true);
    // transformers writes head_dim = hidden_size / heads into every config it saves; 0 keeps the default.
    if (config.headDim > 0 && config.headDim <= kMaxHeadDim && config.numAttentionHeads > 0
        && config.numAttentionHeads <= kMaxHidden && config.headDim * config.numAttentionHeads == config.hiddenSize)
        config.headDim = 0;
    readInt(object, "max_position_embeddings", config.maxPositionEmbeddings, source);
    readDouble(object, "rms_norm_eps", config.rmsNormEps, source);
    readDouble(object, "rope_theta", config.ropeTheta, source);
    config.tieWordEmbeddings = false;
    readBool(object, "tie_word_embeddings", config.tieWordEmbeddings, source);
    readString(object, "hidden_act", config.hiddenAct, source);
    readTokenId(object, "bos_token_id", config.bosTokenId, source);
    readTokenId(object, "eos_token_id", config.eosTokenId, source);
    readDouble(object, "initializer_range", config.initializerRange, source);

    if (const auto it = object.find("rope_scaling"); it != object.end() && !it->is_null())
        throw fieldError(source, "rope_scaling", "is set (" + describe(*it) + "): RoPE scaling is not supported yet");
    refuseTrue(object, "attention_bias", source, "a bias on the attention projections");
    refuseTrue(object, "mlp_bias", source, "a bias on the MLP projections");
    if (const auto it = object.find("attention_dropout"); it != object.end() && !it->is_null()) {
        if (!it->is_number())
            throw fieldError(source, "attention_dropout", "must be a number, got " + describe(*it));
        if (it->get<double>() != 0.0)
            throw fieldError(source, "attention_dropout", "is " + it->dump() + ": attention dropout is not supported yet");
    }

    config.validate(source);
    return config;
}

LlamaConfig LlamaConfig::fromFile(const std::filesystem::path &path)
{
    std::filesystem::path file = path;
    std::error_code ec;
    if (std::filesystem::is_directory(path, ec))
        file = path / "config.json";
    const std::string text = readFile(file);
    json object;
    try {
        object = json::parse(text);
    } catch (const json::parse_error &e) {
        throw invalidInput(file.string() + ": invalid JSON: " + e.what());
    }
    return fromJson(object, file.string());
}

json LlamaConfig::toJson() const
{
    json object = {
        {"architectures", json::array({"LlamaForCausalLM"})},
        {"model_type", modelType.empty() ? std::string("llama") : modelType},
        {"vocab_size", vocabSize},
        {"hidden_size", hiddenSize},
        {"intermediate_size", intermediateSize},
        {"num_hidden_layers", numHiddenLayers},
        {"num_attention_heads", numAttentionHeads},
        {"num_key_value_heads", numKeyValueHeads},
        {"head_dim", effectiveHeadDim()},
        {"max_position_embeddings", maxPositionEmbeddings},
        {"rms_norm_eps", rmsNormEps},
        {"rope_theta", ropeTheta},
        {"rope_scaling", nullptr},
        {"attention_bias", false},
        {"mlp_bias", false},
        {"attention_dropout", 0.0},
        {"tie_word_embeddings", tieWordEmbeddings},
        {"hidden_act", hiddenAct},
        {"initializer_range", initializerRange},
    };
    object["bos_token_id"] = bosTokenId >= 0 ? json(bosTokenId) : json(nullptr);
    object["eos_token_id"] = eosTokenId >= 0 ? json(eosTokenId) : json(nullptr);
    return object;
}

LlamaConfig demoConfig()
{
    LlamaConfig config;
    config.vocabSize = 2048;
    config.hiddenSize = 192;
    config.intermediateSize = 512;
    config.numHiddenLayers = 4;
    config.numAttentionHeads = 6;
    config.numKeyValueHeads = 2;
    config.headDim = 0;
    config.maxPositionEmbeddings = 512;
    config.rmsNormEps = 1e-5;
    config.ropeTheta = 10000.0;
    config.tieWordEmbeddings = true;
    config.bosTokenId = 1;
    config.eosTokenId = 2;
    config.initializerRange = 0.02;
    return config;
}

} // namespace engine::model
