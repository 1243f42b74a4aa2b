#include "engine/infer/inference.h"

#include "engine/core/error.h"
#include "engine/core/threads.h"
#include "engine/core/torchdevice.h"
#include "engine/model/generation.h"
#include "engine/model/pretrained.h"
#include "engine/tokenize/tokenizer.h"

#include <cmath>
#include <numeric>

namespace engine::infer {
namespace {

/// Loads (and merges the adapter) on the CPU, then moves the model to `device`.
model::LlamaForCausalLM loadModel(const std::string &modelPath, const std::string &adapterPath, const std::string &device)
{
    if (modelPath.empty())
        throw invalidInput("a model folder is needed (--model)");
    const torch::Device target = torchDevice(device, "--device");
    model::LlamaForCausalLM model = model::loadPretrained(modelPath);
    if (!adapterPath.empty())
        model::applyPeftLoraAdapter(model, adapterPath);
    model->to(target);
    return model;
}

} // namespace

ScoreResult score(const ScoreRequest &request)
{
    applyThreadCount(request.threads);
    if (request.ids.empty() == !request.text.has_value())
        throw invalidInput("give either token ids or a text to score, not both or neither");
    ScoreResult result;
    if (request.text) {
        const auto tokenizer = tokenize::loadTokenizer(request.modelPath);
        for (int id : tokenizer->encode(*request.text, /*addSpecialTokens=*/true))
            result.ids.push_back(id);
    } else {
        result.ids = request.ids;
    }
    model::LlamaForCausalLM model = loadModel(request.modelPath, request.adapterPath, request.device);
    result.logprobs = model::scoreLogprobs(model, result.ids);
    const double sum = std::accumulate(result.logprobs.begin(), result.logprobs.end(), 0.0);
    result.meanLoss = -sum / static_cast<double>(result.logprobs.size());
    result.perplexity = std::exp(result.meanLoss);
    return result;
}

GenerateResult generate(const GenerateRequest &request, const std::function<void(const std::string &)> &onText,
                        const JobControl *control)
{
    applyThreadCount(request.threads);
    model::GenerationOptions options;
    options.maxNewTokens = request.maxNewTokens;
    options.temperature = request.temperature;
    options.topK = request.topK;
    options.topP = request.topP;
    options.seed = request.seed;
    options.validate();

    const auto tokenizer = tokenize::loadTokenizer(request.modelPath);
    model::LlamaForCausalLM model = loadModel(request.modelPath, request.adapterPath, request.device);
    if (request.stopAtEos) {
        if (tokenizer->eosId() >= 0)
            options.stopIds.push_back(tokenizer->eosId());
        else if (model->config().eosTokenId >= 0)
            options.stopIds.push_back(model->config().eosTokenId);
    }

    GenerateResult result;
    for (int id : tokenizer->encode(request.prompt, /*addSpecialTokens=*/true))
        result.promptIds.push_back(id);

    // Passes on the part of `text` not shown yet, unless it ends inside a multi-byte character
    // (decoded as U+FFFD), which the next token completes.
    std::string shown;
    auto show = [&](std::string text, bool final) {
        if (!onText || text.size() <= shown.size() || text.compare(0, shown.size(), shown) != 0)
            return;
        std::string piece = text.substr(shown.size());
        if (!final && piece.find("\xEF\xBF\xBD") != std::string::npos)
            return;
        onText(piece);
        shown = std::move(text);
    };
    std::vector<int> generated;
    auto emit = [&](int64_t id) {
        generated.push_back(static_cast<int>(id));
        if (onText)
            show(tokenizer->decode(generated, /*skipSpecialTokens=*/true), false);
    };
    const model::GenerationResult out = model::generate(model, result.promptIds, options, control, emit);
    result.newIds = out.tokens;
    result.text = tokenizer->decode(generated, /*skipSpecialTokens=*/true);
    show(result.text, true);
    switch (out.reason) {
    case model::StopReason::MaxTokens: result.stopReason = "max_tokens"; break;
    case model::StopReason::StopToken: result.stopReason = "eos"; break;
    case model::StopReason::ContextFull: result.stopReason = "context_full"; break;
    case model::StopReason::Cancelled: result.stopReason = "cancelled"; break;
    }
    return result;
}

} // namespace engine::infer
