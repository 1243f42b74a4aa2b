// Steps from the user's files: a TorchScript module with saved inputs, a model folder with a text file.

#include "engine/core/error.h"
#include "engine/core/atomicfile.h"
#include "engine/core/jsonnesting.h"
#include "engine/inspect/inspector.h"
#include "engine/inspect/stepinspector.h"
#include "engine/io/pytorchbin.h"
#include "engine/io/safetensorsfile.h"
#include "engine/io/torchscriptmodule.h"
#include "engine/model/configfields.h"
#include "engine/model/llamamodel.h"
#include "engine/model/pretrained.h"
#include "engine/tokenize/tokenizer.h"
#include "engine/train/textcorpus.h"

#include <torch/csrc/jit/runtime/graph_executor.h>
#include <torch/script.h>
#include <torch/torch.h>

#include <nlohmann/json.hpp>

namespace engine::inspect {
namespace {

std::string typeList(const std::vector<c10::IValue> &values)
{
    std::string text;
    for (const c10::IValue &v : values)
        text += (text.empty() ? "" : ", ") + (v.isTensor() ? "Tensor" + c10::str(v.toTensor().sizes()) : v.tagKind());
    return text;
}

} // namespace

InspectionReport inspectTorchScript(const std::filesystem::path &moduleFile, const std::filesystem::path &inputsFile,
                                    const std::string &method, const InspectOptions &options)
{
    const std::vector<torch::Tensor> inputs = io::loadTensorListFile(inputsFile);
    const std::string source = moduleFile.filename().string() + " (" + method + ")";
    // Checked once up front, so that bad input is one clear error rather than a failed step.
    {
        io::TorchScriptModule module = io::TorchScriptModule::load(moduleFile);
        auto found = module.module().find_method(method);
        if (!found) {
            std::string names;
            for (const auto &m : module.module().get_methods())
                names += (names.empty() ? "" : ", ") + m.name();
            throw invalidInput(moduleFile.string() + ": has no method '" + method + "' (it has: " + names + ")");
        }
        std::vector<c10::IValue> stack{module.module()._ivalue()};
        for (const torch::Tensor &t : inputs)
            stack.emplace_back(t);
        try {
            found->function().getSchema().checkAndNormalizeInputs(stack, {});
        } catch (const c10::Error &e) {
            throw invalidInput(inputsFile.string() + ": the inputs (" +
                               typeList(std::vector<c10::IValue>(stack.begin() + 1, stack.end())) +
                               ") do not match " + c10::str(found->function().getSchema()) + ": " + torchErrorText(e));
        }
    }

    const StepFactory make = [=] {
        auto module = std::make_shared<io::TorchScriptModule>(io::TorchScriptModule::load(moduleFile));
        module->train(true);
        StepProgram p;
        p.source = "torchscript " + source;
        p.torchScript = true;
        p.parameters = module->namedParameters();
        p.forward = [module, inputs, method, moduleFile] {
            // No graph optimization for the recorded call: the profiling executor would otherwise rewrite
            // the method after its first calls (DifferentiableGraphBackward instead of BmmBackward0).
            const torch::jit::GraphOptimizerEnabledGuard plainCall(false);
            std::vector<c10::IValue> args(inputs.begin(), inputs.end());
            const c10::IValue result = module->module().get_method(method)(std::move(args));
            if (!result.isTensor())
                throw invalidInput(moduleFile.string() + ": " + method + " returned a " + result.tagKind() +
                                   ", not a tensor (backward needs a tensor to sum)");
            return result.toTensor();
        };
        return p;
    };
    return inspectStep(make, options);
}

namespace {

/// A PEFT LoRA adapter folder (adapter_config.json) stands for its base model with the adapter merged;
/// returns the folder whose config and weights to load.
std::filesystem::path baseFolderOf(const std::filesystem::path &modelFolder, bool &adapter)
{
    adapter = std::filesystem::exists(modelFolder / "adapter_config.json");
    if (!adapter)
        return modelFolder;
    nlohmann::json config;
    const std::string configText = readFile(modelFolder / "adapter_config.json");
    checkJsonNesting(configText, (modelFolder / "adapter_config.json").string());
    try {
        config = nlohmann::json::parse(configText);
    } catch (const nlohmann::json::exception &e) {
        throw invalidInput((modelFolder / "adapter_config.json").string() + ": not valid JSON (" + e.what() + ")");
    }
    const std::string base = model::configfields::stringOrEmpty(config, "base_model_name_or_path");
    if (base.empty() || !std::filesystem::is_directory(base)) {
        throw invalidInput((modelFolder / "adapter_config.json").string() + ": its base model \"" + base
                           + "\" is not a folder here; the adapter cannot be inspected without it");
    }
    return base;
}

/// The step's tokens: a batch the trainer saved (batch.safetensors: input_ids [B, T], labels [B, T] with
/// -100 = ignored), or the first tokens of a text file as one sequence (labels = the next tokens).
struct StepBatch {
    torch::Tensor inputIds;
    torch::Tensor labels;
};

StepBatch readStepBatch(const std::filesystem::path &dataFile, const std::filesystem::path &modelFolder,
                        const model::LlamaConfig &config, const InspectOptions &options)
{
    StepBatch batch;
    if (dataFile.extension() == ".safetensors") {
        const io::SafetensorsFile file = io::SafetensorsFile::open(dataFile);
        if (!file.header().find("input_ids"))
            throw invalidInput(dataFile.string() + ": holds no input_ids tensor (a batch as training saves it has input_ids and labels)");
        batch.inputIds = file.tensor("input_ids", {.dtype = torch::kInt64, .device = torch::kCPU, .copy = true});
        if (batch.inputIds.dim() != 2 || batch.inputIds.size(1) < 1)
            throw invalidInput(dataFile.string() + ": input_ids must be [batch, tokens], not " + c10::str(batch.inputIds.sizes()));
        if (file.header().find("labels")) {
            batch.labels = file.tensor("labels", {.dtype = torch::kInt64, .device = torch::kCPU, .copy = true});
            if (batch.labels.sizes() != batch.inputIds.sizes())
                throw invalidInput(dataFile.string() + ": labels " + c10::str(batch.labels.sizes()) + " do not match input_ids "
                                   + c10::str(batch.inputIds.sizes()));
        } else { // the next token of each position, the last one ignored
            batch.labels = torch::full_like(batch.inputIds, -100);
            batch.labels.narrow(1, 0, batch.inputIds.size(1) - 1).copy_(batch.inputIds.narrow(1, 1, batch.inputIds.size(1) - 1));
        }
    } else {
        const std::string text = train::readCorpusText(dataFile);
        std::vector<int64_t> ids;
        std::unique_ptr<tokenize::Tokenizer> tokenizer;
        try {
            tokenizer = tokenize::loadTokenizer(modelFolder);
        } catch (const engine::Error &) {
            tokenizer = nullptr; // no tokenizer in the folder: bytes as ids (below the vocabulary)
        }
        const size_t wanted = static_cast<size_t>(options.sequenceLength + 1);
        if (tokenizer) {
            for (int id : tokenizer->encode(text.substr(0, wanted * 16), true))
                ids.push_back(id);
        } else {
            for (unsigned char c : text.substr(0, wanted))
                ids.push_back(static_cast<int64_t>(c) % config.vocabSize);
        }
        if (ids.size() > wanted)
            ids.resize(wanted);
        if (ids.size() < 2)
            throw invalidInput(dataFile.string() + ": too short for one training step (needs at least 2 tokens)");
        const torch::Tensor tokens = torch::tensor(ids, torch::kInt64).view({1, -1});
        const int64_t n = tokens.size(1) - 1;
        batch.inputIds = tokens.narrow(1, 0, n).clone();
        batch.labels = tokens.narrow(1, 1, n).clone();
    }
    const int64_t low = batch.inputIds.min().item<int64_t>(), high = batch.inputIds.max().item<int64_t>();
    if (low < 0 || high >= config.vocabSize) {
        throw invalidInput(dataFile.string() + ": token id " + std::to_string(low < 0 ? low : high)
                           + " is outside the model's vocab_size " + std::to_string(config.vocabSize));
    }
    if (batch.labels.ne(-100).sum().item<int64_t>() == 0)
        throw invalidInput(dataFile.string() + ": no token has a label (all are -100): the step has no loss");
    return batch;
}

} // namespace

InspectionReport inspectModelFolder(const std::filesystem::path &modelFolder, const std::filesystem::path &dataFile,
                                    const InspectOptions &options)
{
    bool adapter = false;
    const std::filesystem::path base = baseFolderOf(modelFolder, adapter);
    const model::LlamaConfig config = model::LlamaConfig::fromFile(base);
    // The tokenizer of a text file: the folder's own (training saves one beside an adapter), else the base's.
    const std::filesystem::path tokenizerFolder =
        tokenize::holdsTokenizer(modelFolder) || !adapter ? modelFolder : base;
    const StepBatch batch = readStepBatch(dataFile, tokenizerFolder, config, options);
    const bool weights = model::holdsWeights(base);
    const StepFactory make = [=] {
        auto llama = std::make_shared<model::LlamaForCausalLM>(weights ? model::loadPretrained(base)
                                                                       : model::LlamaForCausalLM(config));
        if (!weights)
            (*llama)->initializeWeights(0);
        if (adapter)
            model::applyPeftLoraAdapter(*llama, modelFolder);
        (*llama)->train();
        StepProgram p;
        p.source = "model " + modelFolder.string() + (adapter ? " (adapter over " + base.string() + ")" : std::string())
            + " on " + dataFile.filename().string();
        for (const auto &item : (*llama)->named_parameters())
            p.parameters.emplace_back(item.key(), item.value());
        std::vector<at::Tensor> all;
        for (const auto &[n, t] : p.parameters)
            all.push_back(t);
        p.optimizerParameters = all;
        p.forward = [llama, batch] {
            // The trainer's loss: summed cross-entropy over the labelled tokens, divided by their count.
            const torch::Tensor logits = (*llama)->forward(batch.inputIds);
            const double count = static_cast<double>(batch.labels.ne(-100).sum().item<int64_t>());
            return torch::nn::functional::cross_entropy(logits.reshape({-1, logits.size(-1)}), batch.labels.reshape({-1}),
                                                        torch::nn::functional::CrossEntropyFuncOptions()
                                                            .reduction(torch::kSum)
                                                            .ignore_index(-100))
                / count;
        };
        return p;
    };
    InspectOptions o = options;
    o.referenceRun = false;
    return inspectStep(make, o);
}

} // namespace engine::inspect
