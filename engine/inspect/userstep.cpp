// Steps from the user's files: a TorchScript module with saved inputs, a model folder with a text file.

#include "engine/core/error.h"
#include "engine/inspect/inspector.h"
#include "engine/inspect/stepinspector.h"
#include "engine/io/pytorchbin.h"
#include "engine/io/torchscriptmodule.h"
#include "engine/model/llamamodel.h"
#include "engine/model/pretrained.h"
#include "engine/tokenize/tokenizer.h"
#include "engine/train/textcorpus.h"

#include <torch/csrc/jit/runtime/graph_executor.h>
#include <torch/script.h>
#include <torch/torch.h>

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

InspectionReport inspectModelFolder(const std::filesystem::path &modelFolder, const std::filesystem::path &dataFile,
                                    const InspectOptions &options)
{
    const model::LlamaConfig config = model::LlamaConfig::fromFile(modelFolder);
    const std::string text = train::readCorpusText(dataFile);
    std::vector<int64_t> ids;
    {
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
        for (int64_t id : ids)
            if (id < 0 || id >= config.vocabSize)
                throw invalidInput(dataFile.string() + ": token id " + std::to_string(id) +
                                   " is outside the model's vocab_size " + std::to_string(config.vocabSize));
    }
    const bool weights = model::holdsWeights(modelFolder);
    const StepFactory make = [=] {
        auto llama = std::make_shared<model::LlamaForCausalLM>(weights ? model::loadPretrained(modelFolder)
                                                                       : model::LlamaForCausalLM(config));
        if (!weights)
            (*llama)->initializeWeights(0);
        (*llama)->train();
        StepProgram p;
        p.source = "model " + modelFolder.string() + " on " + dataFile.filename().string();
        for (const auto &item : (*llama)->named_parameters())
            p.parameters.emplace_back(item.key(), item.value());
        std::vector<at::Tensor> all;
        for (const auto &[n, t] : p.parameters)
            all.push_back(t);
        p.optimizerParameters = all;
        p.forward = [llama, ids] {
            const torch::Tensor tokens = torch::tensor(ids, torch::kInt64).view({1, -1});
            const int64_t n = tokens.size(1) - 1;
            const torch::Tensor logits = (*llama)->forward(tokens.narrow(1, 0, n));
            return torch::nn::functional::cross_entropy(logits.view({n, -1}), tokens.narrow(1, 1, n).reshape({-1}));
        };
        return p;
    };
    InspectOptions o = options;
    o.referenceRun = false;
    return inspectStep(make, o);
}

} // namespace engine::inspect
