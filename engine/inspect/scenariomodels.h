#pragma once
// The small models behind the built-in scenarios (scenarios.cpp). Engine-internal (torch headers).

#include <torch/nn/module.h>
#include <torch/nn/modules/embedding.h>
#include <torch/nn/modules/linear.h>

namespace engine::inspect {

/// How the decoder's attention keeps its KV cache.
enum class CacheMode {
    InPlace,          ///< Meta's reference: cache_k[:bsz, start:start+len] = xk into a preallocated buffer
    CloneBeforeWrite, ///< the fix: the cache is cloned before each write, so saved views keep their values
};

/// Meta-LLaMA-style attention with a KV cache (module "attention").
class CacheAttention : public torch::nn::Module {
public:
    CacheAttention(int64_t dim, int64_t heads, int64_t maxSeq, CacheMode mode);
    /// x [1, T, dim] at positions start..start+T-1 -> [1, T, dim]; mask [T, start+T] or undefined.
    torch::Tensor forward(const torch::Tensor &x, int64_t start, const torch::Tensor &mask);

    torch::nn::Linear wq{nullptr}, wk{nullptr}, wv{nullptr}, wo{nullptr};
    torch::Tensor cacheK, cacheV;

private:
    int64_t m_heads, m_headDim;
    CacheMode m_mode;
};

/// Embedding, one attention block, output head; decoded token by token under autograd.
class TinyDecoder : public torch::nn::Module {
public:
    explicit TinyDecoder(CacheMode mode);
    /// Runs ids[:, :prompt] at once, then one token per call; mean next-token loss of every step.
    torch::Tensor decodeLoss(const torch::Tensor &ids, int64_t prompt);

    torch::nn::Embedding tok_embeddings{nullptr};
    std::shared_ptr<CacheAttention> attention;
    torch::nn::Linear output{nullptr};
};

/// encoder -> head -> log(...).mean(): log of negative values (NaN) unless `clamped`.
class NanLogModel : public torch::nn::Module {
public:
    explicit NanLogModel(bool clamped);
    torch::Tensor forward(const torch::Tensor &x);
    torch::nn::Linear encoder{nullptr}, head{nullptr};

private:
    bool m_clamped;
};

/// A frozen embedding and a linear head with cross-entropy.
class FrozenModel : public torch::nn::Module {
public:
    FrozenModel();
    torch::Tensor forward(const torch::Tensor &ids);
    torch::nn::Embedding embed{nullptr};
    torch::nn::Linear head{nullptr};
};

/// proj -> h * h, then h changed through .data (no version bump) unless `fixed`.
class SilentMutationModel : public torch::nn::Module {
public:
    explicit SilentMutationModel(bool fixed);
    torch::Tensor forward(const torch::Tensor &x);
    torch::nn::Linear proj{nullptr};

private:
    bool m_fixed;
};

} // namespace engine::inspect
