#include "engine/model/llamaconfig.h"

#include "engine/core/error.h"
#include "engine/model/configfields.h"

#include <cmath>
#include <limits>

#include <nlohmann/json.hpp>

namespace engine::model {
namespace {

using nlohmann::json;
using configfields::checkRange;
using configfields::kMaxHeadDim;
using configfields::kMaxHidden;
using configfields::kMaxIntermediate;
using configfields::kMaxLayers;
using configfields::kMaxPositions;
using configfields::kMaxVocab;
using configfields::describe;
using configfields::fieldError;
using configfields::readBool;
using configfields::readDouble;
using configfields::readInt;
using configfields::readString;


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

// The LLaMA-family architectures and what each declares differently; the model, the module tree and the
// planner read these through LlamaConfig instead of testing model_type names.
struct FamilyMember {
    const char *modelType;
    const char *classPrefix;   // transformers' class names: <prefix>ForCausalLM, <prefix>Attention, ...
    const char *modelClass;    // the decoder stack's class when not <prefix>Model (Gemma3TextModel)
    bool alwaysQkvBias;        // q/k/v biases whatever attention_bias says (qwen2)
    bool attentionBiasKey;     // the config class has attention_bias (biases on q, k, v and o)
    bool qkNorm;               // per-head RMSNorm of q and k before rotary (qwen3, gemma3)
    bool normOffset;           // RMSNorm x * (1 + w), w initialized 0 (gemma)
    bool feedforwardNorms;     // pre/post feed-forward norms; post_attention_layernorm on the attention output (gemma)
    bool scaledEmbedding;      // embeddings times sqrt(hidden_size) (gemma)
    bool slidingWindowKey;     // the config class's sliding_window applies to its sliding layers (mistral, gemma)
    const char *activationKey; // the MLP activation's key: hidden_act, or gemma's hidden_activation
    const char *embeddingClass; // model.embed_tokens' class when not nn.Embedding (holds an embed_scale buffer)
    bool fusedProjections;      // one qkv_proj (registered after o_proj) and one gate_up_proj (phi3)
    bool partialRotary;         // the config class has partial_rotary_factor (phi3)
};

constexpr FamilyMember kFamily[] = {
    {"llama", "Llama", nullptr, false, true, false, false, false, false, false, "hidden_act", nullptr, false, false},
    {"mistral", "Mistral", nullptr, false, false, false, false, false, false, true, "hidden_act", nullptr, false, false},
    {"qwen2", "Qwen2", nullptr, true, false, false, false, false, false, false, "hidden_act", nullptr, false, false},
    {"qwen3", "Qwen3", nullptr, false, true, true, false, false, false, false, "hidden_act", nullptr, false, false},
    // Gemma2Model multiplies by a normalizer in forward; Gemma3TextModel's embedding holds it as a buffer.
    {"gemma2", "Gemma2", nullptr, false, true, false, true, true, true, true, "hidden_activation", nullptr, false,
     false},
    {"gemma3_text", "Gemma3", "Gemma3TextModel", false, true, true, true, true, true, true, "hidden_activation",
     "Gemma3TextScaledWordEmbedding", false, false},
    // Phi3Attention registers o_proj before qkv_proj; Phi3MLP gate_up_proj (gate rows first), down_proj.
    {"phi3", "Phi3", nullptr, false, false, false, false, false, false, true, "hidden_act", nullptr, true, true},
};

const FamilyMember *familyMember(const std::string &modelType)
{
    for (const FamilyMember &member : kFamily) {
        if (modelType == member.modelType)
            return &member;
    }
    return nullptr;
}

// The default (empty model_type) is llama, as the reader's.
const FamilyMember &memberOf(const std::string &modelType)
{
    const FamilyMember *member = familyMember(modelType.empty() ? std::string("llama") : modelType);
    return member ? *member : kFamily[0];
}

// Qwen3Config makes layers max_window_layers.. sliding-window layers when use_sliding_window is true, or
// names each layer's kind in layer_types; only full attention is implemented, so either is refused
// where it would make a layer slide (a use_sliding_window that reaches no layer changes nothing).
void refuseQwen3SlidingLayers(const json &object, int64_t layers, const std::string &source)
{
    if (const auto it = object.find("layer_types"); it != object.end() && !it->is_null()) {
        if (!it->is_array())
            throw fieldError(source, "layer_types", "must be a list of strings, got " + describe(*it));
        for (const json &kind : *it) {
            if (kind != "full_attention") {
                throw fieldError(source, "layer_types",
                                 "holds " + kind.dump() + ": only \"full_attention\" layers are supported (Qwen3's "
                                                          "sliding-window layers are not supported yet)");
            }
        }
        return;
    }
    bool useSlidingWindow = false;
    readBool(object, "use_sliding_window", useSlidingWindow, source);
    int64_t maxWindowLayers = 28; // Qwen3Config's default
    readInt(object, "max_window_layers", maxWindowLayers, source, true);
    const auto window = object.find("sliding_window");
    const bool hasWindow = window == object.end() || !window->is_null(); // the class default is 4096
    if (useSlidingWindow && hasWindow && maxWindowLayers < layers) {
        throw fieldError(source, "use_sliding_window",
                         "is true: Qwen3's sliding-window attention layers (layers " + std::to_string(maxWindowLayers)
                             + " and above, from max_window_layers) are not supported yet");
    }
}

bool isSupportedType(const std::string &modelType)
{
    return familyMember(modelType) != nullptr;
}

// "llama, mistral, qwen2, qwen3", for messages.
std::string supportedList()
{
    std::string list;
    for (const FamilyMember &member : kFamily)
        list += std::string(list.empty() ? "" : ", ") + member.modelType;
    return list;
}

// The defaults of transformers' LlamaConfig, MistralConfig, Qwen2Config and Qwen3Config for keys a
// config.json omits.
LlamaConfig classDefaults(const std::string &modelType)
{
    LlamaConfig config;
    config.modelType = modelType;
    if (modelType == "mistral") {
        config.intermediateSize = 14336;
        config.numKeyValueHeads = 8;
        config.maxPositionEmbeddings = 4096 * 32;
        config.slidingWindow = 4096;
    } else if (modelType == "qwen2" || modelType == "qwen3") {
        config.vocabSize = 151936;
        config.intermediateSize = 22016;
        config.maxPositionEmbeddings = 32768;
        config.bosTokenId = -1;
        config.eosTokenId = -1;
    }
    // Qwen3Config's head_dim defaults to 128, not hidden_size / num_attention_heads.
    if (modelType == "qwen3")
        config.headDim = 128;
    if (modelType == "phi3") {
        config.vocabSize = 32064;
        config.hiddenSize = 3072;
        config.intermediateSize = 8192;
        config.maxPositionEmbeddings = 4096;
        config.rmsNormEps = 1e-5;
        config.eosTokenId = 32000;
    }
    if (modelType == "gemma2" || modelType == "gemma3_text") {
        config.vocabSize = modelType == "gemma2" ? 256000 : 262208;
        config.hiddenSize = 2304;
        config.intermediateSize = 9216;
        config.numHiddenLayers = 26;
        config.numAttentionHeads = 8;
        config.numKeyValueHeads = 4;
        config.headDim = 256;
        config.maxPositionEmbeddings = modelType == "gemma2" ? 8192 : 131072;
        config.ropeTheta = modelType == "gemma2" ? 10000.0 : 1000000.0;
        config.tieWordEmbeddings = true;
        config.hiddenAct = "gelu_pytorch_tanh";
        config.bosTokenId = 2;
        config.eosTokenId = 1;
        config.queryPreAttnScalar = 256;
        config.slidingWindow = 4096;
        config.slidingWindowPattern = modelType == "gemma2" ? 2 : 6; // gemma2: even layers slide
        if (modelType == "gemma2") {
            config.attnLogitSoftcapping = 50.0;
            config.finalLogitSoftcapping = 30.0;
        } else {
            config.ropeLocalBaseFreq = 10000.0;
        }
    }
    return config;
}

// A number inside rope_scaling: `field` is the full name used in messages ("rope_scaling.factor").
double readRopeNumber(const json &scaling, const char *key, const std::string &field, const std::string &type,
                      const std::string &source)
{
    const auto it = scaling.find(key);
    if (it == scaling.end() || it->is_null())
        throw fieldError(source, field, "is missing: RoPE scaling \"" + type + "\" needs it");
    if (!it->is_number())
        throw fieldError(source, field, "must be a number, got " + describe(*it));
    return it->get<double>();
}

// rope_scaling (transformers 4.x) or rope_parameters (transformers 5, which also holds rope_theta).
void readRope(const json &object, LlamaConfig &config, const std::string &source)
{
    const char *key = "rope_scaling";
    auto it = object.find("rope_parameters");
    if (it != object.end() && !it->is_null()) {
        key = "rope_parameters";
        if (!it->is_object())
            throw fieldError(source, key, "must be an object, got " + describe(*it));
        if (it->contains("rope_theta"))
            readDouble(*it, "rope_theta", config.ropeTheta, source);
    } else {
        it = object.find("rope_scaling");
        if (it == object.end() || it->is_null())
            return;
        if (!it->is_object())
            throw fieldError(source, key, "must be an object or null, got " + describe(*it));
    }
    const json &scaling = *it;
    const std::string prefix = std::string(key) + ".";
    std::string type;
    std::string legacyType;
    readString(scaling, "rope_type", type, source);
    readString(scaling, "type", legacyType, source);
    if (!type.empty() && !legacyType.empty() && type != legacyType) {
        throw fieldError(source, prefix + "rope_type",
                         "is \"" + type + "\" but " + prefix + "type is \"" + legacyType + "\"");
    }
    if (type.empty())
        type = legacyType;
    if (type.empty() || type == "default")
        return;
    if (type != "linear" && type != "llama3") {
        throw fieldError(source, prefix + "rope_type",
                         "is \"" + type + "\": this RoPE scaling is not supported (supported: linear, llama3)");
    }
    RopeScaling &rope = config.ropeScaling;
    rope.type = type;
    rope.factor = readRopeNumber(scaling, "factor", prefix + "factor", type, source);
    if (type == "llama3") {
        rope.lowFreqFactor = readRopeNumber(scaling, "low_freq_factor", prefix + "low_freq_factor", type, source);
        rope.highFreqFactor = readRopeNumber(scaling, "high_freq_factor", prefix + "high_freq_factor", type, source);
        const double original = readRopeNumber(scaling, "original_max_position_embeddings",
                                               prefix + "original_max_position_embeddings", type, source);
        if (!(original >= 1.0 && original <= double(kMaxPositions) && original == std::floor(original))) {
            throw fieldError(source, prefix + "original_max_position_embeddings",
                             "is " + scaling.at("original_max_position_embeddings").dump()
                                 + ", must be an integer between 1 and " + std::to_string(kMaxPositions));
        }
        rope.originalMaxPositionEmbeddings = static_cast<int64_t>(original);
    }
}

// A number or null (0 = off) for a soft-cap; a cap must be positive.
void readSoftcap(const json &object, const char *key, double &out, const std::string &source)
{
    const auto it = object.find(key);
    if (it == object.end())
        return;
    if (it->is_null()) {
        out = 0;
        return;
    }
    readDouble(object, key, out, source);
    if (!(out > 0.0 && std::isfinite(out)))
        throw fieldError(source, key, "is " + it->dump() + ", must be a positive number or null");
}

// layer_types: one "sliding_attention" or "full_attention" per layer.
void readLayerTypes(const json &object, LlamaConfig &config, const std::string &source)
{
    const auto it = object.find("layer_types");
    if (it == object.end() || it->is_null())
        return;
    if (!it->is_array())
        throw fieldError(source, "layer_types", "must be a list of strings, got " + describe(*it));
    config.layerTypes.clear();
    for (const json &kind : *it) {
        if (kind != "sliding_attention" && kind != "full_attention") {
            throw fieldError(source, "layer_types",
                             "holds " + kind.dump() + ": only \"sliding_attention\" and \"full_attention\" are supported");
        }
        config.layerTypes.push_back(kind.get<std::string>());
    }
}

// Gemma3TextConfig's rope_parameters of transformers 5: one set per layer type. The full layers' set holds
// rope_theta and the scaling; the sliding layers' only their base (default RoPE), as rope_local_base_freq.
void readGemma3RopeParameters(const json &parameters, LlamaConfig &config, const std::string &source)
{
    for (const auto &[kind, set] : parameters.items()) {
        if (kind != "full_attention" && kind != "sliding_attention")
            throw fieldError(source, "rope_parameters." + kind, "is not a layer type (full_attention, sliding_attention)");
        if (!set.is_object())
            throw fieldError(source, "rope_parameters." + kind, "must be an object, got " + describe(set));
    }
    if (const auto full = parameters.find("full_attention"); full != parameters.end())
        readRope(json{{"rope_parameters", *full}}, config, source);
    if (const auto local = parameters.find("sliding_attention"); local != parameters.end()) {
        std::string type = "default";
        readString(*local, "rope_type", type, source);
        if (type != "default") {
            throw fieldError(source, "rope_parameters.sliding_attention.rope_type",
                             "is \"" + type + "\": only default RoPE on the sliding layers is supported");
        }
        readDouble(*local, "rope_theta", config.ropeLocalBaseFreq, source);
    }
}

// What Gemma2Config and Gemma3TextConfig add: soft-caps, the query scale, which layers slide and gemma3's
// local rotary base. Keys that would change the maths and are not implemented are refused by name.
void readGemma(const json &object, LlamaConfig &config, const std::string &source)
{
    readDouble(object, "query_pre_attn_scalar", config.queryPreAttnScalar, source);
    readSoftcap(object, "attn_logit_softcapping", config.attnLogitSoftcapping, source);
    readSoftcap(object, "final_logit_softcapping", config.finalLogitSoftcapping, source);
    readLayerTypes(object, config, source);
    if (config.modelType != "gemma3_text")
        return;
    // Gemma3Attention does not pass attn_logit_softcapping on to its attention in current transformers.
    if (config.attnLogitSoftcapping != 0) {
        throw fieldError(source, "attn_logit_softcapping",
                         "is set: Gemma3's attention logit soft-capping is not supported (transformers' Gemma3Attention "
                         "does not apply it)");
    }
    readDouble(object, "rope_local_base_freq", config.ropeLocalBaseFreq, source);
    if (object.contains("sliding_window_pattern"))
        readInt(object, "sliding_window_pattern", config.slidingWindowPattern, source);
    else if (object.contains("_sliding_window_pattern"))
        readInt(object, "_sliding_window_pattern", config.slidingWindowPattern, source);
    checkRange(source, "sliding_window_pattern", config.slidingWindowPattern, 1, kMaxLayers);
    refuseTrue(object, "use_bidirectional_attention", source, "Gemma3's bidirectional attention");
}

} // namespace

int64_t LlamaConfig::effectiveHeadDim() const
{
    if (headDim > 0)
        return headDim;
    return numAttentionHeads > 0 ? hiddenSize / numAttentionHeads : 0;
}

bool LlamaConfig::hasQkvBias() const
{
    return memberOf(modelType).alwaysQkvBias || attentionBias;
}

bool LlamaConfig::hasOutputBias() const
{
    return !memberOf(modelType).alwaysQkvBias && attentionBias;
}

bool LlamaConfig::hasQkNorm() const
{
    return memberOf(modelType).qkNorm;
}

bool LlamaConfig::hasFusedProjections() const
{
    return memberOf(modelType).fusedProjections;
}

int64_t LlamaConfig::rotaryDim() const
{
    return static_cast<int64_t>(static_cast<double>(effectiveHeadDim()) * partialRotaryFactor);
}

bool LlamaConfig::hasNormOffset() const
{
    return memberOf(modelType).normOffset;
}

bool LlamaConfig::hasFeedforwardNorms() const
{
    return memberOf(modelType).feedforwardNorms;
}

double LlamaConfig::embeddingScale() const
{
    return memberOf(modelType).scaledEmbedding ? std::sqrt(static_cast<double>(hiddenSize)) : 1.0;
}

std::string LlamaConfig::embeddingClassName() const
{
    const char *name = memberOf(modelType).embeddingClass;
    return name ? name : "Embedding";
}

double LlamaConfig::attentionScale() const
{
    const double scalar = queryPreAttnScalar > 0 ? queryPreAttnScalar : static_cast<double>(effectiveHeadDim());
    return 1.0 / std::sqrt(scalar);
}

bool LlamaConfig::isSlidingLayer(int64_t layer) const
{
    if (!layerTypes.empty())
        return layer >= 0 && layer < static_cast<int64_t>(layerTypes.size()) && layerTypes[layer] == "sliding_attention";
    if (slidingWindowPattern > 0)
        return (layer + 1) % slidingWindowPattern != 0;
    return true;
}

int64_t LlamaConfig::attentionWindow(int64_t layer) const
{
    return isSlidingLayer(layer) ? slidingWindow : 0;
}

double LlamaConfig::rotaryBase(int64_t layer) const
{
    return ropeLocalBaseFreq > 0 && isSlidingLayer(layer) ? ropeLocalBaseFreq : ropeTheta;
}

RopeScaling LlamaConfig::rotaryScaling(int64_t layer) const
{
    return ropeLocalBaseFreq > 0 && isSlidingLayer(layer) ? RopeScaling{} : ropeScaling;
}

std::string LlamaConfig::className(const std::string &suffix) const
{
    const FamilyMember &member = memberOf(modelType);
    if (suffix == "Model" && member.modelClass)
        return member.modelClass;
    return member.classPrefix + suffix;
}

bool isLlamaFamily(const std::string &modelType)
{
    return isSupportedType(modelType);
}

int64_t LlamaConfig::parameterCount() const
{
    const int64_t head = effectiveHeadDim();
    const int64_t qWidth = numAttentionHeads * head;
    const int64_t kvWidth = numKeyValueHeads * head;
    const int64_t attention = hiddenSize * qWidth + 2 * hiddenSize * kvWidth + qWidth * hiddenSize
        + (hasQkvBias() ? qWidth + 2 * kvWidth : 0) + (hasOutputBias() ? hiddenSize : 0);
    // phi3's fused qkv_proj and gate_up_proj hold as many weights as the separate projections.
    const int64_t mlp = 3 * hiddenSize * intermediateSize + (mlpBias ? 2 * intermediateSize + hiddenSize : 0);
    const int64_t norms = (hasFeedforwardNorms() ? 4 : 2) * hiddenSize + (hasQkNorm() ? 2 * head : 0);
    const int64_t embeddings = vocabSize * hiddenSize;
    return embeddings + numHiddenLayers * (attention + mlp + norms) + hiddenSize
        + (tieWordEmbeddings ? 0 : embeddings);
}

void LlamaConfig::validate(const std::string &source) const
{
    if (!modelType.empty() && !isSupportedType(modelType)) {
        throw fieldError(source, "model_type",
                         "is \"" + modelType + "\": " + modelType + " is not supported yet (supported: "
                             + supportedList() + ")");
    }
    if (mlpBias && !modelType.empty() && modelType != "llama")
        throw fieldError(source, "mlp_bias", "is true: " + className("MLP") + " has no mlp_bias option (only llama's has)");
    if (attentionBias && !memberOf(modelType).attentionBiasKey) {
        throw fieldError(source, "attention_bias",
                         "is true: " + className("Attention")
                             + " has no attention_bias option (llama's and qwen3's have)");
    }
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
    if (!(partialRotaryFactor > 0.0 && partialRotaryFactor <= 1.0) || rotaryDim() < 2 || rotaryDim() % 2 != 0) {
        throw fieldError(source, "partial_rotary_factor",
                         "is " + std::to_string(partialRotaryFactor) + ": the rotary part of head_dim "
                             + std::to_string(head) + " must be a positive even number of dimensions");
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
    const char *activationKey = memberOf(modelType).activationKey;
    if (hiddenAct != "silu" && hiddenAct != "gelu_pytorch_tanh") {
        throw fieldError(source, activationKey,
                         "is \"" + hiddenAct + "\": only \"silu\" and \"gelu_pytorch_tanh\" are supported");
    }
    if (slidingWindow != 0) {
        if (!memberOf(modelType).slidingWindowKey)
            throw fieldError(source, "sliding_window", "is set: only mistral's and gemma's sliding windows are supported");
        checkRange(source, "sliding_window", slidingWindow, 1, kMaxPositions);
    }
    checkRange(source, "sliding_window_pattern", slidingWindowPattern, 0, kMaxLayers);
    if (!layerTypes.empty() && static_cast<int64_t>(layerTypes.size()) != numHiddenLayers) {
        throw fieldError(source, "layer_types",
                         "holds " + std::to_string(layerTypes.size()) + " entries for " + std::to_string(numHiddenLayers)
                             + " layers");
    }
    for (const auto &[field, value] : {std::pair<const char *, double>{"query_pre_attn_scalar", queryPreAttnScalar},
                                       {"attn_logit_softcapping", attnLogitSoftcapping},
                                       {"final_logit_softcapping", finalLogitSoftcapping},
                                       {"rope_local_base_freq", ropeLocalBaseFreq}}) {
        if (!(value >= 0.0 && std::isfinite(value)))
            throw fieldError(source, field, "is " + std::to_string(value) + ", must be a positive number");
    }
    if (!ropeScaling.type.empty()) {
        const RopeScaling &rope = ropeScaling;
        if (rope.type != "linear" && rope.type != "llama3") {
            throw fieldError(source, "rope_scaling.rope_type",
                             "is \"" + rope.type + "\": this RoPE scaling is not supported (supported: linear, llama3)");
        }
        if (!(rope.factor > 0.0 && std::isfinite(rope.factor)))
            throw fieldError(source, "rope_scaling.factor", "is " + std::to_string(rope.factor) + ", must be a positive number");
        if (rope.type == "llama3") {
            if (!(rope.lowFreqFactor > 0.0 && std::isfinite(rope.lowFreqFactor))) {
                throw fieldError(source, "rope_scaling.low_freq_factor",
                                 "is " + std::to_string(rope.lowFreqFactor) + ", must be a positive number");
            }
            if (!(rope.highFreqFactor > rope.lowFreqFactor && std::isfinite(rope.highFreqFactor))) {
                throw fieldError(source, "rope_scaling.high_freq_factor",
                                 "is " + std::to_string(rope.highFreqFactor) + ", must be larger than low_freq_factor "
                                     + std::to_string(rope.lowFreqFactor));
            }
            checkRange(source, "rope_scaling.original_max_position_embeddings", rope.originalMaxPositionEmbeddings, 1,
                       kMaxPositions);
        }
    }
    checkRange(source, "bos_token_id", bosTokenId, -1, vocabSize - 1);
    checkRange(source, "eos_token_id", eosTokenId, -1, vocabSize - 1);
}

LlamaConfig LlamaConfig::fromJson(const json &object, const std::string &source)
{
    if (!object.is_object())
        throw invalidInput(source + ": a model config must be a JSON object, got " + describe(object));

    std::string modelType = "llama";
    readString(object, "model_type", modelType, source);
    if (modelType.empty())
        modelType = "llama";
    if (modelType == "gemma3") {
        throw fieldError(source, "model_type",
                         "is \"gemma3\": the multimodal Gemma3ForConditionalGeneration (its text_config inside) is not "
                         "supported yet; a text-only Gemma 3 folder has model_type \"gemma3_text\"");
    }
    if (!isSupportedType(modelType)) {
        throw fieldError(source, "model_type",
                         "is \"" + modelType + "\": " + modelType
                             + " is not supported yet (supported: " + supportedList() + ")");
    }
    LlamaConfig config = classDefaults(modelType);
    const FamilyMember &member = memberOf(modelType);

    readInt(object, "vocab_size", config.vocabSize, source);
    readInt(object, "hidden_size", config.hiddenSize, source);
    readInt(object, "intermediate_size", config.intermediateSize, source);
    readInt(object, "num_hidden_layers", config.numHiddenLayers, source);
    readInt(object, "num_attention_heads", config.numAttentionHeads, source);
    // Missing: the class default (mistral 8, else num_attention_heads); null: num_attention_heads.
    if (modelType != "mistral" && !member.scaledEmbedding) // gemma's default is 4 as mistral's 8
        config.numKeyValueHeads = config.numAttentionHeads;
    if (const auto it = object.find("num_key_value_heads"); it != object.end() && it->is_null())
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
    const auto ropeParameters = object.find("rope_parameters");
    if (modelType == "gemma3_text" && ropeParameters != object.end() && ropeParameters->is_object()
        && (ropeParameters->contains("full_attention") || ropeParameters->contains("sliding_attention")))
        readGemma3RopeParameters(*ropeParameters, config, source);
    else
        readRope(object, config, source);
    readBool(object, "tie_word_embeddings", config.tieWordEmbeddings, source);
    readString(object, member.activationKey, config.hiddenAct, source); // gemma reads hidden_activation only
    readTokenId(object, "bos_token_id", config.bosTokenId, source);
    readTokenId(object, "eos_token_id", config.eosTokenId, source);
    readDouble(object, "initializer_range", config.initializerRange, source);

    if (modelType == "llama")
        readBool(object, "mlp_bias", config.mlpBias, source);
    if (memberOf(modelType).attentionBiasKey) {
        readBool(object, "attention_bias", config.attentionBias, source);
    } else if (const auto it = object.find("attention_bias"); it != object.end()) {
        // Not a key of MistralConfig / Qwen2Config: their attention layout is fixed. Refuse a contradiction.
        bool value = false;
        readBool(object, "attention_bias", value, source);
        if (value != (modelType == "qwen2")) {
            throw fieldError(source, "attention_bias",
                             std::string("is ") + (value ? "true" : "false") + ": " + config.className("Attention")
                                 + (modelType == "qwen2" ? " always has q/k/v biases and no o_proj bias"
                                                         : " has no biases"));
        }
    }
    if (member.slidingWindowKey) {
        if (const auto it = object.find("sliding_window"); it != object.end() && it->is_null())
            config.slidingWindow = 0;
        else if (object.contains("sliding_window")) {
            readInt(object, "sliding_window", config.slidingWindow, source);
            checkRange(source, "sliding_window", config.slidingWindow, 1, kMaxPositions); // 0 would hide every key
        }
    }
    if (modelType == "qwen2")
        refuseTrue(object, "use_sliding_window", source, "Qwen2's sliding-window attention layers");
    if (modelType == "qwen3")
        refuseQwen3SlidingLayers(object, config.numHiddenLayers, source);
    if (member.scaledEmbedding)
        readGemma(object, config, source);
    if (modelType != "llama")
        refuseTrue(object, "mlp_bias", source, "a bias on the MLP projections (only llama's config has mlp_bias)");
    if (member.partialRotary) {
        readDouble(object, "partial_rotary_factor", config.partialRotaryFactor, source);
        for (const char *key : {"resid_pdrop", "embd_pdrop"}) {
            double rate = 0;
            readDouble(object, key, rate, source);
            if (rate != 0.0)
                throw fieldError(source, key, "is " + object.at(key).dump() + ": Phi-3's residual and embedding dropout are not supported yet");
        }
    } else if (const auto it = object.find("partial_rotary_factor"); it != object.end() && !it->is_null()) {
        if (!it->is_number())
            throw fieldError(source, "partial_rotary_factor", "must be a number, got " + describe(*it));
        if (it->get<double>() != 1.0)
            throw fieldError(source, "partial_rotary_factor", "is " + it->dump() + ": partial rotary embeddings are not supported yet");
    }
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
    std::string source;
    const json object = configfields::readConfigFile(path, source);
    return fromJson(object, source);
}

json LlamaConfig::toJson() const
{
    const std::string type = modelType.empty() ? std::string("llama") : modelType;
    json object = {
        {"architectures", json::array({className("ForCausalLM")})},
        {"model_type", type},
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
        {"attention_dropout", 0.0},
        {"tie_word_embeddings", tieWordEmbeddings},
        {"hidden_act", hiddenAct},
        {"initializer_range", initializerRange},
    };
    if (!ropeScaling.type.empty()) {
        json rope = {{"rope_type", ropeScaling.type}, {"factor", ropeScaling.factor}};
        if (ropeScaling.type == "llama3") {
            rope["low_freq_factor"] = ropeScaling.lowFreqFactor;
            rope["high_freq_factor"] = ropeScaling.highFreqFactor;
            rope["original_max_position_embeddings"] = ropeScaling.originalMaxPositionEmbeddings;
        }
        object["rope_scaling"] = rope;
    }
    if (memberOf(type).attentionBiasKey)
        object["attention_bias"] = attentionBias;
    if (type == "llama") {
        object["mlp_bias"] = mlpBias;
    } else if (type == "mistral") {
        object["sliding_window"] = slidingWindow > 0 ? json(slidingWindow) : json(nullptr);
    } else if (type == "qwen2" || type == "qwen3") {
        object["use_sliding_window"] = false;
    }
    if (memberOf(type).partialRotary) {
        object["partial_rotary_factor"] = partialRotaryFactor;
        object["sliding_window"] = slidingWindow > 0 ? json(slidingWindow) : json(nullptr);
        object["resid_pdrop"] = 0.0;
        object["embd_pdrop"] = 0.0;
    }
    if (memberOf(type).scaledEmbedding) {
        object.erase("hidden_act");
        object["hidden_activation"] = hiddenAct;
        object["query_pre_attn_scalar"] = queryPreAttnScalar > 0 ? queryPreAttnScalar : double(effectiveHeadDim());
        object["attn_logit_softcapping"] = attnLogitSoftcapping > 0 ? json(attnLogitSoftcapping) : json(nullptr);
        object["final_logit_softcapping"] = finalLogitSoftcapping > 0 ? json(finalLogitSoftcapping) : json(nullptr);
        object["sliding_window"] = slidingWindow > 0 ? json(slidingWindow) : json(nullptr);
        json kinds = json::array();
        for (int64_t i = 0; i < numHiddenLayers; ++i)
            kinds.push_back(isSlidingLayer(i) ? "sliding_attention" : "full_attention");
        object["layer_types"] = kinds;
        if (type == "gemma3_text")
            object["rope_local_base_freq"] = ropeLocalBaseFreq;
    }
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
