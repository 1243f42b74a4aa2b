// The writer that test_killwriters kills: one of tunebench's file writers in a loop, forever, each
// version's content tied to its number, reporting "wrote N" on stdout once version N is published;
// and the readers that check, afterwards, what a killed writer left.
//
//   killwriter checkpoint DIR       writeCheckpoint(DIR, step N, keep 2) of a full fine-tune: weights,
//                                   optimizer moments, generator state, trainer_state.json
//   killwriter model DIR            DIR/model replaced by save_pretrained weights of version N, as the
//                                   trainer saves its final model (StagedFolder, commit(replace))
//   killwriter adapter DIR          DIR/adapter replaced by a PEFT adapter of version N, likewise
//   killwriter plan FILE            FILE replaced by a plan export (tunebench plan --output) whose cpu
//                                   budget is N GiB
//   killwriter verify-MODE PATH     reads what is there with tunebench's own readers; prints "version N"
//                                   (the newest checkpoint's step for checkpoint) and exits 0, or prints
//                                   what is wrong and exits 1. Every visible checkpoint must read back.
//
// Weights of version N hold N in every element of the final norm (and of lora_B for the adapter), so a
// reader sees at once whether a folder mixes versions.

#include "engine/core/atomicfile.h"
#include "engine/io/safetensorsfile.h"
#include "engine/model/llamaconfig.h"
#include "engine/model/llamamodel.h"
#include "engine/model/lora.h"
#include "engine/model/pretrained.h"
#include "engine/plan/devicemapjson.h"
#include "engine/plan/planner.h"
#include "engine/store/runfolder.h"
#include "engine/train/checkpoint.h"
#include "engine/train/optimizer.h"

#include <torch/torch.h>

#include <nlohmann/json.hpp>

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <string>
#include <vector>

