#pragma once
// The LLaMA-architecture causal LM in libtorch, which also runs Mistral (sliding-window attention),
// Qwen2 (q/k/v biases), Qwen3 (per-head q/k RMSNorm), Gemma 2 and Gemma 3 text configs (norms with an
// offset, four norms per layer, GeGLU, scaled embeddings, soft-caps, local and global layers) and Phi-3
// (fused qkv_proj and gate_up_proj, partial rotary): each difference is declared by LlamaConfig and read
// here, one implementation for all. Engine-internal: only torch code
// (the trainer, the torch tests) includes this header. Parameter names and order equal Hugging Face's
// and moduleTreeFromConfig's.
//
// How to use:
//   LlamaForCausalLM model(config);          // parameters named exactly as Hugging Face's
//   model->initializeWeights(seed);          // N(0, initializer_range), RMSNorm weights 1
//   torch::Tensor logits = model->forward(ids);   // ids [B,T] int64 -> logits [B,T,V] float32
// Across devices (a model loaded by loadDispatched): each part runs where its parameters are; hidden
// states move at layer boundaries, logits come out on the output weight's device.
// For generation pass a KvCache: the first call with the prompt, then one call per new token with
// positionOffset = cache.length(); keys and values of earlier positions are reused.

#include "engine/model/llamaconfig.h"

#include <cstdint>
#include <string>
#include <vector>

#include <torch/nn/module.h>
#include <torch/nn/modules/container/modulelist.h>
#include <torch/nn/modules/embedding.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/pimpl.h>

namespace engine::model {

/// Keys and values of earlier positions, per layer, for incremental decoding. Empty = no history.
/// Each entry is [batch * kv_heads, length, head_dim], keys after rotary.
struct KvCache {
    std::vector<torch::Tensor> keys;
    std::vector<torch::Tensor> values;

    /// Number of cached positions (0 when empty).
    int64_t length() const;
    /// Forgets all positions.
    void clear();
};

/// Rotary cos/sin for one forward pass: [T, 1, head_dim / 2] each, in the activations' dtype.
struct RotaryTables {
    torch::Tensor cos;
    torch::Tensor sin;
};

/// A LoRA branch on one Linear (engine/model/lora.h attaches them): base(x) + scale * B(A(dropout(x))),
/// with x cast to the adapter's dtype as PEFT does. A [r, in] and B [out, r] are registered on the base
/// Linear as lora_A and lora_B, so their parameter names are PEFT's without the adapter name
/// (model.layers.0.self_attn.q_proj.lora_A.weight). Dropout applies in training mode only.
struct LoraBranch {
    torch::nn::Linear a{nullptr};
    torch::nn::Linear b{nullptr};
    double scale = 0;
    double dropout = 0;

    bool attached() const { return !a.is_empty(); }
};

/// One Linear of the model that a LoRA branch can attach to, by its full module name.
struct LinearSite {
    std::string name; ///< e.g. "model.layers.0.self_attn.q_proj"
    torch::nn::Linear linear{nullptr};
    LoraBranch *lora = nullptr; ///< the branch slot the forward pass uses
};

/// Root-mean-square norm as transformers' LlamaRMSNorm: computed in float32 (float64 stays float64),
/// weight * normalized x cast back to the input's dtype. With `offset` as Gemma's RMSNorm instead:
/// normalized x * (1 + weight), cast back after the product.
class LlamaRmsNormImpl : public torch::nn::Module {
public:
    /// One weight of `size` ones (zeros with `offset`).
    LlamaRmsNormImpl(int64_t size, double eps, bool offset = false);
    /// Normalizes over the last dimension.
    torch::Tensor forward(const torch::Tensor &x);

    torch::Tensor weight;

private:
    double m_eps;
    bool m_offset;
};
TORCH_MODULE(LlamaRmsNorm);

/// Causal self-attention with rotary positions and grouped-query attention (q, k, v, o; biases on
/// q/k/v for qwen2, on all four for llama and qwen3 with attention_bias; qwen3's per-head q/k RMSNorm).
/// Softmax runs in float32 for half types, as transformers does.
class LlamaAttentionImpl : public torch::nn::Module {
public:
    /// Registers q_proj, k_proj, v_proj, o_proj in that order, then q_norm and k_norm when
    /// config.hasQkNorm() (Qwen3Attention's order).
    explicit LlamaAttentionImpl(const LlamaConfig &config);
    /// x [B,T,H]; mask [kv groups * T, S] additive (0 / -inf) where S = past + T; `past` = (keys, values)
    /// of earlier positions for this layer, extended in place when given.
    torch::Tensor forward(const torch::Tensor &x, const RotaryTables &rotary, const torch::Tensor &mask,
                          torch::Tensor *pastKeys = nullptr, torch::Tensor *pastValues = nullptr);

