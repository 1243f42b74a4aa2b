// Training throughput of the engine: the step `tunebench train` runs (forward, summed cross-entropy over
// the tokens, backward, clipping by global norm, the engine's AdamW with decay on matrices only), on
// random tokens, for full fine-tuning or LoRA, on the demo model's config or a ~30 M-parameter one (LLaMA,
// Qwen3 with its q/k norms, or Gemma 3's text layer).
// The same step in Python is bench/train_step_bench.py. Prints one JSON line, with the fp32 matmul
// rate measured in the same process for the model FLOPs utilisation.
//   usage: train_step_bench [--steps N] [--warmup N] [--batch B] [--seq T] [--threads N]
//                           [--config demo|30m|qwen3-30m|gemma3-30m] [--method full|lora] [--lora-r R]

#include "engine/core/blascheck.h"
#include "engine/core/mallocpolicy.h"
#include "engine/core/threads.h"
#include "engine/model/llamaconfig.h"
#include "engine/model/llamamodel.h"
#include "engine/model/lora.h"
#include "engine/train/gradientclip.h"
#include "engine/train/optimizer.h"

#include <torch/torch.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

namespace {

/// ~30 M parameters: 8 layers of width 512 (the second size), vocabulary 8192, tied.
engine::model::LlamaConfig config30m()
{
    engine::model::LlamaConfig c = engine::model::demoConfig();
    c.vocabSize = 8192;
    c.hiddenSize = 512;
    c.intermediateSize = 1376;
    c.numHiddenLayers = 8;
    c.numAttentionHeads = 8;
    c.numKeyValueHeads = 8;
    c.headDim = 64;
    return c;
}

/// The same size as Qwen3: per-head q/k RMSNorm, 4 key/value heads, rope_theta 1e6, rms_norm_eps 1e-6.
engine::model::LlamaConfig configQwen3_30m()
{
    engine::model::LlamaConfig c = config30m();
    c.modelType = "qwen3";
    c.numKeyValueHeads = 4;
    c.ropeTheta = 1e6;
    c.rmsNormEps = 1e-6;
    return c;
}

/// Gemma 3's text layer at the same size: 1 + w norms, four per layer, GeGLU (tanh GELU), q/k norms,
/// scaled embeddings, 5 sliding layers (window 64, rotary base 1e4) to 1 full layer (base 1e6).
engine::model::LlamaConfig configGemma3_30m()
{
    engine::model::LlamaConfig c = configQwen3_30m();
    c.modelType = "gemma3_text";
    c.hiddenAct = "gelu_pytorch_tanh";
    c.queryPreAttnScalar = 64;
    c.slidingWindow = 64;
    c.slidingWindowPattern = 6;
    c.ropeLocalBaseFreq = 1e4;
    return c;
}

} // namespace

int main(int argc, char **argv)
{
    int64_t steps = 20, warmup = 3, batch = 8, seq = 128, rank = 16;
    int threads = 0;
    std::string configName = "demo", method = "full";
    for (int i = 1; i + 1 < argc; i += 2) {
        const char *value = argv[i + 1];
        const int64_t v = std::atoll(value);
        if (!std::strcmp(argv[i], "--steps")) steps = v;
        else if (!std::strcmp(argv[i], "--warmup")) warmup = v;
        else if (!std::strcmp(argv[i], "--batch")) batch = v;
        else if (!std::strcmp(argv[i], "--seq")) seq = v;
        else if (!std::strcmp(argv[i], "--threads")) threads = static_cast<int>(v);
        else if (!std::strcmp(argv[i], "--config")) configName = value;
        else if (!std::strcmp(argv[i], "--method")) method = value;
        else if (!std::strcmp(argv[i], "--lora-r")) rank = v;
    }
    engine::applyThreadCount(threads);
    engine::keepFreedMemoryForReuse(); // as runTraining does
    torch::manual_seed(0);
    const engine::model::LlamaConfig config = configName == "30m"          ? config30m()
                                              : configName == "qwen3-30m"  ? configQwen3_30m()
                                              : configName == "gemma3-30m" ? configGemma3_30m()
                                                                           : engine::model::demoConfig();
    engine::model::LlamaForCausalLM model(config);
    model->initializeWeights(0);
    if (method == "lora") {
        engine::model::LoraSettings lora;
        lora.r = rank;
        lora.alpha = 2.0 * static_cast<double>(rank);
        lora.dropout = 0.05;
        lora.targets = {"q_proj", "k_proj", "v_proj", "o_proj"};
        engine::model::attachLora(model, lora);
    }
    model->train();
    std::vector<std::pair<std::string, torch::Tensor>> named;
    int64_t trainable = 0;
    for (const auto &item : model->named_parameters()) {
        named.emplace_back(item.key(), item.value());
        trainable += item.value().requires_grad() ? item.value().numel() : 0;
    }
    engine::train::Optimizer optimizer(engine::train::OptimizerKind::AdamW, engine::train::weightDecayGroups(named, 0.1));
    std::vector<torch::Tensor> params;
    for (const auto &group : optimizer.groups())
        for (const auto &item : group.parameters)
            params.push_back(item.second);

    auto step = [&] {
        const torch::Tensor tokens = torch::randint(config.vocabSize, {batch, seq + 1}, torch::kInt64);
        optimizer.zeroGrad();
        const torch::Tensor logits = model->forward(tokens.narrow(1, 0, seq));
        const torch::Tensor loss = torch::nn::functional::cross_entropy(
                                       logits.reshape({-1, logits.size(-1)}), tokens.narrow(1, 1, seq).reshape({-1}),
                                       torch::nn::functional::CrossEntropyFuncOptions().reduction(torch::kSum))
            / static_cast<double>(batch * seq);
        loss.backward();
        engine::train::clipGradients(params, 1.0);
        optimizer.step(1e-3);
        return loss.item<double>();
    };
    for (int64_t i = 0; i < warmup; ++i)
        step();
    const auto start = std::chrono::steady_clock::now();
    for (int64_t i = 0; i < steps; ++i)
        step();
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    const engine::MatmulCheck matmul = engine::checkMatmul(1024);
    std::printf("{\"impl\": \"tunebench\", \"config\": \"%s\", \"method\": \"%s\", \"threads\": %d, \"params\": %lld, "
                "\"trainable\": %lld, \"tokens_per_second\": %.1f, \"seconds\": %.3f, \"matmul_gflops\": %.1f}\n",
                configName.c_str(), method.c_str(), at::get_num_threads(), static_cast<long long>(config.parameterCount()),
                static_cast<long long>(trainable), static_cast<double>(steps * batch * seq) / seconds, seconds, matmul.gflops);
    return 0;
}
