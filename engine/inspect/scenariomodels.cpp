#include "engine/inspect/scenariomodels.h"

#include "engine/core/modulescope.h"

#include <torch/torch.h>

#include <cmath>
#include <limits>

namespace engine::inspect {
namespace {

template <typename Call>
torch::Tensor inScope(std::string_view name, Call &&call)
{
    const ModuleScope scope(name);
    return call();
}

torch::nn::Linear linear(int64_t in, int64_t out, bool bias = false)
{
    return torch::nn::Linear(torch::nn::LinearOptions(in, out).bias(bias));
}

constexpr int64_t kDim = 16, kHeads = 2, kVocab = 16, kMaxSeq = 16;

} // namespace

CacheAttention::CacheAttention(int64_t dim, int64_t heads, int64_t maxSeq, CacheMode mode)
    : m_heads(heads), m_headDim(dim / heads), m_mode(mode)
{
    wq = register_module("wq", linear(dim, dim));
    wk = register_module("wk", linear(dim, dim));
    wv = register_module("wv", linear(dim, dim));
    wo = register_module("wo", linear(dim, dim));
    cacheK = torch::zeros({1, maxSeq, heads, m_headDim});
    cacheV = torch::zeros({1, maxSeq, heads, m_headDim});
}

torch::Tensor CacheAttention::forward(const torch::Tensor &x, int64_t start, const torch::Tensor &mask)
{
    const int64_t batch = x.size(0), length = x.size(1);
    const torch::Tensor xq = inScope("wq", [&] { return wq(x); }).view({batch, length, m_heads, m_headDim});
    const torch::Tensor xk = inScope("wk", [&] { return wk(x); }).view({batch, length, m_heads, m_headDim});
    const torch::Tensor xv = inScope("wv", [&] { return wv(x); }).view({batch, length, m_heads, m_headDim});

    if (m_mode == CacheMode::CloneBeforeWrite) {
        cacheK = cacheK.clone();
        cacheV = cacheV.clone();
    }
    // self.cache_k[:bsz, start_pos : start_pos + seqlen] = xk
    cacheK.narrow(0, 0, batch).narrow(1, start, length).copy_(xk);
    cacheV.narrow(0, 0, batch).narrow(1, start, length).copy_(xv);
    const torch::Tensor keys = cacheK.narrow(0, 0, batch).narrow(1, 0, start + length);
    const torch::Tensor values = cacheV.narrow(0, 0, batch).narrow(1, 0, start + length);

    const torch::Tensor q = xq.transpose(1, 2);
    const torch::Tensor k = keys.transpose(1, 2);
    const torch::Tensor v = values.transpose(1, 2);
    torch::Tensor scores = torch::matmul(q, k.transpose(2, 3)) / std::sqrt(static_cast<double>(m_headDim));
    if (mask.defined())
        scores = scores + mask;
    const torch::Tensor probs = torch::softmax(scores, -1);
    const torch::Tensor out = torch::matmul(probs, v).transpose(1, 2).contiguous().view({batch, length, -1});
    return inScope("wo", [&] { return wo(out); });
}

TinyDecoder::TinyDecoder(CacheMode mode)
{
    tok_embeddings = register_module("tok_embeddings", torch::nn::Embedding(kVocab, kDim));
    attention = register_module("attention", std::make_shared<CacheAttention>(kDim, kHeads, kMaxSeq, mode));
    output = register_module("output", linear(kDim, kVocab));
}

torch::Tensor TinyDecoder::decodeLoss(const torch::Tensor &ids, int64_t prompt)
{
    std::vector<torch::Tensor> losses;
    const int64_t total = ids.size(1);
    int64_t start = 0;
    while (start < total - 1) {
        const int64_t length = start == 0 ? prompt : 1;
        const torch::Tensor tokens = ids.narrow(1, start, length);
        const torch::Tensor targets = ids.narrow(1, start + 1, length);
        const torch::Tensor h = inScope("tok_embeddings", [&] { return tok_embeddings(tokens); });
        torch::Tensor mask;
        if (length > 1)
            mask = torch::full({length, length}, -std::numeric_limits<float>::infinity()).triu(1);
        const torch::Tensor a = inScope("attention", [&] { return attention->forward(h, start, mask); });
        const torch::Tensor logits = inScope("output", [&] { return output(h + a); });
        losses.push_back(torch::nn::functional::cross_entropy(logits.view({-1, kVocab}), targets.reshape({-1})));
        start += length;
    }
    return torch::stack(losses).mean();
}

NanLogModel::NanLogModel(bool clamped) : m_clamped(clamped)
{
    encoder = register_module("encoder", linear(8, 8, true));
    head = register_module("head", linear(8, 4, true));
}

torch::Tensor NanLogModel::forward(const torch::Tensor &x)
{
    const torch::Tensor h = inScope("encoder", [&] { return torch::relu(encoder(x)); });
    return inScope("head", [&] {
        const torch::Tensor z = head(h);
        // The bug: a log-likelihood of values that can be negative.
        return (m_clamped ? z.clamp_min(1e-6) : z).log().mean().neg();
    });
}

FrozenModel::FrozenModel()
{
    embed = register_module("embed", torch::nn::Embedding(8, 8));
    head = register_module("head", linear(8, 8, true));
    embed->weight.requires_grad_(false);
}

torch::Tensor FrozenModel::forward(const torch::Tensor &ids)
{
    const torch::Tensor h = inScope("embed", [&] { return embed(ids); });
    const torch::Tensor logits = inScope("head", [&] { return head(h); });
    return torch::nn::functional::cross_entropy(logits.view({-1, 8}), ids.view({-1}).flip(0));
}

SilentMutationModel::SilentMutationModel(bool fixed) : m_fixed(fixed)
{
    proj = register_module("proj", linear(8, 8));
}

torch::Tensor SilentMutationModel::forward(const torch::Tensor &x)
{
    const torch::Tensor h = inScope("proj", [&] { return proj(x); });
    const torch::Tensor y = h * h; // saves h for MulBackward0
    torch::Tensor scaled;
    if (m_fixed) {
        scaled = h * 0.5;
    } else {
        // The bug: rescaling through .data shares the storage but not the version counter.
        h.data().mul_(0.5);
        scaled = h;
    }
    return y.sum() + scaled.sum();
}

} // namespace engine::inspect