    torch::nn::Linear q_proj{nullptr}, k_proj{nullptr}, v_proj{nullptr}, o_proj{nullptr};
    torch::nn::Linear qkv_proj{nullptr}; ///< phi3: q, k and v in one projection, instead of q/k/v_proj
    LlamaRmsNorm q_norm{nullptr}, k_norm{nullptr}; ///< null unless config.hasQkNorm()

    /// q_proj, k_proj, v_proj, o_proj (phi3: o_proj, qkv_proj) as sites named prefix + local name.
    void collectLinearSites(const std::string &prefix, std::vector<LinearSite> &sites);

private:
    /// x [B,T,H] -> [B,T,heads,D]: the projection `name` with its LoRA branch, split into heads, then
    /// normed per head by `norm` (module `normName`) unless it is null. Rotary is the caller's.
    torch::Tensor projectHeads(const char *name, torch::nn::Linear &proj, LoraBranch &lora, const char *normName,
                               LlamaRmsNorm &norm, const torch::Tensor &x, int64_t heads);

    /// q.k scaled (config.attentionScale()), soft-capped when m_softcap > 0, plus the mask.
    torch::Tensor scores(const torch::Tensor &q3, const torch::Tensor &k3, const torch::Tensor &mask) const;

    LoraBranch m_qLora, m_kLora, m_vLora, m_oLora, m_qkvLora;
    int64_t m_heads;
    int64_t m_kvHeads;
    int64_t m_headDim;
    double m_scale;
    double m_softcap;
};
TORCH_MODULE(LlamaAttention);

/// Gated feed-forward: down(act(gate(x)) * up(x)), act = silu (SwiGLU) or tanh-approximated GELU (GeGLU,
/// gemma's gelu_pytorch_tanh), from config.hiddenAct.
class LlamaMlpImpl : public torch::nn::Module {
public:
    /// Registers gate_proj, up_proj, down_proj in that order.
    explicit LlamaMlpImpl(const LlamaConfig &config);
    /// x [..., H] -> [..., H].
    torch::Tensor forward(const torch::Tensor &x);

    torch::nn::Linear gate_proj{nullptr}, up_proj{nullptr}, down_proj{nullptr};
    torch::nn::Linear gate_up_proj{nullptr}; ///< phi3: gate and up in one projection (gate rows first)

    /// gate_proj, up_proj, down_proj as sites named prefix + local name.
    void collectLinearSites(const std::string &prefix, std::vector<LinearSite> &sites);

private:
    LoraBranch m_gateLora, m_upLora, m_downLora, m_gateUpLora;
    bool m_gelu;
};
TORCH_MODULE(LlamaMlp);

/// One pre-norm decoder block (transformers' LlamaDecoderLayer; Gemma's with four norms).
class LlamaDecoderLayerImpl : public torch::nn::Module {
public:
    /// Registers self_attn, mlp, input_layernorm, post_attention_layernorm, then pre_feedforward_layernorm
    /// and post_feedforward_layernorm when config.hasFeedforwardNorms(), in that order.
    explicit LlamaDecoderLayerImpl(const LlamaConfig &config);
    /// x + attn(norm(x)), then + mlp(norm(.)); with feed-forward norms
    /// h = x + post_attention_norm(attn(input_norm(x))), then h + post_ff_norm(mlp(pre_ff_norm(h))).
    torch::Tensor forward(const torch::Tensor &x, const RotaryTables &rotary, const torch::Tensor &mask,
                          torch::Tensor *pastKeys = nullptr, torch::Tensor *pastValues = nullptr);

    LlamaAttention self_attn{nullptr};
    LlamaMlp mlp{nullptr};
    LlamaRmsNorm input_layernorm{nullptr};
    LlamaRmsNorm post_attention_layernorm{nullptr};
    LlamaRmsNorm pre_feedforward_layernorm{nullptr};  ///< null unless config.hasFeedforwardNorms()
    LlamaRmsNorm post_feedforward_layernorm{nullptr}; ///< null unless config.hasFeedforwardNorms()
};
TORCH_MODULE(LlamaDecoderLayer);

/// The decoder stack without the LM head (transformers' LlamaModel).
class LlamaModelImpl : public torch::nn::Module {
public:
    /// Registers embed_tokens, layers, norm in that order.
    explicit LlamaModelImpl(const LlamaConfig &config);
    /// ids [B,T] int64 -> final normed hidden states [B,T,H] in the parameters' dtype. Each layer gets
    /// the mask of its attention window and the rotary tables of its base (config.attentionWindow,
    /// rotaryBase, rotaryScaling); embeddings are scaled by config.embeddingScale().
    torch::Tensor forward(const torch::Tensor &inputIds, int64_t positionOffset = 0, KvCache *cache = nullptr);

