#pragma once
// Configuration of a LLaMA-family causal LM (model_type llama, mistral, qwen2 or qwen3), read from a Hugging
// Face style config.json. Torch-free: the planner, the CLI and the UI read it without compiling torch
// headers. Keys a config.json omits take the defaults of that model_type's transformers config class.

#include <cstdint>
#include <filesystem>
#include <string>

#include <nlohmann/json_fwd.hpp>

namespace engine::model {

/// rope_scaling (or rope_parameters) of a config.json: none, "linear" or "llama3" (Llama 3.1).
struct RopeScaling {
    std::string type;                             ///< "" = none, "linear" or "llama3"
    double factor = 1.0;                          ///< linear: positions / factor; llama3: long-wavelength divisor
    double lowFreqFactor = 1.0;                   ///< llama3 only
    double highFreqFactor = 4.0;                  ///< llama3 only
    int64_t originalMaxPositionEmbeddings = 8192; ///< llama3 only

    bool operator==(const RopeScaling &) const = default;
};

/// The fields of transformers' LlamaConfig / MistralConfig / Qwen2Config / Qwen3Config that the engine's
/// model uses. Names follow config.json. What an architecture does differently (biases, q/k norm, class
/// names) is declared once per model_type in llamaconfig.cpp and read through the has...() functions.
struct LlamaConfig {
    std::string modelType = "llama"; ///< "llama", "mistral", "qwen2" or "qwen3"
    int64_t vocabSize = 32000;
    int64_t hiddenSize = 4096;
    int64_t intermediateSize = 11008;
    int64_t numHiddenLayers = 32;
    int64_t numAttentionHeads = 32;
    int64_t numKeyValueHeads = 32;   ///< GQA when smaller than numAttentionHeads
    int64_t headDim = 0;             ///< 0 = hiddenSize / numAttentionHeads
    int64_t maxPositionEmbeddings = 2048;
    double rmsNormEps = 1e-6;
    double ropeTheta = 10000.0;
    RopeScaling ropeScaling;
    bool attentionBias = false;      ///< llama's and qwen3's attention_bias: biases on q, k, v and o
    bool mlpBias = false;            ///< llama's mlp_bias: biases on gate_proj, up_proj and down_proj
    int64_t slidingWindow = 0;       ///< mistral: a query sees itself and the slidingWindow - 1 keys before it; 0 = all
    bool tieWordEmbeddings = false;
    std::string hiddenAct = "silu";
    int64_t bosTokenId = 1;
    int64_t eosTokenId = 2;
    double initializerRange = 0.02;

    /// headDim, or hiddenSize / numAttentionHeads when headDim is 0.
    int64_t effectiveHeadDim() const;
    /// q_proj, k_proj and v_proj carry biases (qwen2 always, llama with attention_bias).
    bool hasQkvBias() const;
    /// o_proj carries a bias (llama or qwen3 with attention_bias).
    bool hasOutputBias() const;
    /// Each head of q and k is RMS-normalized (weights q_norm and k_norm of head_dim) after the projection
    /// and before rotary: qwen3.
    bool hasQkNorm() const;
    /// The attention window of decoder layer `layer` (0-based): a query sees itself and the window - 1 keys
    /// before it; 0 = all earlier keys (full attention). Mistral: slidingWindow on every layer. The model's
    /// masks and the planner's activation and KV sizes read this, never slidingWindow directly.
    int64_t attentionWindow(int64_t layer) const;
    /// The transformers class names of this model_type: "LlamaForCausalLM", ...; `suffix` is
    /// "ForCausalLM", "Model", "DecoderLayer", "Attention", "MLP" or "RMSNorm".
    std::string className(const std::string &suffix) const;
    /// Number of parameters (tied embeddings counted once).
    int64_t parameterCount() const;

    /// Throws Error(InvalidInput) naming `source` and the field when a value is impossible
    /// (non-positive sizes, heads that do not divide the hidden size, kv heads that do not divide heads,
    /// bad rope_scaling values) or the model_type is not llama, mistral, qwen2 or qwen3.
    void validate(const std::string &source) const;

    /// Parses a config.json object of model_type llama, mistral, qwen2 or qwen3 (missing = llama). Unknown
    /// keys are ignored; features the model does not implement (another model_type, rope_scaling other than
    /// linear and llama3, mlp_bias, another hidden_act, qwen2's use_sliding_window, qwen3's sliding layers
    /// from use_sliding_window or layer_types, ...) are refused by name. `source` names the file.
    static LlamaConfig fromJson(const nlohmann::json &json, const std::string &source);
    /// Reads `path`: a config.json file or a folder that holds one.
    static LlamaConfig fromFile(const std::filesystem::path &path);
    /// The config.json object for this config (transformers' key names).
    nlohmann::json toJson() const;
};

/// Whether the engine's LLaMA-family model runs this model_type ("llama", "mistral", "qwen2", "qwen3").
bool isLlamaFamily(const std::string &modelType);

/// The built-in demo model: ~1.97 M parameters (tied embeddings), a loss that falls visibly within a minute on 2 cores.
LlamaConfig demoConfig();

} // namespace engine::model
