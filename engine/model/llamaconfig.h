#pragma once
// Configuration of a LLaMA-family causal LM, read from a Hugging Face style config.json.
// Torch-free: the planner, the CLI and the UI read it without compiling torch headers.

#include <cstdint>
#include <filesystem>
#include <string>

#include <nlohmann/json_fwd.hpp>

namespace engine::model {

/// The fields of transformers' LlamaConfig that the engine's model uses. Names follow config.json.
struct LlamaConfig {
    std::string modelType = "llama";
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
    bool tieWordEmbeddings = false;
    std::string hiddenAct = "silu";
    int64_t bosTokenId = 1;
    int64_t eosTokenId = 2;
    double initializerRange = 0.02;

    /// headDim, or hiddenSize / numAttentionHeads when headDim is 0.
    int64_t effectiveHeadDim() const;
    /// Number of parameters (tied embeddings counted once).
    int64_t parameterCount() const;

    /// Throws Error(InvalidInput) naming `source` and the field when a value is impossible
    /// (non-positive sizes, heads that do not divide the hidden size, kv heads that do not divide heads).
    void validate(const std::string &source) const;

    /// Parses a config.json object. Unknown keys are ignored; features the model does not implement
    /// (rope_scaling, attention_bias, another hidden_act) are refused by name. `source` names the file.
    static LlamaConfig fromJson(const nlohmann::json &json, const std::string &source);
    /// Reads `path`: a config.json file or a folder that holds one.
    static LlamaConfig fromFile(const std::filesystem::path &path);
    /// The config.json object for this config (transformers' key names).
    nlohmann::json toJson() const;
};

/// The built-in demo model: ~1.97 M parameters (tied embeddings), a loss that falls visibly within a minute on 2 cores.
LlamaConfig demoConfig();

} // namespace engine::model
