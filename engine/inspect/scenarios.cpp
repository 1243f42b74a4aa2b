// The built-in scenarios: small models that show each diagnosis, and their fixes.

#include "engine/core/error.h"
#include "engine/inspect/inspector.h"
#include "engine/inspect/scenariocatalog.h"
#include "engine/inspect/scenariomodels.h"
#include "engine/inspect/stepinspector.h"

#include <torch/torch.h>

#include <functional>
#include <map>

namespace engine::inspect {
namespace {

std::vector<std::pair<std::string, at::Tensor>> namedParameters(torch::nn::Module &module)
{
    std::vector<std::pair<std::string, at::Tensor>> out;
    for (const auto &item : module.named_parameters(/*recurse=*/true))
        out.emplace_back(item.key(), item.value());
    return out;
}

StepFactory kvCacheStep(bool fixed)
{
    return [fixed] {
        torch::manual_seed(0);
        auto model = std::make_shared<TinyDecoder>(fixed ? CacheMode::CloneBeforeWrite : CacheMode::InPlace);
        StepProgram p;
        p.source = std::string("scenario ") + (fixed ? "kv-cache-fixed" : "kv-cache-inplace");
        p.fixContext = FixContext::KvCache;
        p.parameters = namedParameters(*model);
        p.forward = [model] {
            // Incremental decoding with gradients on: a 3-token prompt, then one token at a time.
            const torch::Tensor ids = torch::tensor({3, 7, 1, 4, 9, 2}, torch::kInt64).view({1, 6});
            return model->decodeLoss(ids, 3);
        };
        return p;
    };
}

StepFactory nanLogStep(bool fixed)
{
    return [fixed] {
        torch::manual_seed(0);
        auto model = std::make_shared<NanLogModel>(fixed);
        StepProgram p;
        p.source = std::string("scenario nan-log") + (fixed ? " (fixed: log of a clamped value)" : "");
        p.parameters = namedParameters(*model);
        p.forward = [model] {
            const torch::Tensor x = torch::linspace(-1.0, 1.0, 32).view({4, 8});
            return model->forward(x);
        };
        return p;
    };
}

StepFactory frozenStep(bool fixed)
{
    return [fixed] {
        torch::manual_seed(0);
        auto model = std::make_shared<FrozenModel>();
        StepProgram p;
        p.source = std::string("scenario frozen-in-optimizer") + (fixed ? " (fixed: optimizer of trainable parameters)" : "");
        p.parameters = namedParameters(*model);
        std::vector<at::Tensor> optimizerParams;
        if (fixed) {
            for (const auto &[name, t] : p.parameters)
                if (t.requires_grad())
                    optimizerParams.push_back(t);
        } else {
            // Built before the freeze, as the classic bug: the frozen embedding stays in the optimizer,
            // and the head's bias, added later, was never given to it.
            optimizerParams = {model->embed->weight, model->head->weight};
        }
        p.optimizerParameters = optimizerParams;
        p.forward = [model] {
            const torch::Tensor ids = torch::tensor({1, 5, 2, 7}, torch::kInt64).view({1, 4});
            return model->forward(ids);
        };
        return p;
    };
}

StepFactory silentMutationStep(bool fixed)
{
    return [fixed] {
        torch::manual_seed(0);
        auto model = std::make_shared<SilentMutationModel>(fixed);
        StepProgram p;
        p.source = std::string("scenario silent-mutation") + (fixed ? " (fixed: clone instead of .data)" : "");
        p.parameters = namedParameters(*model);
        p.forward = [model] { return model->forward(torch::linspace(0.5, 1.5, 16).view({2, 8})); };
        return p;
    };
}

/// How each built-in scenario is built; the names, descriptions and which have a fix are the catalog's.
std::function<StepFactory(bool fixed)> scenarioMaker(const std::string &name)
{
    static const std::map<std::string, std::function<StepFactory(bool fixed)>> makers = {
        {"kv-cache-inplace", kvCacheStep},
        {"kv-cache-fixed", [](bool) { return kvCacheStep(true); }},
        {"nan-log", nanLogStep},
        {"frozen-in-optimizer", frozenStep},
        {"silent-mutation", silentMutationStep},
    };
    scenarioInfo(name); // an unknown name: the catalog's error, listing the known ones
    return makers.at(name);
}

} // namespace

InspectionReport inspectScenario(const std::string &name, const InspectOptions &options)
{
    return inspectStep(scenarioMaker(name)(false), options);
}

InspectionReport verifyFix(const std::string &name, const InspectOptions &options)
{
    if (!scenarioInfo(name).hasFix)
        throw invalidInput("scenario '" + name + "' has no fix to verify (it is already the fixed version)");
    return inspectStep(scenarioMaker(name)(true), options);
}

} // namespace engine::inspect
