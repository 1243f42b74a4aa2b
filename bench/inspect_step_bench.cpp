// Cost of the autograd inspector on the demo model's training step (forward, cross-entropy,
// backward, clip, AdamW), measured side by side in one run, alternating per round:
// plain step vs full recording (op trace, saved-tensor hooks with checksums, NaN search) vs the
// always-on guard. Prints one JSON line with the medians and ratios (targets: <= 1.5x, <= 1.1x).
//   usage: inspect_step_bench [--rounds N] [--steps N] [--batch B] [--seq T] [--threads N] [--layers L]

#include "engine/core/threads.h"
#include "engine/inspect/steprecorder.h"
#include "engine/inspect/trainingguard.h"
#include "engine/model/llamaconfig.h"
#include "engine/model/llamamodel.h"

#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace {

double median(std::vector<double> v)
{
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
}

} // namespace

int main(int argc, char **argv)
{
    int64_t rounds = 5, steps = 4, batch = 8, seq = 128, layers = 0;
    int threads = 0;
    for (int i = 1; i + 1 < argc; i += 2) {
        const int64_t v = std::atoll(argv[i + 1]);
        if (!std::strcmp(argv[i], "--rounds")) rounds = v;
        else if (!std::strcmp(argv[i], "--steps")) steps = v;
        else if (!std::strcmp(argv[i], "--batch")) batch = v;
        else if (!std::strcmp(argv[i], "--seq")) seq = v;
        else if (!std::strcmp(argv[i], "--threads")) threads = static_cast<int>(v);
        else if (!std::strcmp(argv[i], "--layers")) layers = v;
    }
    engine::applyThreadCount(threads);
    torch::manual_seed(0);
    auto config = engine::model::demoConfig();
    if (layers > 0)
        config.numHiddenLayers = layers;
    engine::model::LlamaForCausalLM model(config);
    model->initializeWeights(0);
    model->train();
    torch::optim::AdamW optimizer(model->parameters(), torch::optim::AdamWOptions(1e-3).betas({0.9, 0.95}).weight_decay(0.1));
    const auto params = model->parameters();

    enum Mode { Plain, Record, Guard };
    auto step = [&](Mode mode) {
        const torch::Tensor tokens = torch::randint(config.vocabSize, {batch, seq + 1}, torch::kInt64);
        optimizer.zero_grad();
        std::unique_ptr<engine::inspect::StepRecorder> recorder;
        engine::inspect::TrainingGuard guard;
        if (mode == Record) {
            // INSPECT_NO_CHECKSUMS / INSPECT_NO_NAN: the cost of each part of a full recording.
            engine::inspect::RecordOptions options;
            options.checksums = std::getenv("INSPECT_NO_CHECKSUMS") == nullptr;
            options.findNan = std::getenv("INSPECT_NO_NAN") == nullptr;
            recorder = std::make_unique<engine::inspect::StepRecorder>(options);
        }
        if (mode == Guard)
            guard.beginStep();
        const torch::Tensor logits = model->forward(tokens.narrow(1, 0, seq));
        const torch::Tensor loss = torch::nn::functional::cross_entropy(logits.reshape({-1, logits.size(-1)}),
                                                                        tokens.narrow(1, 1, seq).reshape({-1}));
        if (recorder)
            recorder->beginBackward(loss);
        if (mode == Guard && guard.beforeBackward(loss).fired)
            std::abort();
        loss.backward();
        if (recorder)
            recorder->endBackward();
        if (mode == Guard && guard.afterBackward(params).fired)
            std::abort();
        recorder.reset();
        guard.endStep();
        torch::nn::utils::clip_grad_norm_(params, 1.0);
        optimizer.step();
    };
    auto timed = [&](Mode mode) {
        const auto start = std::chrono::steady_clock::now();
        for (int64_t i = 0; i < steps; ++i)
            step(mode);
        return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() / double(steps);
    };
    step(Plain), step(Record), step(Guard); // warm-up
    std::vector<double> plain, record, guard;
    for (int64_t r = 0; r < rounds; ++r) {
        plain.push_back(timed(Plain));
        record.push_back(timed(Record));
        guard.push_back(timed(Guard));
    }
    const double p = median(plain), rec = median(record), g = median(guard);
    std::printf("{\"impl\": \"tunebench\", \"threads\": %d, \"layers\": %lld, \"batch\": %lld, \"seq\": %lld, "
                "\"plain_step_s\": %.4f, \"record_step_s\": %.4f, \"guard_step_s\": %.4f, "
                "\"record_ratio\": %.3f, \"guard_ratio\": %.3f}\n",
                at::get_num_threads(), static_cast<long long>(config.numHiddenLayers), static_cast<long long>(batch),
                static_cast<long long>(seq), p, rec, g, rec / p, g / p);
    return 0;
}
