#include "engine/model/llamamodel.h"

#include "engine/model/checkpointedlayer.h"

#include "engine/core/error.h"
#include "engine/core/modulescope.h"

#include <cmath>
#include <limits>
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
torch::Tensor inverseFrequencies(const LlamaConfig &config)
{
    const int64_t dim = config.effectiveHeadDim();
    const torch::Tensor exponents = torch::arange(0, dim, 2, torch::kInt64).to(torch::kFloat32) / dim;
    const torch::Tensor invFreq = reverseDivide(1.0, torch::pow(config.ropeTheta, exponents));
    const RopeScaling &rope = config.ropeScaling;
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
torch::Tensor applyRotary(const torch::Tensor &x, const RotaryTables &rotary)
{
    const int64_t half = x.size(-1) / 2;
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

LlamaRmsNormImpl::LlamaRmsNormImpl(int64_t size, double eps)
    : m_eps(eps)
{
    weight = register_parameter("weight", t_unloaded ? placeholder({size}) : torch::ones({size}));
}

torch::Tensor LlamaRmsNormImpl::forward(const torch::Tensor &x)
{
    const torch::Tensor xf = x.to(atLeastFloat32(x.scalar_type()));
    const torch::Tensor variance = xf.pow(2).mean(-1, /*keepdim=*/true);
    return weight * (xf * torch::rsqrt(variance + m_eps)).to(x.scalar_type());
}

LlamaAttentionImpl::LlamaAttentionImpl(const LlamaConfig &config)
    : m_heads(config.numAttentionHeads)
    , m_kvHeads(config.numKeyValueHeads)
    , m_headDim(config.effectiveHeadDim())
{
    const int64_t hidden = config.hiddenSize;
    const bool qkvBias = config.hasQkvBias();
    q_proj = register_module("q_proj", makeLinear(hidden, m_heads * m_headDim, qkvBias));
    k_proj = register_module("k_proj", makeLinear(hidden, m_kvHeads * m_headDim, qkvBias));
    v_proj = register_module("v_proj", makeLinear(hidden, m_kvHeads * m_headDim, qkvBias));
    o_proj = register_module("o_proj", makeLinear(m_heads * m_headDim, hidden, config.hasOutputBias()));
    if (config.hasQkNorm()) {
        q_norm = register_module("q_norm", LlamaRmsNorm(m_headDim, config.rmsNormEps));
        k_norm = register_module("k_norm", LlamaRmsNorm(m_headDim, config.rmsNormEps));
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

    LlamaRmsNorm noNorm{nullptr};
    const torch::Tensor q = applyRotary(projectHeads("q_proj", q_proj, m_qLora, "q_norm", q_norm, x, m_heads), rotary);
    const torch::Tensor k = applyRotary(projectHeads("k_proj", k_proj, m_kLora, "k_norm", k_norm, x, m_kvHeads), rotary);
    const torch::Tensor v = projectHeads("v_proj", v_proj, m_vLora, "", noNorm, x, m_kvHeads);

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

    const double scale = 1.0 / std::sqrt(static_cast<double>(m_headDim));
    const torch::Tensor scores = mask.defined() ? torch::baddbmm(mask, q3, k3.transpose(1, 2), 1.0, scale)
                                                : torch::bmm(q3, k3.transpose(1, 2)) * scale;
    const torch::Tensor probs =
        torch::softmax(scores, -1, atLeastFloat32(scores.scalar_type())).to(q3.scalar_type());
    const torch::Tensor out = torch::bmm(probs, v3)
                                  .view({batch, m_kvHeads, groups, length, m_headDim})
                                  .permute({0, 3, 1, 2, 4})
                                  .reshape({batch, length, m_heads * m_headDim});
    return inScope("o_proj", [&] { return linearWithLora(o_proj, m_oLora, out, is_training()); });
}

void LlamaAttentionImpl::collectLinearSites(const std::string &prefix, std::vector<LinearSite> &sites)
{
    sites.push_back({prefix + "q_proj", q_proj, &m_qLora});
    sites.push_back({prefix + "k_proj", k_proj, &m_kLora});
    sites.push_back({prefix + "v_proj", v_proj, &m_vLora});
    sites.push_back({prefix + "o_proj", o_proj, &m_oLora});
}

LlamaMlpImpl::LlamaMlpImpl(const LlamaConfig &config)
{
    gate_proj = register_module("gate_proj", makeLinear(config.hiddenSize, config.intermediateSize, config.mlpBias));
    up_proj = register_module("up_proj", makeLinear(config.hiddenSize, config.intermediateSize, config.mlpBias));
    down_proj = register_module("down_proj", makeLinear(config.intermediateSize, config.hiddenSize, config.mlpBias));
}

torch::Tensor LlamaMlpImpl::forward(const torch::Tensor &x)
{
    const torch::Tensor gate = inScope("gate_proj", [&] { return linearWithLora(gate_proj, m_gateLora, x, is_training()); });
    const torch::Tensor up = inScope("up_proj", [&] { return linearWithLora(up_proj, m_upLora, x, is_training()); });
    return inScope("down_proj", [&] { return linearWithLora(down_proj, m_downLora, torch::silu(gate) * up, is_training()); });
}

void LlamaMlpImpl::collectLinearSites(const std::string &prefix, std::vector<LinearSite> &sites)
{
    sites.push_back({prefix + "gate_proj", gate_proj, &m_gateLora});
    sites.push_back({prefix + "up_proj", up_proj, &m_upLora});
    sites.push_back({prefix + "down_proj", down_proj, &m_downLora});
}

LlamaDecoderLayerImpl::LlamaDecoderLayerImpl(const LlamaConfig &config)
{
    self_attn = register_module("self_attn", LlamaAttention(config));
    mlp = register_module("mlp", LlamaMlp(config));
    input_layernorm = register_module("input_layernorm", LlamaRmsNorm(config.hiddenSize, config.rmsNormEps));
    post_attention_layernorm =
        register_module("post_attention_layernorm", LlamaRmsNorm(config.hiddenSize, config.rmsNormEps));
}

torch::Tensor LlamaDecoderLayerImpl::forward(const torch::Tensor &x, const RotaryTables &rotary,
                                             const torch::Tensor &mask, torch::Tensor *pastKeys,
                                             torch::Tensor *pastValues)
{
    const torch::Tensor normed = inScope("input_layernorm", [&] { return input_layernorm(x); });
    const torch::Tensor h =
        x + inScope("self_attn", [&] { return self_attn(normed, rotary, mask, pastKeys, pastValues); });
    const torch::Tensor normed2 = inScope("post_attention_layernorm", [&] { return post_attention_layernorm(h); });
    return h + inScope("mlp", [&] { return mlp(normed2); });
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
    norm = register_module("norm", LlamaRmsNorm(config.hiddenSize, config.rmsNormEps));
}

RotaryTables LlamaModelImpl::rotaryTables(int64_t offset, int64_t length, const torch::Tensor &like)
{
    const int64_t needed = offset + length;
    if (!m_cosFloat.defined() || m_cosFloat.size(0) < needed) {
        // As transformers: inv_freq and the angles in float32, then cos/sin cast to the activations' dtype.
        const int64_t cached = std::max(needed, std::min<int64_t>(m_config.maxPositionEmbeddings, 4096));
        const torch::Tensor invFreq = inverseFrequencies(m_config);
        const torch::Tensor positions = torch::arange(cached, torch::kInt64).to(torch::kFloat32);
        const torch::Tensor angles = positions.unsqueeze(1) * invFreq.unsqueeze(0);
        m_cosFloat = angles.cos();
        m_sinFloat = angles.sin();
        m_cos = torch::Tensor();
    }
    if (!m_cos.defined() || m_cos.device() != like.device() || m_cos.scalar_type() != like.scalar_type()) {
        m_cos = m_cosFloat.to(like.device(), like.scalar_type());
        m_sin = m_sinFloat.to(like.device(), like.scalar_type());
    }
    return {m_cos.narrow(0, offset, length).unsqueeze(1), m_sin.narrow(0, offset, length).unsqueeze(1)};
}

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
    RotaryTables rotary = rotaryTables(positionOffset, length, h);

    // Additive causal mask [groups * T, past + T]: query i sees keys 0 .. past + i; with a sliding
    // window W only keys past + i - W + 1 .. past + i (transformers' `kv_idx > q_idx - W`). A single
    // new token within the window sees everything and needs none.
    const int64_t window = m_config.attentionWindow(0); // one window for every layer so far
    torch::Tensor mask;
    if (length > 1 || (window > 0 && past + length > window)) {
        const auto options = torch::TensorOptions().device(h.device()).dtype(torch::kInt64);
        const torch::Tensor rows = torch::arange(length, options).unsqueeze(1) + past;
        const torch::Tensor cols = torch::arange(past + length, options).unsqueeze(0);
        torch::Tensor masked = cols > rows;
        if (window > 0)
            masked = masked.logical_or(cols <= rows - window);
        mask = torch::zeros({length, past + length}, h.options())
                   .masked_fill(masked, -std::numeric_limits<double>::infinity());
        const int64_t groups = m_config.numAttentionHeads / m_config.numKeyValueHeads;
        if (groups > 1)
            mask = mask.repeat({groups, 1});
    }

    for (size_t i = 0; i < m_layers.size(); ++i) {
        // A model dispatched over several devices: activations, rotary tables and the mask follow
        // each layer's parameters (no copy on a single device).
        const torch::Device device = m_layers[i]->input_layernorm->weight.device();
        if (device != h.device()) {
            h = h.to(device);
            rotary = {rotary.cos.to(device), rotary.sin.to(device)};
            if (mask.defined())
                mask = mask.to(device);
        }
        const ModuleScope scope("layers", static_cast<int64_t>(i));
        if (m_checkpointing && is_training() && !cache && torch::GradMode::is_enabled())
            h = checkpointedLayerForward(*m_layers[i], h, rotary, mask);
        else
            h = m_layers[i]->forward(h, rotary, mask, cache ? &cache->keys[i] : nullptr,
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
            param.fill_(1.0);
            continue;
        }
        const torch::Tensor values = torch::empty(param.sizes(), torch::kFloat32).normal_(0.0, std, generator);
        param.copy_(values);
    }
}

} // namespace engine::model
