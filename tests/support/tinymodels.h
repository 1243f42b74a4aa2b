#pragma once
// Test helpers for torch tests (header-only; include only from TORCH tests): tiny LLaMA-family
// configs, random models, and the seed-free formula weights that tests/engine/model/reference_llama.py
// computes the same way.

#include "engine/model/llamaconfig.h"
#include "engine/model/llamamodel.h"

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include <torch/torch.h>

namespace testing_support {

/// vocab 64, hidden 32, intermediate 48, 2 layers, 4 heads, `kvHeads` kv heads, 64 positions; initializer range
/// 0.2, large enough that every part of the model moves the logits.
inline engine::model::LlamaConfig tinyLlama(const std::string &modelType = "llama", bool tied = false,
                                            int64_t kvHeads = 2)
{
    engine::model::LlamaConfig c;
    c.modelType = modelType;
    c.vocabSize = 64;
    c.hiddenSize = 32;
    c.intermediateSize = 48;
    c.numHiddenLayers = 2;
    c.numAttentionHeads = 4;
    c.numKeyValueHeads = kvHeads;
    c.maxPositionEmbeddings = 64;
    c.rmsNormEps = 1e-5;
    c.tieWordEmbeddings = tied;
    c.initializerRange = 0.2;
    return c;
}

/// tinyLlama as Qwen3 (per-head q/k norm), with head_dim 12 where hidden_size / heads is 8, so that
/// code which derives the head size from the hidden size fails.
inline engine::model::LlamaConfig tinyQwen3(bool tied = false, bool attentionBias = false, int64_t kvHeads = 2)
{
    engine::model::LlamaConfig c = tinyLlama("qwen3", tied, kvHeads);
    c.headDim = 12;
    c.ropeTheta = 1e6;
    c.rmsNormEps = 1e-6;
    c.attentionBias = attentionBias;
    return c;
}

/// tinyLlama as Gemma 2: tied, head_dim 12, query_pre_attn_scalar 16, soft-caps small enough to bite,
/// three layers (0 and 2 slide over a window of 4, 1 is global), GeGLU.
inline engine::model::LlamaConfig tinyGemma2()
{
    engine::model::LlamaConfig c = tinyLlama("gemma2", true, 2);
    c.numHiddenLayers = 3;
    c.headDim = 12;
    c.rmsNormEps = 1e-6;
    c.hiddenAct = "gelu_pytorch_tanh";
    c.queryPreAttnScalar = 16;
    c.attnLogitSoftcapping = 2.0;
    c.finalLogitSoftcapping = 4.0;
    c.slidingWindow = 4;
    c.slidingWindowPattern = 2;
    return c;
}

/// tinyLlama as Gemma 3 text: q/k norms, layers 0 and 1 local (window 3, base 10000), layer 2 global
/// (base 1e6, linear RoPE scaling 2), no soft-caps.
inline engine::model::LlamaConfig tinyGemma3()
{
    engine::model::LlamaConfig c = tinyLlama("gemma3_text", true, 2);
    c.numHiddenLayers = 3;
    c.headDim = 12;
    c.rmsNormEps = 1e-6;
    c.hiddenAct = "gelu_pytorch_tanh";
    c.queryPreAttnScalar = 10;
    c.slidingWindow = 3;
    c.slidingWindowPattern = 3;
    c.ropeTheta = 1e6;
    c.ropeLocalBaseFreq = 10000;
    c.ropeScaling.type = "linear";
    c.ropeScaling.factor = 2.0;
    return c;
}

/// Random weights (initializeWeights(seed)); 1-D parameters (norm weights, biases) perturbed so they matter.
inline engine::model::LlamaForCausalLM randomLlama(const engine::model::LlamaConfig &config, uint64_t seed = 7)
{
    engine::model::LlamaForCausalLM model(config);
    model->initializeWeights(seed);
    torch::NoGradGuard noGrad;
    torch::manual_seed(seed);
    for (auto &p : model->parameters()) {
        if (p.dim() == 1)
            p.add_(0.2 * torch::randn(p.sizes()));
    }
    return model;
}

/// Parameter number `index` (registration order) from the formula of reference_llama.py's formula_weight.
inline void setFormulaWeights(engine::model::LlamaForCausalLM &model)
{
    torch::NoGradGuard noGrad;
    int index = 0;
    for (auto &item : model->named_parameters()) {
        torch::Tensor &p = item.value();
        const bool isBias = item.key().ends_with(".bias");
        std::vector<float> values(static_cast<size_t>(p.numel()));
        for (size_t k = 0; k < values.size(); ++k) {
            if (isBias)
                values[k] = float(0.1 * std::sin(0.53 * double(k) + index));
            else if (p.dim() == 1)
                values[k] = float(1.0 + 0.1 * std::cos(0.37 * double(k) + index));
            else
                values[k] = float(0.2 * std::sin(0.37 * double(k) + 1.3 * index));
        }
        p.copy_(torch::tensor(values).view(p.sizes()));
        ++index;
    }
}

/// Element k of a LoRA matrix number `index` (reference_llama.py's formula_lora): A rows, then B.
inline torch::Tensor formulaLora(int64_t rows, int64_t cols, int index, bool isB)
{
    std::vector<float> values(static_cast<size_t>(rows * cols));
    for (size_t k = 0; k < values.size(); ++k) {
        values[k] = isB ? float(0.3 * std::cos(0.43 * double(k) + 0.7 * index))
                        : float(0.3 * std::sin(0.71 * double(k) + 1.1 * index));
    }
    return torch::tensor(values).view({rows, cols});
}

/// Random token ids [batch, length] below `config.vocabSize`, drawn after torch::manual_seed(seed).
inline torch::Tensor someIds(const engine::model::LlamaConfig &config, int64_t batch, int64_t length,
                             int64_t seed = 3)
{
    torch::manual_seed(seed);
    return torch::randint(config.vocabSize, {batch, length}, torch::kInt64);
}

/// The same below tinyLlama's vocabulary of 64.
inline torch::Tensor someIds(int64_t batch, int64_t length, int64_t seed = 3)
{
    return someIds(tinyLlama(), batch, length, seed);
}

inline double maxAbsDiff(const torch::Tensor &a, const torch::Tensor &b)
{
    return (a.to(torch::kFloat64) - b.to(torch::kFloat64)).abs().max().item<double>();
}

} // namespace testing_support
