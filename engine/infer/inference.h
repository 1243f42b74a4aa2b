#pragma once
// Running a saved model: scoring token log-probabilities and generating text. Torch-free value
// types, so the CLI and the UI call it without compiling torch headers.
//
// How to use:
//   ScoreRequest request{.modelPath = "path/to/model", .text = "Call me Ishmael."};
//   ScoreResult result = score(request);                    // result.logprobs[t] = log p(ids[t+1] | ids[..t])
//   GenerateRequest g{.modelPath = "...", .prompt = "Call me"};
//   GenerateResult out = generate(g, [](const std::string &piece) { std::cout << piece; });

#include "engine/core/jobcontrol.h"

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace engine::infer {

struct ScoreRequest {
    std::string modelPath;        ///< a save_pretrained folder (config.json + weights)
    std::string adapterPath;      ///< optional PEFT LoRA adapter folder, merged before scoring
    std::vector<int64_t> ids;     ///< the tokens to score, or empty to tokenize `text`
    std::optional<std::string> text; ///< tokenized with the model folder's tokenizer (special tokens added as HF does)
    int threads = 0;              ///< 0 = all cores
    std::string device = "cpu";   ///< "cpu", "cuda" or "cuda:N"
};

struct ScoreResult {
    std::vector<int64_t> ids;
    std::vector<double> logprobs; ///< n - 1 values, float32 computation
    double meanLoss = 0;          ///< -mean(logprobs)
    double perplexity = 0;        ///< exp(meanLoss)
};

/// Throws engine::Error naming the file or setting that is wrong.
ScoreResult score(const ScoreRequest &request);

struct GenerateRequest {
    std::string modelPath;
    std::string adapterPath;
    std::string prompt;
    int64_t maxNewTokens = 64;
    double temperature = 0.0; ///< 0 = greedy
    int64_t topK = 0;         ///< 0 = off
    double topP = 1.0;        ///< 1 = off
    uint64_t seed = 0;
    bool stopAtEos = true;
    int threads = 0;
    std::string device = "cpu"; ///< "cpu", "cuda" or "cuda:N"
};

struct GenerateResult {
    std::vector<int64_t> promptIds;
    std::vector<int64_t> newIds;
    std::string text;       ///< the decoded new tokens
    std::string stopReason; ///< "max_tokens", "eos", "context_full", "cancelled"
};

/// Generates after the prompt; onText (optional) receives the new text as it grows (decoded
/// incrementally, so multi-byte characters arrive whole). Throws engine::Error on bad input.
GenerateResult generate(const GenerateRequest &request, const std::function<void(const std::string &)> &onText = {},
                        const JobControl *control = nullptr);

} // namespace engine::infer