    /// The layers, typed (the same modules `layers` holds).
    const std::vector<LlamaDecoderLayer> &decoderLayers() const { return m_layers; }

    /// See LlamaForCausalLMImpl::setGradientCheckpointing.
    void setGradientCheckpointing(bool enabled) { m_checkpointing = enabled; }
    bool gradientCheckpointing() const { return m_checkpointing; }

    torch::nn::Embedding embed_tokens{nullptr};
    torch::nn::ModuleList layers{nullptr};
    LlamaRmsNorm norm{nullptr};

private:
    // Rotary cos/sin of one (base, scaling) for positions [0, cached length), float32 on the CPU and
    // converted for the last device/dtype used. Plain members, not buffers: transformers' inv_freq is
    // non-persistent.
    struct RotaryCache {
        double base = 0;
        RopeScaling scaling;
        torch::Tensor cosFloat, sinFloat, cos, sin;
    };
    RotaryTables rotaryTables(RotaryCache &cache, int64_t offset, int64_t length, const torch::Tensor &like);

    LlamaConfig m_config;
    std::vector<LlamaDecoderLayer> m_layers;
    bool m_checkpointing = false;
    std::vector<RotaryCache> m_rotary;   // one per distinct (base, scaling): gemma3 has a local and a global one
    std::vector<size_t> m_layerRotary;   // layer -> index into m_rotary
};
TORCH_MODULE(LlamaModel);

/// The causal LM (transformers' LlamaForCausalLM): parameter names match Hugging Face checkpoints.
class LlamaForCausalLMImpl : public torch::nn::Module {
public:
    /// Registers model, then lm_head unless config.tieWordEmbeddings. Validates the config.
    explicit LlamaForCausalLMImpl(const LlamaConfig &config);

    /// ids [B,T] int64 (any device) at positions positionOffset.. -> logits [B,T,V] float32 on the
    /// output weight's device (soft-capped by config.finalLogitSoftcapping when set).
    /// With a cache, attends to its positions as well and appends this call's keys and values.
    torch::Tensor forward(const torch::Tensor &inputIds, int64_t positionOffset = 0, KvCache *cache = nullptr);
    /// Final hidden states [B,T,H] (parameters' dtype), for losses computed in chunks.
    torch::Tensor hiddenStates(const torch::Tensor &inputIds, int64_t positionOffset = 0, KvCache *cache = nullptr);
    /// Logits float32 [..., V] for hidden states [..., H], soft-capped as forward's.
    torch::Tensor logitsFromHidden(const torch::Tensor &hidden);

    /// HF-style initialization, deterministic for a seed on any device: Linear and Embedding weights
    /// ~ N(0, initializer_range) drawn on the CPU in float32, Linear biases 0, RMSNorm weights 1 (0 for
    /// Gemma's x * (1 + w) norms).
    void initializeWeights(uint64_t seed);

    /// Every Linear of the model (q/k/v/o and gate/up/down of each layer, then lm_head unless tied), in
    /// parameter order, with its LoRA slot.
    std::vector<LinearSite> linearSites();

    /// Decoder layers recompute their activations during backward instead of keeping them (gradient
    /// checkpointing, as transformers' gradient_checkpointing_enable()): less memory, about a third more
    /// compute. Has effect in training mode with gradients enabled.
    void setGradientCheckpointing(bool enabled);
    bool gradientCheckpointing() const;

    /// The weight that maps hidden states to logits: lm_head's, or the embedding's when tied.
    torch::Tensor outputWeight() const;
    const LlamaConfig &config() const { return m_config; }

    LlamaModel model{nullptr};
    torch::nn::Linear lm_head{nullptr}; ///< null when the embeddings are tied

private:
    LlamaConfig m_config;
    LoraBranch m_headLora;
};
TORCH_MODULE(LlamaForCausalLM);

/// A model with every parameter shaped as `config` gives but holding no storage (one element, all
/// strides 0), nothing allocated or initialized: for loaders that replace every parameter with
/// Tensor::set_data before the model is used (loadDispatched). Using it before that is a bug.
LlamaForCausalLM makeUnloadedLlama(const LlamaConfig &config);

} // namespace engine::model
