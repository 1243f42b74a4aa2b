#include "engine/model/llamamodel.h"

#include "engine/model/checkpointedlayer.h"

#include "engine/core/error.h"
#include "engine/core/modulescope.h"

#include <cmath>
#include <limits>
#include <map>
#include <numbers>
#include <string>
#include <string_view>

#include <ATen/CPUGeneratorImpl.h>
#include <torch/nn/functional/linear.h>
#include <torch/torch.h>

namespace engine::model {
namespace {

// Set while makeUnloadedLlama builds a model on this thread: parameters become placeholders.
thread_local bool t_unloaded = false;

// A parameter of `shape` over one element of storage (all strides 0): costs no memory, and the
// loader replaces it (Tensor::set_data) before the model is used.
torch::Tensor placeholder(std::vector<int64_t> shape)
{
    return torch::empty_strided(shape, std::vector<int64_t>(shape.size(), 0));
}

torch::nn::Linear makeLinear(int64_t in, int64_t out, bool bias = false)
{
    if (!t_unloaded)
        return torch::nn::Linear(torch::nn::LinearOptions(in, out).bias(bias));
    torch::nn::Linear linear(torch::nn::LinearOptions(1, 1).bias(bias));
    linear->options.in_features(in).out_features(out);
    linear->weight.set_data(placeholder({out, in}));
    if (bias)
        linear->bias.set_data(placeholder({out}));
    return linear;
}

torch::nn::Embedding makeEmbedding(int64_t count, int64_t dim)
{
    if (!t_unloaded)
        return torch::nn::Embedding(count, dim);
    torch::nn::Embedding embedding(1, 1);
    embedding->options.num_embeddings(count).embedding_dim(dim);
    embedding->weight.set_data(placeholder({count, dim}));
    return embedding;
}

// Python's `scalar / tensor`, which torch evaluates as tensor.reciprocal() * scalar.
torch::Tensor reverseDivide(double scalar, const torch::Tensor &tensor)
{
    return tensor.reciprocal() * scalar;
}

// transformers' rotary inverse frequencies in float32: the default ones, divided by the factor for
// "linear" (the same as dividing the positions), or rescaled per wavelength for "llama3"
// (_compute_llama3_parameters, step for step).
torch::Tensor inverseFrequencies(int64_t dim, double base, const RopeScaling &rope)
{
    const torch::Tensor exponents = torch::arange(0, dim, 2, torch::kInt64).to(torch::kFloat32) / dim;
    const torch::Tensor invFreq = reverseDivide(1.0, torch::pow(base, exponents));
    if (rope.type == "linear")
        return invFreq / rope.factor;
    if (rope.type != "llama3")
        return invFreq;

    const double oldContext = static_cast<double>(rope.originalMaxPositionEmbeddings);
    const double lowFreqWavelen = oldContext / rope.lowFreqFactor;
    const double highFreqWavelen = oldContext / rope.highFreqFactor;
    const torch::Tensor wavelen = reverseDivide(2.0 * std::numbers::pi, invFreq);
    // Long wavelengths: divided by factor; short ones: unchanged; between: interpolated smoothly.
    const torch::Tensor scaled = torch::where(wavelen > lowFreqWavelen, invFreq / rope.factor, invFreq);
    const torch::Tensor smooth =
        (reverseDivide(oldContext, wavelen) - rope.lowFreqFactor) / (rope.highFreqFactor - rope.lowFreqFactor);
    const torch::Tensor smoothed = (1 - smooth) * scaled / rope.factor + smooth * scaled;
    const torch::Tensor isMedium = (wavelen < highFreqWavelen).logical_not() * (wavelen > lowFreqWavelen).logical_not();
    return torch::where(isMedium, smoothed, scaled);
}

// HF's `x * cos + rotate_half(x) * sin` with cos/sin halves equal: the same values with fewer temporaries.
// Tables narrower than the head (phi3's partial_rotary_factor) rotate its first dimensions only.
torch::Tensor applyRotary(const torch::Tensor &x, const RotaryTables &rotary)
{
    const int64_t half = rotary.cos.size(-1);
    if (2 * half < x.size(-1)) {
        const torch::Tensor rotated = applyRotary(x.narrow(-1, 0, 2 * half), rotary);
        return torch::cat({rotated, x.narrow(-1, 2 * half, x.size(-1) - 2 * half)}, -1);
    }
    const torch::Tensor x1 = x.narrow(-1, 0, half);
    const torch::Tensor x2 = x.narrow(-1, half, half);
    return torch::cat({x1 * rotary.cos - x2 * rotary.sin, x2 * rotary.cos + x1 * rotary.sin}, -1);
}

// A submodule's call under its registered name, for the inspector's module paths (engine/core/modulescope.h).
template <typename Call>
torch::Tensor inScope(std::string_view name, Call &&call)
{
    const ModuleScope scope(name);
    return call();
}

// base(x) plus the LoRA branch when one is attached (PEFT's lora.Linear.forward: x cast to the adapter's
// dtype, result + lora_B(lora_A(dropout(x))) * scaling).
torch::Tensor linearWithLora(torch::nn::Linear &linear, LoraBranch &lora, const torch::Tensor &x, bool training)
{
    torch::Tensor y = linear(x);
    if (!lora.attached())
        return y;
    torch::Tensor in = x.to(lora.a->weight.scalar_type());
    if (training && lora.dropout > 0)
        in = torch::dropout(in, lora.dropout, /*train=*/true);
    return y + (lora.b(lora.a(in)) * lora.scale).to(y.scalar_type());
}

// float32 for half types, unchanged for float32 and float64: HF upcasts norms and softmax to float32.
c10::ScalarType atLeastFloat32(c10::ScalarType type)
{
    return c10::promoteTypes(type, torch::kFloat32);
}

} // namespace

int64_t KvCache::length() const
{
    return keys.empty() || !keys.front().defined() ? 0 : keys.front().size(1);
}

void KvCache::clear()
{
    keys.clear();
    values.clear();
}

LlamaRmsNormImpl::LlamaRmsNormImpl(int64_t size, double eps, bool offset)
    : m_eps(eps)
    , m_offset(offset)
{
    weight = register_parameter("weight", t_unloaded ? placeholder({size})
                                                     : (offset ? torch::zeros({size}) : torch::ones({size})));
}

torch::Tensor LlamaRmsNormImpl::forward(const torch::Tensor &x)
{
    const torch::Tensor xf = x.to(atLeastFloat32(x.scalar_type()));
    const torch::Tensor variance = xf.pow(2).mean(-1, /*keepdim=*/true);
    const torch::Tensor normed = xf * torch::rsqrt(variance + m_eps);
    if (m_offset) // Gemma: the product in float32, then the cast (Llama casts first)
        return (normed * (1.0 + weight.to(normed.scalar_type()))).to(x.scalar_type());
    return weight * normed.to(x.scalar_type());
}

LlamaAttentionImpl::LlamaAttentionImpl(const LlamaConfig &config)
    : m_heads(config.numAttentionHeads)
    , m_kvHeads(config.numKeyValueHeads)
    , m_headDim(config.effectiveHeadDim())
    , m_scale(config.attentionScale())
    , m_softcap(config.attnLogitSoftcapping)
{
    const int64_t hidden = config.hiddenSize;
    if (config.hasFusedProjections()) { // Phi3Attention's order
        o_proj = register_module("o_proj", makeLinear(m_heads * m_headDim, hidden));
        qkv_proj = register_module("qkv_proj", makeLinear(hidden, (m_heads + 2 * m_kvHeads) * m_headDim));
        return;
    }
    const bool qkvBias = config.hasQkvBias();
    q_proj = register_module("q_proj", makeLinear(hidden, m_heads * m_headDim, qkvBias));
    k_proj = register_module("k_proj", makeLinear(hidden, m_kvHeads * m_headDim, qkvBias));
    v_proj = register_module("v_proj", makeLinear(hidden, m_kvHeads * m_headDim, qkvBias));
    o_proj = register_module("o_proj", makeLinear(m_heads * m_headDim, hidden, config.hasOutputBias()));
    if (config.hasQkNorm()) {
        q_norm = register_module("q_norm", LlamaRmsNorm(m_headDim, config.rmsNormEps, config.hasNormOffset()));
        k_norm = register_module("k_norm", LlamaRmsNorm(m_headDim, config.rmsNormEps, config.hasNormOffset()));
    }
}

torch::Tensor LlamaAttentionImpl::projectHeads(const char *name, torch::nn::Linear &proj, LoraBranch &lora,
                                               const char *normName, LlamaRmsNorm &norm, const torch::Tensor &x,
                                               int64_t heads)
{
    const torch::Tensor split = inScope(name, [&] { return linearWithLora(proj, lora, x, is_training()); })
                                    .view({x.size(0), x.size(1), heads, m_headDim});
    if (norm.is_empty())
        return split;
    // Qwen3: each head normalized over head_dim, before rotary (so rotary sees unit-RMS heads).
    return inScope(normName, [&] { return norm(split); });
}

torch::Tensor LlamaAttentionImpl::forward(const torch::Tensor &x, const RotaryTables &rotary, const torch::Tensor &mask,
                                          torch::Tensor *pastKeys, torch::Tensor *pastValues)
{
    const int64_t batch = x.size(0);
    const int64_t length = x.size(1);
    const int64_t groups = m_heads / m_kvHeads;

    torch::Tensor qHeads, kHeads, v;
    if (qkv_proj) { // phi3: rows q, k, v of one projection
        const torch::Tensor qkv = inScope("qkv_proj", [&] { return linearWithLora(qkv_proj, m_qkvLora, x, is_training()); });
        const int64_t qWidth = m_heads * m_headDim;
        const int64_t kvWidth = m_kvHeads * m_headDim;
        qHeads = qkv.narrow(-1, 0, qWidth).reshape({batch, length, m_heads, m_headDim});
        kHeads = qkv.narrow(-1, qWidth, kvWidth).reshape({batch, length, m_kvHeads, m_headDim});
        v = qkv.narrow(-1, qWidth + kvWidth, kvWidth).reshape({batch, length, m_kvHeads, m_headDim});
    } else {
        LlamaRmsNorm noNorm{nullptr};
        qHeads = projectHeads("q_proj", q_proj, m_qLora, "q_norm", q_norm, x, m_heads);
        kHeads = projectHeads("k_proj", k_proj, m_kLora, "k_norm", k_norm, x, m_kvHeads);
        v = projectHeads("v_proj", v_proj, m_vLora, "", noNorm, x, m_kvHeads);
    }
    const torch::Tensor q = applyRotary(qHeads, rotary);
    const torch::Tensor k = applyRotary(kHeads, rotary);

    // Query heads of one kv group stacked along rows: [B*kv, groups*T, D]. Head h uses kv head
    // h / groups, as transformers' repeat_kv, without materializing repeated keys and values.
    const torch::Tensor q3 = q.view({batch, length, m_kvHeads, groups, m_headDim})
                                 .permute({0, 2, 3, 1, 4})
                                 .reshape({batch * m_kvHeads, groups * length, m_headDim});
    torch::Tensor k3 = k.permute({0, 2, 1, 3}).reshape({batch * m_kvHeads, length, m_headDim});
    torch::Tensor v3 = v.permute({0, 2, 1, 3}).reshape({batch * m_kvHeads, length, m_headDim});
    if (pastKeys && pastValues) {
        if (pastKeys->defined()) {
            k3 = torch::cat({*pastKeys, k3}, 1);
            v3 = torch::cat({*pastValues, v3}, 1);
        }
        *pastKeys = k3;
        *pastValues = v3;
    }

    const torch::Tensor s = scores(q3, k3, mask);
    const torch::Tensor probs = torch::softmax(s, -1, atLeastFloat32(s.scalar_type())).to(q3.scalar_type());
    const torch::Tensor out = torch::bmm(probs, v3)
                                  .view({batch, m_kvHeads, groups, length, m_headDim})
                                  .permute({0, 3, 1, 2, 4})
                                  .reshape({batch, length, m_heads * m_headDim});
    return inScope("o_proj", [&] { return linearWithLora(o_proj, m_oLora, out, is_training()); });
}

torch::Tensor LlamaAttentionImpl::scores(const torch::Tensor &q3, const torch::Tensor &k3,
                                         const torch::Tensor &mask) const
{
    if (m_softcap <= 0) {
        return mask.defined() ? torch::baddbmm(mask, q3, k3.transpose(1, 2), 1.0, m_scale)
                              : torch::bmm(q3, k3.transpose(1, 2)) * m_scale;
    }
    // Gemma 2: tanh(s / cap) * cap on the scaled scores, the mask added after.
    const torch::Tensor capped = torch::tanh(torch::bmm(q3, k3.transpose(1, 2)) * m_scale / m_softcap) * m_softcap;
    return mask.defined() ? capped + mask : capped;
}

void LlamaAttentionImpl::collectLinearSites(const std::string &prefix, std::vector<LinearSite> &sites)
{
    if (qkv_proj) {
        sites.push_back({prefix + "o_proj", o_proj, &m_oLora});
        sites.push_back({prefix + "qkv_proj", qkv_proj, &m_qkvLora});
        return;
    }
    sites.push_back({prefix + "q_proj", q_proj, &m_qLora});
    sites.push_back({prefix + "k_proj", k_proj, &m_kLora});
    sites.push_back({prefix + "v_proj", v_proj, &m_vLora});
    sites.push_back({prefix + "o_proj", o_proj, &m_oLora});
}

LlamaMlpImpl::LlamaMlpImpl(const LlamaConfig &config)
    : m_gelu(config.hiddenAct == "gelu_pytorch_tanh")
{
    if (config.hasFusedProjections()) {
        gate_up_proj = register_module("gate_up_proj", makeLinear(config.hiddenSize, 2 * config.intermediateSize));
        down_proj = register_module("down_proj", makeLinear(config.intermediateSize, config.hiddenSize));
        return;
    }
    gate_proj = register_module("gate_proj", makeLinear(config.hiddenSize, config.intermediateSize, config.mlpBias));
    up_proj = register_module("up_proj", makeLinear(config.hiddenSize, config.intermediateSize, config.mlpBias));
    down_proj = register_module("down_proj", makeLinear(config.intermediateSize, config.hiddenSize, config.mlpBias));
}

torch::Tensor LlamaMlpImpl::forward(const torch::Tensor &x)
{
    torch::Tensor gate, up;
    if (gate_up_proj) { // phi3: gate rows, then up rows
        const torch::Tensor both =
            inScope("gate_up_proj", [&] { return linearWithLora(gate_up_proj, m_gateUpLora, x, is_training()); });
        const int64_t width = both.size(-1) / 2;
        gate = both.narrow(-1, 0, width);
        up = both.narrow(-1, width, width);
    } else {
        gate = inScope("gate_proj", [&] { return linearWithLora(gate_proj, m_gateLora, x, is_training()); });
        up = inScope("up_proj", [&] { return linearWithLora(up_proj, m_upLora, x, is_training()); });
    }
    const torch::Tensor activated = m_gelu ? torch::gelu(gate, "tanh") : torch::silu(gate);
    return inScope("down_proj", [&] { return linearWithLora(down_proj, m_downLora, activated * up, is_training()); });
}

void LlamaMlpImpl::collectLinearSites(const std::string &prefix, std::vector<LinearSite> &sites)
{
    if (gate_up_proj) {
        sites.push_back({prefix + "gate_up_proj", gate_up_proj, &m_gateUpLora});
        sites.push_back({prefix + "down_proj", down_proj, &m_downLora});
        return;
    }
    sites.push_back({prefix + "gate_proj", gate_proj, &m_gateLora});
    sites.push_back({prefix + "up_proj", up_proj, &m_upLora});
    sites.push_back({prefix + "down_proj", down_proj, &m_downLora});
}

LlamaDecoderLayerImpl::LlamaDecoderLayerImpl(const LlamaConfig &config)
{
    self_attn = register_module("self_attn", LlamaAttention(config));
    mlp = register_module("mlp", LlamaMlp(config));
    const auto makeNorm = [&] { return LlamaRmsNorm(config.hiddenSize, config.rmsNormEps, config.hasNormOffset()); };
    input_layernorm = register_module("input_layernorm", makeNorm());
    post_attention_layernorm = register_module("post_attention_layernorm", makeNorm());
    if (config.hasFeedforwardNorms()) {
        pre_feedforward_layernorm = register_module("pre_feedforward_layernorm", makeNorm());
        post_feedforward_layernorm = register_module("post_feedforward_layernorm", makeNorm());
    }
}

torch::Tensor LlamaDecoderLayerImpl::forward(const torch::Tensor &x, const RotaryTables &rotary,
                                             const torch::Tensor &mask, torch::Tensor *pastKeys,
                                             torch::Tensor *pastValues)
{
    const torch::Tensor normed = inScope("input_layernorm", [&] { return input_layernorm(x); });
    const torch::Tensor attended =
        inScope("self_attn", [&] { return self_attn(normed, rotary, mask, pastKeys, pastValues); });
    if (pre_feedforward_layernorm.is_empty()) {
        const torch::Tensor h = x + attended;
        const torch::Tensor normed2 = inScope("post_attention_layernorm", [&] { return post_attention_layernorm(h); });
        return h + inScope("mlp", [&] { return mlp(normed2); });
    }
    // Gemma: each sublayer's output normed before its residual add, the MLP's input normed by its own norm.
    const torch::Tensor h = x + inScope("post_attention_layernorm", [&] { return post_attention_layernorm(attended); });
    const torch::Tensor normed2 = inScope("pre_feedforward_layernorm", [&] { return pre_feedforward_layernorm(h); });
    const torch::Tensor fed = inScope("mlp", [&] { return mlp(normed2); });
    return h + inScope("post_feedforward_layernorm", [&] { return post_feedforward_layernorm(fed); });
}

LlamaModelImpl::LlamaModelImpl(const LlamaConfig &config)
    : m_config(config)
{
    embed_tokens = register_module("embed_tokens", makeEmbedding(config.vocabSize, config.hiddenSize));
    layers = register_module("layers", torch::nn::ModuleList());
    for (int64_t i = 0; i < config.numHiddenLayers; ++i) {
        LlamaDecoderLayer layer(config);
        layers->push_back(layer);
        m_layers.push_back(layer);
    }
    norm = register_module("norm", LlamaRmsNorm(config.hiddenSize, config.rmsNormEps, config.hasNormOffset()));
    for (int64_t i = 0; i < config.numHiddenLayers; ++i) {
        const double base = config.rotaryBase(i);
        const RopeScaling scaling = config.rotaryScaling(i);
        size_t index = 0;
        while (index < m_rotary.size() && !(m_rotary[index].base == base && m_rotary[index].scaling == scaling))
            ++index;
        if (index == m_rotary.size())
            m_rotary.push_back({base, scaling, {}, {}, {}, {}});
        m_layerRotary.push_back(index);
    }
}

RotaryTables LlamaModelImpl::rotaryTables(RotaryCache &cache, int64_t offset, int64_t length, const torch::Tensor &like)
{
    const int64_t needed = offset + length;
    if (!cache.cosFloat.defined() || cache.cosFloat.size(0) < needed) {
        // As transformers: inv_freq and the angles in float32, then cos/sin cast to the activations' dtype.
        const int64_t cached = std::max(needed, std::min<int64_t>(m_config.maxPositionEmbeddings, 4096));
        const torch::Tensor invFreq = inverseFrequencies(m_config.rotaryDim(), cache.base, cache.scaling);
        const torch::Tensor positions = torch::arange(cached, torch::kInt64).to(torch::kFloat32);
        const torch::Tensor angles = positions.unsqueeze(1) * invFreq.unsqueeze(0);
        cache.cosFloat = angles.cos();
        cache.sinFloat = angles.sin();
        cache.cos = torch::Tensor();
    }
    if (!cache.cos.defined() || cache.cos.device() != like.device() || cache.cos.scalar_type() != like.scalar_type()) {
        cache.cos = cache.cosFloat.to(like.device(), like.scalar_type());
        cache.sin = cache.sinFloat.to(like.device(), like.scalar_type());
    }
    return {cache.cos.narrow(0, offset, length).unsqueeze(1), cache.sin.narrow(0, offset, length).unsqueeze(1)};
}

namespace {

// Additive causal mask [groups * T, past + T]: query i sees keys 0 .. past + i; with a sliding window W
// only keys past + i - W + 1 .. past + i (transformers' `kv_idx > q_idx - W`). Undefined when nothing is
// hidden: a single new token within the window sees everything.
torch::Tensor causalMask(int64_t length, int64_t past, int64_t window, int64_t groups,
                         const torch::TensorOptions &options)
{
    if (length <= 1 && !(window > 0 && past + length > window))
        return {};
    const auto indices = torch::TensorOptions().device(options.device()).dtype(torch::kInt64);
    const torch::Tensor rows = torch::arange(length, indices).unsqueeze(1) + past;
    const torch::Tensor cols = torch::arange(past + length, indices).unsqueeze(0);
    torch::Tensor masked = cols > rows;
    if (window > 0)
        masked = masked.logical_or(cols <= rows - window);
    const torch::Tensor mask = torch::zeros({length, past + length}, options)
                                   .masked_fill(masked, -std::numeric_limits<double>::infinity());
    return groups > 1 ? mask.repeat({groups, 1}) : mask;
}

} // namespace

torch::Tensor LlamaModelImpl::forward(const torch::Tensor &inputIds, int64_t positionOffset, KvCache *cache)
{
    TORCH_CHECK(inputIds.dim() == 2, "input ids must be [batch, length], got ", inputIds.sizes());
    TORCH_CHECK(inputIds.scalar_type() == torch::kInt64, "input ids must be int64");
    TORCH_CHECK(positionOffset >= 0, "position offset must be >= 0");
    const int64_t length = inputIds.size(1);
    const int64_t past = cache ? cache->length() : 0;
    if (cache && cache->keys.empty()) {
        cache->keys.resize(m_layers.size());
        cache->values.resize(m_layers.size());
    }

    torch::Tensor h = inScope("embed_tokens", [&] { return embed_tokens(inputIds.to(embed_tokens->weight.device())); });
    if (const double scale = m_config.embeddingScale(); scale != 1.0) // Gemma: the factor in the activations' dtype
        h = h * torch::scalar_tensor(scale, h.options());

    // Per rotary base and per window, computed once and moved along with the layers' devices.
    std::vector<RotaryTables> rotary;
    for (RotaryCache &entry : m_rotary)
        rotary.push_back(rotaryTables(entry, positionOffset, length, h));
    std::map<int64_t, torch::Tensor> masks;
    const int64_t groups = m_config.numAttentionHeads / m_config.numKeyValueHeads;
    for (size_t i = 0; i < m_layers.size(); ++i) {
        const int64_t window = m_config.attentionWindow(static_cast<int64_t>(i));
        if (!masks.count(window))
            masks[window] = causalMask(length, past, window, groups, h.options());
    }

    for (size_t i = 0; i < m_layers.size(); ++i) {
        // A model dispatched over several devices: activations, rotary tables and masks follow each
        // layer's parameters (no copy on a single device).
        const torch::Device device = m_layers[i]->input_layernorm->weight.device();
        if (device != h.device())
            h = h.to(device);
        RotaryTables &tables = rotary[m_layerRotary[i]];
        if (tables.cos.device() != device)
            tables = {tables.cos.to(device), tables.sin.to(device)};
        torch::Tensor &mask = masks[m_config.attentionWindow(static_cast<int64_t>(i))];
        if (mask.defined() && mask.device() != device)
            mask = mask.to(device);
        const ModuleScope scope("layers", static_cast<int64_t>(i));
        if (m_checkpointing && is_training() && !cache && torch::GradMode::is_enabled())
            h = checkpointedLayerForward(*m_layers[i], h, tables, mask);
        else
            h = m_layers[i]->forward(h, tables, mask, cache ? &cache->keys[i] : nullptr,
                                     cache ? &cache->values[i] : nullptr);
    }
    return inScope("norm", [&] { return norm(h.to(norm->weight.device())); });
}

LlamaForCausalLMImpl::LlamaForCausalLMImpl(const LlamaConfig &config)
    : m_config(config)
{
    config.validate("model config");
    model = register_module("model", LlamaModel(config));
    if (!config.tieWordEmbeddings)
        lm_head = register_module("lm_head", makeLinear(config.hiddenSize, config.vocabSize));
}

torch::Tensor LlamaForCausalLMImpl::hiddenStates(const torch::Tensor &inputIds, int64_t positionOffset,
                                                 KvCache *cache)
{
    return inScope("model", [&] { return model->forward(inputIds, positionOffset, cache); });
}

torch::Tensor LlamaForCausalLMImpl::logitsFromHidden(const torch::Tensor &hidden)
{
    const torch::Tensor weight = outputWeight();
    const torch::Tensor onDevice = hidden.to(weight.device());
    const torch::Tensor logits = lm_head ? inScope("lm_head", [&] { return linearWithLora(lm_head, m_headLora, onDevice, is_training()); })
                                         : inScope("model.embed_tokens", [&] {
                                               return torch::nn::functional::linear(onDevice, model->embed_tokens->weight);
                                           });
    const double cap = m_config.finalLogitSoftcapping;
    if (cap > 0) // Gemma: in the logits' dtype, as transformers, before the cast
        return (torch::tanh(logits / cap) * cap).to(torch::kFloat32);
    return logits.to(torch::kFloat32);
}

torch::Tensor LlamaForCausalLMImpl::forward(const torch::Tensor &inputIds, int64_t positionOffset, KvCache *cache)
{
    return logitsFromHidden(hiddenStates(inputIds, positionOffset, cache));
}

std::vector<LinearSite> LlamaForCausalLMImpl::linearSites()
{
    std::vector<LinearSite> sites;
    std::vector<LlamaDecoderLayer> layers = model->decoderLayers(); // holders: shared, not copied modules
    for (size_t i = 0; i < layers.size(); ++i) {
        const std::string prefix = "model.layers." + std::to_string(i) + ".";
        layers[i]->self_attn->collectLinearSites(prefix + "self_attn.", sites);
        layers[i]->mlp->collectLinearSites(prefix + "mlp.", sites);
    }
    if (lm_head)
        sites.push_back({"lm_head", lm_head, &m_headLora});
    return sites;
}

void LlamaForCausalLMImpl::setGradientCheckpointing(bool enabled)
{
    model->setGradientCheckpointing(enabled);
}

bool LlamaForCausalLMImpl::gradientCheckpointing() const
{
    return model->gradientCheckpointing();
}

torch::Tensor LlamaForCausalLMImpl::outputWeight() const
{
    return lm_head ? lm_head->weight : model->embed_tokens->weight;
}

LlamaForCausalLM makeUnloadedLlama(const LlamaConfig &config)
{
    struct Flag {
        Flag() { t_unloaded = true; }
        ~Flag() { t_unloaded = false; }
    } flag;
    return LlamaForCausalLM(config);
}

void LlamaForCausalLMImpl::initializeWeights(uint64_t seed)
{
    torch::NoGradGuard noGrad;
    at::Generator generator = at::detail::createCPUGenerator(seed);
    const double std = m_config.initializerRange;
    for (auto &item : named_parameters(/*recurse=*/true)) {
        torch::Tensor &param = item.value();
        const std::string &name = item.key();
        // As transformers' _init_weights: Linear biases 0; the other 1-D parameters are RMSNorm weights.
        if (name.size() > 5 && name.compare(name.size() - 5, 5, ".bias") == 0) {
            param.zero_();
            continue;
        }
        if (param.dim() == 1) {
            param.fill_(m_config.hasNormOffset() ? 0.0 : 1.0); // Gemma's norms scale by 1 + w
            continue;
        }
        const torch::Tensor values = torch::empty(param.sizes(), torch::kFloat32).normal_(0.0, std, generator);
        param.copy_(values);
    }
}

} // namespace engine::model
