#include "engine/train/checkpoint.h"

#include "engine/core/atomicfile.h"
#include "engine/core/error.h"
#include "engine/io/safetensorsfile.h"
#include "engine/model/lora.h"
#include "engine/model/pretrained.h"
#include "engine/store/runfolder.h"

#include <ATen/CPUGeneratorImpl.h>
#include <torch/torch.h>

#include <algorithm>
#include <cstdio>
#include <map>

#include <unistd.h>

namespace engine::train {
namespace fs = std::filesystem;
namespace {

constexpr const char *kStateFile = store::kCheckpointStateFile;
constexpr const char *kOptimizerFile = "optimizer.safetensors";
constexpr const char *kRngFile = "rng_state.safetensors";

std::map<std::string, torch::Tensor> readAll(const fs::path &file)
{
    const io::SafetensorsFile tensors = io::SafetensorsFile::open(file);
    std::map<std::string, torch::Tensor> all;
    io::TensorLoadOptions options;
    options.copy = true;
    for (const auto &info : tensors.header().tensors)
        all[info.name] = tensors.tensor(info.name, options);
    return all;
}

nlohmann::json stateJson(const CheckpointState &s)
{
    nlohmann::json j = {{"format", "tunebench-checkpoint-1"}, {"step", s.step}, {"run_id", s.runId}, {"store", s.storePath},
                        {"data_position", {{"shuffles", s.samplerShuffles}, {"cursor", s.samplerCursor}}},
                        {"optimizer_steps", s.optimizerSteps}, {"identity", s.identity}, {"training", s.training}};
    if (s.lossScale > 0)
        j["loss_scale"] = {{"scale", s.lossScale}, {"growth_tracker", s.lossScaleGrowthTracker}};
    return j;
}

} // namespace

int removePartialCheckpoints(const fs::path &outputDir)
{
    int removed = 0;
    std::error_code ec;
    std::vector<fs::path> partial;
    for (const auto &entry : fs::directory_iterator(outputDir, ec)) {
        const std::string name = entry.path().filename().string();
        if (entry.is_directory() && name.rfind(".checkpoint-", 0) == 0 && name.find(".partial-") != std::string::npos)
            partial.push_back(entry.path());
    }
    for (const auto &path : partial) {
        fs::remove_all(path, ec);
        removed += ec ? 0 : 1;
    }
    return removed;
}

fs::path writeCheckpoint(const fs::path &outputDir, const CheckpointState &state, model::LlamaForCausalLM &model,
                         const TrainingParams &params, const Optimizer &optimizer, int64_t keep)
{
    const fs::path target = outputDir / ("checkpoint-" + std::to_string(state.step));
    if (fs::exists(target)) {
        // The same step again (a stop right after a periodic save): that checkpoint is already whole.
        return target;
    }
    StagedFolder staged(target);
    if (params.method == TrainingMethod::Lora)
        model::savePeftAdapter(model, params.lora, state.identity.value("base_model", std::string()), staged.path());
    else
        model::savePretrained(model, staged.path());
    io::writeSafetensors(staged.path() / kOptimizerFile, optimizer.stateTensors(),
                         {{"optimizer", optimizerName(optimizer.kind())}});
    at::Generator generator = at::detail::getDefaultCPUGenerator();
    io::writeSafetensors(staged.path() / kRngFile, {{"torch_cpu", generator.get_state()}});
    writeFileAtomically(staged.path() / kStateFile, stateJson(state).dump(2) + "\n");
    staged.commit();

    if (keep > 0) {
        auto all = store::listCheckpoints(outputDir);
        for (size_t i = 0; i + static_cast<size_t>(keep) < all.size(); ++i) {
            // Hidden under a partial name first (one rename), so that a kill while removing never leaves a
            // visible checkpoint with files missing; removePartialCheckpoints takes what is left.
            const fs::path &old = all[i].second;
            std::string hidden = "."; // appended piece by piece: GCC 12 -O3 warns falsely on "." + string&&
            hidden += old.filename().string();
            hidden += ".partial-";
            hidden += std::to_string(::getpid());
            const fs::path doomed = old.parent_path() / hidden;
            std::error_code ec;
            fs::remove_all(doomed, ec);
            fs::remove_all(::rename(old.c_str(), doomed.c_str()) == 0 ? doomed : old, ec);
        }
    }
    return target;
}

fs::path findCheckpoint(const fs::path &path)
{
    if (!fs::exists(path))
        throw invalidInput("resume: " + path.string() + " does not exist");
    if (fs::exists(path / kStateFile))
        return path;
    const auto all = store::listCheckpoints(path);
    if (all.empty())
        throw invalidInput("resume: " + path.string() + " holds no checkpoint (checkpoint-<step>/ with " + kStateFile
                           + "); a run writes one every --save-every steps and when it is stopped");
    return all.back().second;
}

CheckpointState readCheckpointState(const fs::path &checkpoint)
{
    const fs::path file = checkpoint / kStateFile;
    nlohmann::json j;
    try {
        j = nlohmann::json::parse(readFile(file));
        CheckpointState s;
        if (j.value("format", std::string()) != "tunebench-checkpoint-1")
            throw invalidInput(file.string() + ": not a tunebench checkpoint (format " + j.value("format", std::string("missing")) + ")");
        s.step = j.at("step").get<int64_t>();
        s.runId = j.at("run_id").get<int64_t>();
        s.storePath = j.at("store").get<std::string>();
        s.samplerShuffles = j.at("data_position").at("shuffles").get<int64_t>();
        s.samplerCursor = j.at("data_position").at("cursor").get<int64_t>();
        s.optimizerSteps = j.at("optimizer_steps").get<int64_t>();
        s.identity = j.at("identity");
        s.training = j.at("training");
        if (j.contains("loss_scale")) {
            s.lossScale = j["loss_scale"].at("scale").get<double>();
            s.lossScaleGrowthTracker = j["loss_scale"].at("growth_tracker").get<int64_t>();
        }
        return s;
    } catch (const nlohmann::json::exception &e) {
        throw invalidInput(file.string() + ": " + e.what());
    }
}

void restoreCheckpoint(const fs::path &checkpoint, const CheckpointState &state, model::LlamaForCausalLM &model,
                       const TrainingParams &params, Optimizer &optimizer)
{
    if (params.method == TrainingMethod::Lora) {
        const fs::path file = checkpoint / "adapter_model.safetensors";
        model::loadPeftAdapterTensors(model, params.lora, readAll(file), file.string());
    } else {
        model::LlamaForCausalLM saved = model::loadPretrained(checkpoint);
        std::map<std::string, torch::Tensor> values;
        for (auto &item : saved->named_parameters())
            values[item.key()] = item.value();
        torch::NoGradGuard noGrad;
        for (auto &item : model->named_parameters()) {
            auto it = values.find(item.key());
            if (it == values.end() || it->second.sizes() != item.value().sizes())
                throw invalidInput(checkpoint.string() + ": parameter '" + item.key() + "' does not fit the model");
            item.value().copy_(it->second);
        }
    }
    const fs::path optimizerFile = checkpoint / kOptimizerFile;
    optimizer.loadState(readAll(optimizerFile), state.optimizerSteps, optimizerFile.string());
    const auto rng = readAll(checkpoint / kRngFile);
    auto it = rng.find("torch_cpu");
    if (it == rng.end())
        throw invalidInput((checkpoint / kRngFile).string() + ": tensor 'torch_cpu' is missing");
    at::Generator generator = at::detail::getDefaultCPUGenerator();
    generator.set_state(it->second);
}

} // namespace engine::train