namespace {

namespace fs = std::filesystem;
using engine::model::LlamaConfig;
using engine::model::LlamaForCausalLM;

LlamaConfig writerConfig()
{
    // About 1.2 M parameters: a checkpoint of ~15 MB takes long enough to write that kills land inside it.
    LlamaConfig config = engine::model::demoConfig();
    config.hiddenSize = 128;
    config.intermediateSize = 256;
    config.numHiddenLayers = 4;
    config.numAttentionHeads = 4;
    config.numKeyValueHeads = 2;
    config.vocabSize = 1024;
    config.tieWordEmbeddings = false;
    return config;
}

engine::model::LoraSettings adapterSettings()
{
    engine::model::LoraSettings lora;
    lora.r = 8;
    lora.targets = {"q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"};
    return lora;
}

LlamaForCausalLM makeModel()
{
    LlamaForCausalLM model(writerConfig());
    model->initializeWeights(7);
    return model;
}

void stamp(LlamaForCausalLM &model, int64_t version)
{
    torch::NoGradGuard noGrad;
    model->model->norm->weight.fill_(static_cast<double>(version));
}

/// The version every element of `t` holds; throws when they differ.
int64_t versionOf(const torch::Tensor &t, const std::string &what)
{
    const double first = t.flatten()[0].item<double>();
    if (!torch::all(t == first).item<bool>())
        throw std::runtime_error(what + " mixes versions");
    return static_cast<int64_t>(first);
}

void report(int64_t version)
{
    std::printf("wrote %lld\n", static_cast<long long>(version));
    std::fflush(stdout);
}

engine::train::TrainingParams fullParams()
{
    engine::train::TrainingParams params;
    params.method = engine::train::TrainingMethod::Full;
    return params;
}

engine::train::Optimizer makeOptimizer(LlamaForCausalLM &model)
{
    std::vector<std::pair<std::string, torch::Tensor>> named;
    for (const auto &item : model->named_parameters())
        named.emplace_back(item.key(), item.value());
    return engine::train::Optimizer(engine::train::OptimizerKind::AdamW, engine::train::weightDecayGroups(named, 0.1));
}

[[noreturn]] void writeCheckpoints(const fs::path &dir)
{
    LlamaForCausalLM model = makeModel();
    engine::train::Optimizer optimizer = makeOptimizer(model);
    // One real step, so that the optimizer has moments to save.
    model->forward(torch::zeros({1, 4}, torch::kInt64)).sum().backward();
    optimizer.step(1e-3);
    const auto params = fullParams();
    // As a resumed run: what a killed writer left half-written goes, and the steps number on.
    engine::train::removePartialCheckpoints(dir);
    const auto existing = engine::store::listCheckpoints(dir);
    for (int64_t step = existing.empty() ? 1 : existing.back().first + 1;; ++step) {
        stamp(model, step);
        engine::train::CheckpointState state;
        state.step = step;
        state.runId = 1;
        state.storePath = (dir / "runs.db").string();
        state.optimizerSteps = optimizer.stepCount();
        state.identity = {{"model", "killwriter"}};
        state.training = nlohmann::json::object();
        engine::train::writeCheckpoint(dir, state, model, params, optimizer, 2);
        report(step);
    }
}

int verifyCheckpoints(const fs::path &dir)
{
    const auto all = engine::store::listCheckpoints(dir);
    if (all.empty()) {
        std::printf("version 0\n");
        return 0;
    }
    for (const auto &[step, folder] : all) {
        LlamaForCausalLM model = makeModel();
        engine::train::Optimizer optimizer = makeOptimizer(model);
        const auto state = engine::train::readCheckpointState(folder);
        engine::train::restoreCheckpoint(folder, state, model, fullParams(), optimizer);
        if (state.step != step || versionOf(model->model->norm->weight, folder.string()) != step)
            throw std::runtime_error(folder.string() + " holds the weights of another step");
    }
    std::printf("version %lld\n", static_cast<long long>(all.back().first));
    return 0;
}

[[noreturn]] void writeModels(const fs::path &dir)
{
    LlamaForCausalLM model = makeModel();
    for (int64_t version = 1;; ++version) {
        stamp(model, version);
        engine::StagedFolder staged(dir / "model");
        engine::model::savePretrained(model, staged.path());
        staged.commit(/*replace=*/true);
        report(version);
    }
}

int verifyModel(const fs::path &dir)
{
    if (!fs::exists(dir / "model")) {
        std::printf("version 0\n");
        return 0;
    }
    LlamaForCausalLM model = engine::model::loadPretrained(dir / "model");
    std::printf("version %lld\n", static_cast<long long>(versionOf(model->model->norm->weight, "model/")));
    return 0;
}

[[noreturn]] void writeAdapters(const fs::path &dir)
{
    LlamaForCausalLM model = makeModel();
    const auto lora = adapterSettings();
    engine::model::attachLora(model, lora);
    for (int64_t version = 1;; ++version) {
        {
            torch::NoGradGuard noGrad;
            for (auto &item : model->named_parameters()) {
                if (item.key().find("lora_B") != std::string::npos)
                    item.value().fill_(static_cast<double>(version));
            }
        }
        engine::StagedFolder staged(dir / "adapter");
        engine::model::savePeftAdapter(model, lora, "killwriter-base", staged.path());
        staged.commit(/*replace=*/true);
        report(version);
    }
}

int verifyAdapter(const fs::path &dir)
{
    if (!fs::exists(dir / "adapter")) {
        std::printf("version 0\n");
        return 0;
    }
    // The reader users' adapters go through (tunebench export --merged, score --adapter) accepts it...
    LlamaForCausalLM model = makeModel();
    if (engine::model::applyPeftLoraAdapter(model, dir / "adapter") != static_cast<int>(adapterSettings().targets.size()) * 4)
        throw std::runtime_error("adapter/ does not adapt every target of every layer");
    // ...and every lora_B holds one version.
    const fs::path file = dir / "adapter" / "adapter_model.safetensors";
    const auto tensors = engine::io::SafetensorsFile::open(file);
    int64_t version = -1;
    for (const auto &info : tensors.header().tensors) {
        if (info.name.find("lora_B") == std::string::npos)
            continue;
        const int64_t v = versionOf(tensors.tensor(info.name, {}), info.name);
        if (version >= 0 && v != version)
            throw std::runtime_error(file.string() + " mixes versions");
        version = v;
    }
    std::printf("version %lld\n", static_cast<long long>(version));
    return 0;
}

engine::plan::Planner makePlanner()
{
    return engine::plan::Planner(engine::plan::planModelFromConfig(writerConfig().toJson(), "killwriter config"));
}

[[noreturn]] void writePlans(const fs::path &file)
{
    const engine::plan::Planner planner = makePlanner();
    const auto exported = [&](int64_t version) {
        const auto plan = planner.plan(engine::plan::parseMaxMemory("cpu=" + std::to_string(version) + "GiB"), {});
        return engine::plan::exportJson(plan).dump(2) + "\n";
    };
    // Planned ahead, so that the loop spends its time writing (where the kills should land).
    std::vector<std::string> texts;
    for (int64_t version = 1; version <= 16; ++version)
        texts.push_back(exported(version));
    for (int64_t version = 1;; ++version) {
        engine::writeFileAtomically(file, version <= 16 ? texts[version - 1] : exported(version));
        report(version);
    }
}

int verifyPlan(const fs::path &file)
{
    if (!fs::exists(file)) {
        std::printf("version 0\n");
        return 0;
    }
    const engine::plan::Planner planner = makePlanner();
    const auto plan = planner.revalidate(
        engine::plan::importDeviceMap(engine::plan::readDeviceMapFile(file), file.string(), {}, {}));
    const int64_t budget = plan.devices.at(0).budget;
    if (budget % (int64_t(1) << 30) != 0)
        throw std::runtime_error(file.string() + ": a cpu budget of " + std::to_string(budget) + " bytes was never written");
    std::printf("version %lld\n", static_cast<long long>(budget >> 30));
    return 0;
}

} // namespace

int main(int argc, char **argv)
{
    if (argc != 3) {
        std::fprintf(stderr, "usage: killwriter [verify-]checkpoint|model|adapter|plan PATH\n");
        return 2;
    }
    const std::string mode = argv[1];
    const fs::path path = argv[2];
    torch::set_num_threads(1);
    try {
        if (mode == "checkpoint")
            writeCheckpoints(path);
        if (mode == "model")
            writeModels(path);
        if (mode == "adapter")
            writeAdapters(path);
        if (mode == "plan")
            writePlans(path);
        if (mode == "verify-checkpoint")
            return verifyCheckpoints(path);
        if (mode == "verify-model")
            return verifyModel(path);
        if (mode == "verify-adapter")
            return verifyAdapter(path);
        if (mode == "verify-plan")
            return verifyPlan(path);
    } catch (const std::exception &e) {
        std::printf("error %s\n", e.what());
        return 1;
    }
    std::fprintf(stderr, "killwriter: unknown mode %s\n", mode.c_str());
    return 2;
}
