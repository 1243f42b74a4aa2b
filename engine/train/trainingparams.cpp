#include "engine/train/trainingparams.h"

#include "engine/core/error.h"
#include "engine/core/device.h"
#include "engine/core/threads.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <sstream>

namespace engine::train {
namespace {

template<typename T>
void requireRange(const char *name, T value, T low, T high, const char *hint = "")
{
    if (!(value >= low && value <= high)) {
        std::ostringstream out;
        out << "setting " << name << " = " << value << " is out of range: it must be between " << low << " and "
            << high << hint;
        throw invalidInput(out.str());
    }
}

void requireFinite(const char *name, double value)
{
    if (!std::isfinite(value))
        throw invalidInput(std::string("setting ") + name + " must be a finite number");
}

} // namespace

const char *methodName(TrainingMethod method)
{
    return method == TrainingMethod::Lora ? "lora" : "full";
}

const char *precisionName(Precision precision)
{
    switch (precision) {
    case Precision::Bf16: return "bf16";
    case Precision::Fp16: return "fp16";
    case Precision::Fp32: break;
    }
    return "fp32";
}

void requireFp16Device(Precision precision, const std::vector<std::string> &devices)
{
    const bool onCuda = std::any_of(devices.begin(), devices.end(), [](const std::string &d) { return d.rfind("cuda", 0) == 0; });
    if (precision == Precision::Fp16 && !onCuda) {
        throw invalidInput("precision fp16 needs a CUDA device (--device cuda, or a device map with cuda:N): "
                           "fp16 with loss scaling is for GPUs; on the CPU use bf16");
    }
}

const char *optimizerName(OptimizerKind kind)
{
    return kind == OptimizerKind::AdamW ? "adamw" : "sgd";
}

int64_t TrainingParams::totalSteps(int64_t sequences) const
{
    if (epochs <= 0)
        return steps;
    const int64_t perStep = batchSize * gradAccumulation * distributed.worldSize;
    return epochs * std::max<int64_t>(1, (sequences + perStep - 1) / perStep);
}

void TrainingParams::validate() const
{
    requireRange<int64_t>("steps", steps, 1, 100'000'000);
    requireFinite("learning rate", learningRate);
    if (learningRate <= 0)
        throw invalidInput("setting learning rate = " + std::to_string(learningRate) + " must be greater than 0");
    requireRange("learning rate", learningRate, 1e-12, 10.0);
    if (warmupSteps != -1)
        requireRange<int64_t>("warmup steps", warmupSteps, 0, steps, " (the number of steps)");
    requireFinite("min learning rate ratio", minLearningRateRatio);
    requireRange("min learning rate ratio", minLearningRateRatio, 0.0, 1.0);
    requireRange<int64_t>("batch size", batchSize, 1, 65536);
    requireRange<int64_t>("sequence length", sequenceLength, 2, 1 << 20);
    requireFinite("weight decay", weightDecay);
    requireRange("weight decay", weightDecay, 0.0, 10.0);
    requireFinite("gradient clip norm", gradClipNorm);
    requireRange("gradient clip norm", gradClipNorm, 0.0, 1e9);
    std::vector<std::string> devices = {canonicalDeviceName(device, "setting device")};
    for (const auto &entry : devicePlacement)
        devices.push_back(entry.second);
    if (autoDeviceMap && !devicePlacement.empty())
        throw invalidInput("a device map is either planned (auto) or given, not both");
    if (!autoDeviceMap) // a planned map is checked once the plan has chosen its devices
        requireFp16Device(precision, devices);
    requireRange<int64_t>("epochs", epochs, 0, 1'000'000);
    requireRange<int64_t>("gradient accumulation", gradAccumulation, 1, 65536);
    requireFinite("momentum", momentum);
    requireRange("momentum", momentum, 0.0, 0.999999);
    requireRange("validation fraction", valFraction, 0.0, 0.5);
    requireRange<int64_t>("eval every", evalEvery, 0, 100'000'000);
    requireRange<int64_t>("eval batches", evalBatches, 0, 100'000'000);
    requireRange<int64_t>("save every", saveEvery, 0, 100'000'000);
    requireRange<int64_t>("keep checkpoints", keepCheckpoints, 0, 1'000'000);
    requireRange<int64_t>("sample tokens", sampleTokens, 1, 4096);
    if (!evalDataPath.empty() && valFraction > 0)
        throw invalidInput("give either an eval data file or a validation fraction, not both");
    if (method == TrainingMethod::Lora)
        lora.validate();
    requireFinite("distributed timeout", distributedTimeoutSeconds);
    requireRange("distributed timeout", distributedTimeoutSeconds, 1.0, 86'400.0);
    requireFinite("bucket size", bucketMegabytes);
    requireRange("bucket size", bucketMegabytes, 0.0, 65'536.0);
    const int cores = hardwareThreads();
    if (threads < 0 || threads > cores) {
        throw invalidInput("setting threads = " + std::to_string(threads) + " is out of range: this machine has "
                           + std::to_string(cores) + (cores == 1 ? " core" : " cores")
                           + ", so use 1 to " + std::to_string(cores) + " (0 = all cores)");
    }
}

nlohmann::json TrainingParams::toJson() const
{
    nlohmann::json json = {
        {"model", modelPath},
        {"data", dataPath},
        {"tokenizer", tokenizerPath},
        {"steps", steps},
        {"learning_rate", learningRate},
        {"warmup_steps", effectiveWarmupSteps()},
        {"min_learning_rate_ratio", minLearningRateRatio},
        {"batch_size", batchSize},
        {"sequence_length", sequenceLength},
        {"weight_decay", weightDecay},
        {"grad_clip_norm", gradClipNorm},
        {"threads", threads},
        {"device", canonicalDeviceName(device)},
        {"device_map", autoDeviceMap ? nlohmann::json("auto") : devicePlacementJson()},
        {"seed", seed},
        {"save_model", saveModel},
        {"method", methodName(method)},
        {"lora", method == TrainingMethod::Lora ? nlohmann::json({{"r", lora.r}, {"alpha", lora.alpha},
                                                                   {"dropout", lora.dropout}, {"rslora", lora.rslora},
                                                                   {"target_modules", lora.targetModulesJson()},
                                                                   {"modules_to_save", lora.modulesToSave}})
                                                : nlohmann::json(nullptr)},
        {"optimizer", optimizerName(optimizer)},
        {"momentum", momentum},
        {"schedule", scheduleName(schedule)},
        {"epochs", epochs},
        {"grad_accumulation", gradAccumulation},
        {"gradient_checkpointing", gradientCheckpointing},
        {"precision", precisionName(precision)},
        {"eval_data", evalDataPath},
        {"val_fraction", valFraction},
        {"eval_every", evalEvery},
        {"eval_batches", evalBatches},
        {"save_every", saveEvery},
        {"keep_checkpoints", keepCheckpoints},
        {"on_non_finite_loss", nonFinite == NonFinitePolicy::Skip ? "skip" : "stop"},
        {"inspect_guard", inspectGuard},
        {"bad_lines", skipBadLines ? "skip" : "stop"},
        {"sample_prompt", samplePrompt},
        {"sample_tokens", sampleTokens},
    };
    if (distributed.distributed()) { // data-parallel runs only: a single process's settings stay as they were
        json["world_size"] = distributed.worldSize;
        json["launcher"] = distributed.launcher;
        json["bucket_mb"] = bucketMegabytes;
        json["dist_timeout"] = distributedTimeoutSeconds;
    }
    return json;
}

nlohmann::json devicePlacementJson(const std::vector<std::pair<std::string, std::string>> &placement)
{
    nlohmann::json map = nlohmann::json::array();
    for (const auto &[module, target] : placement)
        map.push_back({module, target});
    return map;
}

nlohmann::json TrainingParams::devicePlacementJson() const
{
    return devicePlacement.empty() ? nlohmann::json(nullptr) : train::devicePlacementJson(devicePlacement);
}

} // namespace engine::train
