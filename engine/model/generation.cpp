#include "engine/model/generation.h"

#include "engine/core/error.h"

#include <ATen/CPUGeneratorImpl.h>
#include <torch/torch.h>

#include <cmath>
#include <limits>
#include <string>

namespace engine::model {
namespace {

void checkIds(const std::vector<int64_t> &ids, const LlamaConfig &config, const char *what)
{
    for (size_t i = 0; i < ids.size(); ++i) {
        if (ids[i] < 0 || ids[i] >= config.vocabSize) {
            throw invalidInput(std::string(what) + ": token id " + std::to_string(ids[i]) + " at position "
                               + std::to_string(i) + " is outside the vocabulary (0 .. "
                               + std::to_string(config.vocabSize - 1) + ")");
        }
    }
}

torch::Tensor idsTensor(const std::vector<int64_t> &ids, const torch::Device &device)
{
    return torch::tensor(ids, torch::kInt64).unsqueeze(0).to(device);
}

torch::Device modelDevice(LlamaForCausalLM &model)
{
    return model->parameters().front().device();
}

/// Restores the model's training flag on scope exit.
class EvalModeGuard {
public:
    explicit EvalModeGuard(LlamaForCausalLM &model) : m_model(model), m_wasTraining(model->is_training()) { model->eval(); }
    ~EvalModeGuard() { m_model->train(m_wasTraining); }

private:
    LlamaForCausalLM &m_model;
    bool m_wasTraining;
};

} // namespace

void GenerationOptions::validate() const
{
    if (maxNewTokens < 0)
        throw invalidInput("setting max new tokens = " + std::to_string(maxNewTokens) + " must be >= 0");
    if (!std::isfinite(temperature) || temperature < 0)
        throw invalidInput("setting temperature must be a finite number >= 0 (0 = greedy)");
    if (topK < 0)
        throw invalidInput("setting top-k = " + std::to_string(topK) + " must be >= 0 (0 = off)");
    if (!std::isfinite(topP) || topP <= 0 || topP > 1)
        throw invalidInput("setting top-p must be in (0, 1] (1 = off)");
}

int64_t sampleNextToken(const torch::Tensor &logits, const GenerationOptions &options, at::Generator &generator)
{
    if (options.temperature == 0.0)
        return logits.argmax(-1).item<int64_t>();

    torch::Tensor scaled = logits.to(torch::kFloat32) / options.temperature;
    const double negInf = -std::numeric_limits<double>::infinity();
    if (options.topK > 0 && options.topK < scaled.size(-1)) {
        const torch::Tensor kth = std::get<0>(scaled.topk(options.topK)).select(-1, options.topK - 1);
        scaled = scaled.masked_fill(scaled < kth, negInf);
    }
    if (options.topP < 1.0) {
        // Nucleus: keep the smallest set of most likely tokens whose probability reaches topP (the
        // token that crosses the threshold is kept, as transformers' TopPLogitsWarper does).
        const auto [sorted, order] = scaled.sort(/*dim=*/-1, /*descending=*/true);
        const torch::Tensor cumulative = sorted.softmax(-1).cumsum(-1);
        torch::Tensor removeSorted = (cumulative - sorted.softmax(-1)) >= options.topP;
        const torch::Tensor remove = torch::zeros_like(removeSorted).scatter(-1, order, removeSorted);
        scaled = scaled.masked_fill(remove, negInf);
    }
    const torch::Tensor probs = scaled.softmax(-1);
    return torch::multinomial(probs, 1, /*replacement=*/false, generator).item<int64_t>();
}

GenerationResult generate(LlamaForCausalLM &model, const std::vector<int64_t> &prompt, const GenerationOptions &options,
                          const JobControl *control, const std::function<void(int64_t)> &onToken)
{
    options.validate();
    const LlamaConfig &config = model->config();
    if (prompt.empty())
        throw invalidInput("generation needs a prompt of at least one token");
    checkIds(prompt, config, "prompt");
    if (static_cast<int64_t>(prompt.size()) > config.maxPositionEmbeddings) {
        throw invalidInput("prompt of " + std::to_string(prompt.size()) + " tokens is longer than the model's "
                           "max_position_embeddings = " + std::to_string(config.maxPositionEmbeddings));
    }

    torch::NoGradGuard noGrad;
    EvalModeGuard eval(model);
    at::Generator generator = at::detail::createCPUGenerator(options.seed);
    const torch::Device device = modelDevice(model);

    GenerationResult result;
    KvCache cache;
    torch::Tensor logits = model->forward(idsTensor(prompt, device), 0, &cache);
    int64_t position = static_cast<int64_t>(prompt.size());
    while (true) {
        if (static_cast<int64_t>(result.tokens.size()) >= options.maxNewTokens) {
            result.reason = StopReason::MaxTokens;
            break;
        }
        if (control && control->cancelRequested()) {
            result.reason = StopReason::Cancelled;
            break;
        }
        const int64_t next = sampleNextToken(logits[0][-1].to(torch::kCPU), options, generator);
        result.tokens.push_back(next);
        if (onToken)
            onToken(next);
        if (std::find(options.stopIds.begin(), options.stopIds.end(), next) != options.stopIds.end()) {
            result.reason = StopReason::StopToken;
            break;
        }
        if (position >= config.maxPositionEmbeddings) {
            result.reason = StopReason::ContextFull;
            break;
        }
        if (static_cast<int64_t>(result.tokens.size()) >= options.maxNewTokens) {
            result.reason = StopReason::MaxTokens;
            break;
        }
        logits = model->forward(idsTensor({next}, device), position, &cache);
        ++position;
    }
    return result;
}

std::vector<double> scoreLogprobs(LlamaForCausalLM &model, const std::vector<int64_t> &ids)
{
    const LlamaConfig &config = model->config();
    if (ids.size() < 2)
        throw invalidInput("scoring needs at least 2 tokens (got " + std::to_string(ids.size()) + ")");
    checkIds(ids, config, "ids");
    // The last token is only predicted, never fed: n tokens need n - 1 positions (the same bound
    // generation works to).
    if (static_cast<int64_t>(ids.size()) - 1 > config.maxPositionEmbeddings) {
        throw invalidInput(std::to_string(ids.size()) + " tokens need " + std::to_string(ids.size() - 1)
                           + " positions, more than the model's max_position_embeddings = "
                           + std::to_string(config.maxPositionEmbeddings));
    }
    torch::NoGradGuard noGrad;
    EvalModeGuard eval(model);
    const torch::Device device = modelDevice(model);
    const torch::Tensor input = idsTensor(ids, device);
    const int64_t n = input.size(1);
    const torch::Tensor logits = model->forward(input.narrow(1, 0, n - 1)).to(torch::kFloat32);
    const torch::Tensor logProbs = torch::log_softmax(logits, -1);
    const torch::Tensor picked = logProbs.gather(-1, input.narrow(1, 1, n - 1).to(logits.device()).unsqueeze(-1)).squeeze(-1).squeeze(0);
    const torch::Tensor cpu = picked.to(torch::kCPU, torch::kFloat64).contiguous();
    return std::vector<double>(cpu.data_ptr<double>(), cpu.data_ptr<double>() + cpu.numel());
}

} // namespace engine::model
