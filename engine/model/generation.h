#pragma once
// Text generation with a KV cache, and scoring (log-probabilities of given tokens).
//
// How to use:
//   GenerationOptions options;            // greedy by default; temperature > 0 samples
//   options.maxNewTokens = 64; options.stopIds = {eos};
//   GenerationResult out = generate(model, promptIds, options, &control, [](int64_t id) { ... });
//   std::vector<double> lp = scoreLogprobs(model, ids);   // log p(ids[t+1] | ids[..t])

#include "engine/core/jobcontrol.h"
#include "engine/model/llamamodel.h"

#include <cstdint>
#include <functional>
#include <vector>

namespace engine::model {

/// Decoding settings. temperature == 0 means greedy (argmax); topK == 0 and topP == 1 disable filtering.
struct GenerationOptions {
    int64_t maxNewTokens = 64;
    double temperature = 0.0;
    int64_t topK = 0;
    double topP = 1.0;
    uint64_t seed = 0;
    std::vector<int64_t> stopIds; ///< generation ends after emitting one of these (e.g. eos)

    /// Throws Error(InvalidInput) naming the bad setting.
    void validate() const;
};

enum class StopReason { MaxTokens, StopToken, ContextFull, Cancelled };

struct GenerationResult {
    std::vector<int64_t> tokens; ///< new tokens only (the stop token included when one ended it)
    StopReason reason = StopReason::MaxTokens;
};

/// Generates after `prompt` (non-empty, ids < vocab) with a KV cache: one forward over the prompt,
/// then one per new token. Stops at maxNewTokens, a stop id, max_position_embeddings, or a cancel
/// request. onToken (optional) sees each new id as it is chosen. Runs in eval mode without grad.
GenerationResult generate(LlamaForCausalLM &model, const std::vector<int64_t> &prompt, const GenerationOptions &options,
                          const JobControl *control = nullptr, const std::function<void(int64_t)> &onToken = {});

/// log p(ids[t+1] | ids[0..t]) for t = 0..n-2, computed in float32 in one forward pass without grad.
/// Throws Error(InvalidInput) when ids has fewer than 2 tokens, an id is out of the vocabulary, or the
/// sequence needs more than max_position_embeddings positions (n - 1 of them are fed).
std::vector<double> scoreLogprobs(LlamaForCausalLM &model, const std::vector<int64_t> &ids);

/// Picks the next token from one row of logits [vocab] (float32) under the options.
int64_t sampleNextToken(const torch::Tensor &logits, const GenerationOptions &options, at::Generator &generator);

} // namespace engine::model
