// Training throughput of the engine's LLaMA model: the same step as bench/train_step_bench.py
// (forward, cross-entropy, backward, clip, AdamW) on random tokens. Prints one JSON line.
//   usage: train_step_bench [--steps N] [--warmup N] [--batch B] [--seq T] [--threads N]

#include "engine/core/threads.h"
#include "engine/model/llamaconfig.h"
#include "engine/model/llamamodel.h"

#include <torch/torch.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>

int main(int argc, char **argv)
{
    int64_t steps = 20, warmup = 3, batch = 8, seq = 128;
    int threads = 0;
    for (int i = 1; i + 1 < argc; i += 2) {
        const int64_t v = std::atoll(argv[i + 1]);
        if (!std::strcmp(argv[i], "--steps")) steps = v;
        else if (!std::strcmp(argv[i], "--warmup")) warmup = v;
        else if (!std::strcmp(argv[i], "--batch")) batch = v;
        else if (!std::strcmp(argv[i], "--seq")) seq = v;
        else if (!std::strcmp(argv[i], "--threads")) threads = static_cast<int>(v);
    }
    engine::applyThreadCount(threads);
    torch::manual_seed(0);
    const auto config = engine::model::demoConfig();
    engine::model::LlamaForCausalLM model(config);
    model->initializeWeights(0);
    model->train();
    torch::optim::AdamW optimizer(model->parameters(), torch::optim::AdamWOptions(1e-3).betas({0.9, 0.95}).weight_decay(0.1));
    const auto params = model->parameters();

    auto step = [&] {
        const torch::Tensor tokens = torch::randint(config.vocabSize, {batch, seq + 1}, torch::kInt64);
        optimizer.zero_grad();
        const torch::Tensor logits = model->forward(tokens.narrow(1, 0, seq));
        const torch::Tensor loss = torch::nn::functional::cross_entropy(logits.reshape({-1, logits.size(-1)}),
                                                                        tokens.narrow(1, 1, seq).reshape({-1}));
        loss.backward();
        torch::nn::utils::clip_grad_norm_(params, 1.0);
        optimizer.step();
        return loss.item<double>();
    };
    for (int64_t i = 0; i < warmup; ++i)
        step();
    const auto start = std::chrono::steady_clock::now();
    for (int64_t i = 0; i < steps; ++i)
        step();
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::printf("{\"impl\": \"tunebench\", \"threads\": %d, \"params\": %lld, \"tokens_per_second\": %.1f, \"seconds\": %.3f}\n",
                at::get_num_threads(), static_cast<long long>(config.parameterCount()),
                static_cast<double>(steps * batch * seq) / seconds, seconds);
    return 0;
}
