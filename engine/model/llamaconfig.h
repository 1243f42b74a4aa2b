#pragma once
// Configuration of a LLaMA-family causal LM (model_type llama, mistral, qwen2, qwen3, gemma2, gemma3_text or
// phi3), read from a Hugging Face style config.json. Torch-free: the planner, the CLI and the UI read it without
// compiling torch headers. Keys a config.json omits take the defaults of that model_type's transformers
// config class.

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

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

/// The fields of transformers' LlamaConfig / MistralConfig / Qwen2Config / Qwen3Config / Gemma2Config /
/// Gemma3TextConfig that the engine's model uses. Names follow config.json. What an architecture does
/// differently (biases, q/k norm, norm offset, extra norms, embedding scale, class names) is declared once
/// per model_type in llamaconfig.cpp and read through the has...() functions; what a config chooses
/// (soft-caps, per-layer windows and rotary bases) is a field here.
struct LlamaConfig {
    std::string modelType = "llama"; ///< "llama", "mistral", "qwen2", "qwen3", "gemma2", "gemma3_text", "phi3"
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
    /// A query of a sliding layer sees itself and the slidingWindow - 1 keys before it; 0 = all.
    int64_t slidingWindow = 0;
    /// Which layers slide (attentionWindow): 0 = every layer (mistral); n = all but every n-th (layer i is
    /// full when (i + 1) % n == 0: gemma2's alternation is 2, gemma3's sliding_window_pattern 6).
    int64_t slidingWindowPattern = 0;
    /// layer_types as a config.json names them ("sliding_attention", "full_attention"), one per layer; when
    /// given it decides over slidingWindowPattern.
    std::vector<std::string> layerTypes;
    double queryPreAttnScalar = 0;   ///< gemma: attention scores scaled by query_pre_attn_scalar^-0.5; 0 = head_dim^-0.5
    double attnLogitSoftcapping = 0; ///< gemma2: scores become tanh(s / c) * c before the mask; 0 = none
    double finalLogitSoftcapping = 0; ///< gemma: logits become tanh(l / c) * c; 0 = none
    /// gemma3's rope_local_base_freq: the sliding layers' rotary base, with no rope_scaling (the full layers
    /// keep ropeTheta and ropeScaling); 0 = every layer uses ropeTheta and ropeScaling.
    double ropeLocalBaseFreq = 0;
    double partialRotaryFactor = 1.0; ///< phi3: rotary on the first head_dim * factor dimensions of each head
    bool tieWordEmbeddings = false;
    std::string hiddenAct = "silu";  ///< "silu" or "gelu_pytorch_tanh" (gemma's hidden_activation)
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
    /// One qkv_proj (q, k, v rows in that order, registered after o_proj) and one gate_up_proj (gate rows
    /// first) instead of separate projections: phi3.
    bool hasFusedProjections() const;
    /// The dimensions of each head that rotary rotates: int(head_dim * partial_rotary_factor).
    int64_t rotaryDim() const;
    /// RMSNorm as Gemma's: x * (1 + weight) computed in float32 before the cast back, weights initialized 0.
    bool hasNormOffset() const;
    /// Four norms per layer (gemma): post_attention_layernorm normalizes the attention's output before the
    /// residual add, pre_feedforward_layernorm the MLP's input and post_feedforward_layernorm its output.
    bool hasFeedforwardNorms() const;
    /// The factor on the embeddings' output: sqrt(hidden_size) for gemma (cast to the activations' dtype,
    /// as transformers), else 1.
    double embeddingScale() const;
    /// transformers' class of model.embed_tokens: "Embedding", or gemma3's "Gemma3TextScaledWordEmbedding",
    /// which holds the scale as a non-persistent float32 buffer embed_scale.
    std::string embeddingClassName() const;
    /// The factor on q.k: query_pre_attn_scalar^-0.5 when set, else head_dim^-0.5.
    double attentionScale() const;
    /// Whether decoder layer `layer` is a sliding (local) layer: every layer when slidingWindowPattern is 0
    /// and layerTypes is empty (mistral; a window of 0 then makes none slide).
    bool isSlidingLayer(int64_t layer) const;
    /// The attention window of decoder layer `layer` (0-based): a query sees itself and the window - 1 keys
    /// before it; 0 = all earlier keys (full attention). The model's masks and the planner's activation and
    /// KV sizes read this, never slidingWindow directly.
    int64_t attentionWindow(int64_t layer) const;
    /// The rotary base of layer `layer`: ropeLocalBaseFreq on gemma3's sliding layers, else ropeTheta.
    double rotaryBase(int64_t layer) const;
    /// The RoPE scaling of layer `layer`: none on gemma3's sliding layers, else ropeScaling.
    RopeScaling rotaryScaling(int64_t layer) const;
    /// The transformers class names of this model_type: "LlamaForCausalLM", ...; `suffix` is
    /// "ForCausalLM", "Model", "DecoderLayer", "Attention", "MLP", "RMSNorm" or "RotaryEmbedding"
    /// (gemma3_text: Gemma3ForCausalLM, Gemma3TextModel, ...).
    std::string className(const std::string &suffix) const;
    /// Number of parameters (tied embeddings counted once).
    int64_t parameterCount() const;

    /// Throws Error(InvalidInput) naming `source` and the field when a value is impossible
    /// (non-positive sizes, heads that do not divide the hidden size, kv heads that do not divide heads,
    /// bad rope_scaling values) or the model_type is not one of the family's.
    void validate(const std::string &source) const;

    /// Parses a config.json object of model_type llama, mistral, qwen2, qwen3, gemma2, gemma3_text or phi3
    /// (missing = llama). Unknown keys are ignored; features the model does not implement (another model_type, the
    /// multimodal gemma3, rope_scaling other than linear and llama3, mlp_bias, another hidden_act, qwen2's
    /// use_sliding_window, qwen3's sliding layers, gemma3's bidirectional attention, ...) are refused by
    /// name. `source` names the file.
    static LlamaConfig fromJson(const nlohmann::json &json, const std::string &source);
    /// Reads `path`: a config.json file or a folder that holds one.
    static LlamaConfig fromFile(const std::filesystem::path &path);
    /// The config.json object for this config (transformers' key names).
    nlohmann::json toJson() const;
};

/// Whether the engine's LLaMA-family model runs this model_type ("llama", "mistral", "qwen2", "qwen3",
/// "gemma2", "gemma3_text", "phi3").
bool isLlamaFamily(const std::string &modelType);

/// The built-in demo model: ~1.97 M parameters (tied embeddings), a loss that falls visibly within a minute on 2 cores.
LlamaConfig demoConfig();

} // namespace engine::model
