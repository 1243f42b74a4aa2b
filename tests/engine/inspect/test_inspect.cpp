// The autograd inspector: each built-in scenario's diagnosis, the TorchScript module with an in-place
// cache bug (tests/data/inspect, made by make_inplace_cache_module.py), prediction vs failure, a clean
// recording that changes no gradient, NaN origins, the guard, and bad input.

#include "engine/core/error.h"
#include "engine/core/modulescope.h"
#include "engine/inspect/inspector.h"
#include "engine/inspect/inspectionoutput.h"
#include "engine/inspect/scenariomodels.h"
#include "engine/inspect/stepinspector.h"
#include "engine/inspect/trainingguard.h"
#include "engine/io/safetensorsfile.h"
#include "support/expecterror.h"
#include "support/tempdir.h"
#include "support/tinymodels.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <torch/torch.h>

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <regex>
#include <sstream>

namespace fs = std::filesystem;
using namespace engine::inspect;
using testing_support::expectError;

namespace {

const fs::path kData = fs::path(TUNEBENCH_TEST_DATA) / "inspect";

std::string slurp(const fs::path &path)
{
    std::ifstream in(path, std::ios::binary);
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
}

/// "is at version 3; expected version 2" -> {3, 2}.
std::pair<int64_t, int64_t> versionsIn(const std::string &message)
{
    std::smatch m;
    const std::regex pattern("is at version ([0-9]+); expected version ([0-9]+) instead");
    if (!std::regex_search(message, m, pattern))
        return {-1, -1};
    return {std::stoll(m[1]), std::stoll(m[2])};
}

/// Python prints the tensor type as "torch.FloatTensor", C++ as "CPUFloatType".
std::string cppTypeNames(std::string message)
{
    const std::string py = "torch.FloatTensor";
    if (size_t at = message.find(py); at != std::string::npos)
        message.replace(at, py.size(), "CPUFloatType");
    return message;
}

std::string plainKvCacheError()
{
    torch::manual_seed(0);
    TinyDecoder model(CacheMode::InPlace);
    const torch::Tensor ids = torch::tensor({3, 7, 1, 4, 9, 2}, torch::kInt64).view({1, 6});
    try {
        model.decodeLoss(ids, 3).backward();
    } catch (const c10::Error &e) {
        return torchErrorText(e);
    }
    return {};
}

} // namespace

TEST(InspectScenario, KvCacheInplaceWithoutTheInspectorRaisesPyTorchsExactError)
{
    const std::string error = plainKvCacheError();
    EXPECT_TRUE(error.starts_with("one of the variables needed for gradient computation has been modified by an "
                                  "inplace operation: [CPUFloatType ["))
        << error;
    EXPECT_NE(error.find("which is output 0 of AsStridedBackward0"), std::string::npos) << error;
    EXPECT_NE(error.find("Hint: enable anomaly detection"), std::string::npos) << error;
}

TEST(InspectScenario, KvCacheInplaceNamesTheWriteTheSaveAndTheFix)
{
    const InspectionReport r = inspectScenario("kv-cache-inplace");
    ASSERT_EQ(r.status, InspectStatus::InplaceConflict) << r.summary << " / " << r.error;
    ASSERT_TRUE(r.conflict);
    const InplaceConflict &c = *r.conflict;
    EXPECT_EQ(c.culpritOp, "aten::copy_");
    EXPECT_EQ(c.culpritModule, "attention");
    EXPECT_EQ(c.savedByOp, "aten::bmm");
    EXPECT_EQ(c.savedByModule, "attention");
    EXPECT_EQ(c.backwardNode, "BmmBackward0");
    EXPECT_EQ(c.dtype, "float32");
    EXPECT_EQ(c.tensorShape.size(), 3u);
    EXPECT_TRUE(c.predicted);
    EXPECT_TRUE(c.raisedInBackward);
    EXPECT_FALSE(r.backwardSucceeded);
    // The culprit is in the trace, is an in-place op, and came after the op that saved the tensor.
    ASSERT_GE(c.culpritIndex, 0);
    ASSERT_LT(c.culpritIndex, static_cast<int64_t>(r.ops.size()));
    EXPECT_EQ(r.ops[static_cast<size_t>(c.culpritIndex)].name, "aten::copy_");
    EXPECT_TRUE(r.ops[static_cast<size_t>(c.culpritIndex)].writesInput);
    EXPECT_GT(c.culpritIndex, c.savedByOpIndex);
    EXPECT_EQ(r.ops[static_cast<size_t>(c.savedByOpIndex)].backwardNode, "BmmBackward0");
    ASSERT_FALSE(c.writes.empty());
    EXPECT_EQ(c.writes.front().opIndex, c.culpritIndex);
    EXPECT_EQ(c.writes.front().versionAfter, c.savedVersion + 1);
    EXPECT_EQ(c.writes.back().versionAfter, c.currentVersion);
    ASSERT_EQ(c.fixes.size(), 4u);
    EXPECT_NE(c.fixes[0].find("Clone before writing"), std::string::npos) << c.fixes[0];
    EXPECT_NE(c.fixes[1].find("cache off for training"), std::string::npos) << c.fixes[1];
    // PyTorch's own message (the reference run without hooks) and the versions agree with the diagnosis.
    EXPECT_EQ(r.pytorchError, plainKvCacheError());
    const auto [current, saved] = versionsIn(r.pytorchError);
    EXPECT_EQ(current, c.currentVersion);
    EXPECT_EQ(saved, c.savedVersion);
}

TEST(InspectScenario, PredictionBeforeBackwardAgreesWithTheFailureAfterIt)
{
    // Without the reference run the message comes from the inspector's own version check, which must
    // say exactly what PyTorch says.
    InspectOptions options;
    options.referenceRun = false;
    const InspectionReport r = inspectScenario("kv-cache-inplace", options);
    ASSERT_TRUE(r.conflict);
    EXPECT_TRUE(r.conflict->predicted);
    EXPECT_TRUE(r.conflict->raisedInBackward);
    EXPECT_EQ(r.pytorchError, plainKvCacheError());
    // Every saved tensor found stale before backward is one backward would reject.
    int predictedStale = 0;
    for (const SavedTensorInfo &s : r.savedTensors)
        if (s.versionAtCheck >= 0 && s.versionAtCheck != s.savedVersion)
            ++predictedStale;
    EXPECT_GE(predictedStale, 1);
}

TEST(InspectScenario, KvCacheFixedAndVerifyFixRunBackward)
{
    const InspectionReport fixed = inspectScenario("kv-cache-fixed");
    EXPECT_EQ(fixed.status, InspectStatus::Ok) << fixed.summary;
    EXPECT_TRUE(fixed.backwardSucceeded);
    EXPECT_TRUE(fixed.pytorchError.empty()) << fixed.pytorchError;
    const InspectionReport verified = verifyFix("kv-cache-inplace");
    EXPECT_EQ(verified.status, InspectStatus::Ok) << verified.summary;
    EXPECT_TRUE(verified.backwardSucceeded);
    EXPECT_FALSE(verified.conflict);
    for (const GradientRow &g : verified.gradients)
        EXPECT_TRUE(g.hasGrad) << g.name;
}

TEST(InspectScenario, NanLogFindsTheLogInTheHead)
{
    const InspectionReport r = inspectScenario("nan-log");
    ASSERT_EQ(r.status, InspectStatus::Nan) << r.summary;
    ASSERT_TRUE(r.nan);
    EXPECT_EQ(r.nan->op, "aten::log");
    EXPECT_EQ(r.nan->module, "head");
    EXPECT_EQ(r.nan->phase, Phase::Forward);
    EXPECT_TRUE(r.nan->hasNan);
    ASSERT_EQ(r.nan->inputs.size(), 1u);
    EXPECT_LT(r.nan->inputs[0].min, 0.0); // the log's input went negative
    EXPECT_EQ(r.ops[static_cast<size_t>(r.nan->opIndex)].name, "aten::log");
    EXPECT_EQ(verifyFix("nan-log").status, InspectStatus::Ok);
}

TEST(InspectScenario, FrozenInOptimizerFlagsBothParameters)
{
    const InspectionReport r = inspectScenario("frozen-in-optimizer");
    EXPECT_EQ(r.status, InspectStatus::Ok);
    ASSERT_EQ(r.gradients.size(), 3u);
    std::map<std::string, GradientRow> rows;
    for (const GradientRow &g : r.gradients)
        rows[g.name] = g;
    EXPECT_NE(rows["embed.weight"].problem.find("frozen"), std::string::npos);
    EXPECT_FALSE(rows["embed.weight"].hasGrad);
    EXPECT_NE(rows["head.bias"].problem.find("not in the optimizer"), std::string::npos);
    EXPECT_TRUE(rows["head.bias"].hasGrad);
    EXPECT_GT(rows["head.bias"].gradNorm, 0.0);
    EXPECT_TRUE(rows["head.weight"].problem.empty()) << rows["head.weight"].problem;
    EXPECT_EQ(r.gradientProblems.size(), 2u);
    const InspectionReport fixed = verifyFix("frozen-in-optimizer"); // only trainable parameters in the optimizer
    EXPECT_TRUE(fixed.gradientProblems.empty()) << fixed.gradientProblems.front();
}

TEST(InspectScenario, SilentMutationFoundByChecksum)
{
    const InspectionReport r = inspectScenario("silent-mutation");
    ASSERT_EQ(r.status, InspectStatus::SilentMutation) << r.summary;
    ASSERT_FALSE(r.mutations.empty());
    EXPECT_EQ(r.mutations[0].savedByOp, "aten::mul");
    EXPECT_EQ(r.mutations[0].backwardNode, "MulBackward0");
    EXPECT_EQ(verifyFix("silent-mutation").status, InspectStatus::Ok);
}

TEST(InspectScenario, UnknownNameIsRefused)
{
    expectError([] { inspectScenario("nope"); }, engine::ErrorKind::InvalidInput, "kv-cache-inplace");
    expectError([] { verifyFix("kv-cache-fixed"); }, engine::ErrorKind::InvalidInput, "no fix");
}

TEST(InspectRecording, CleanStepChangesNoGradient)
{
    const auto config = testing_support::tinyLlama();
    const torch::Tensor ids = testing_support::someIds(2, 12);
    auto step = [&](engine::model::LlamaForCausalLM &model) {
        const torch::Tensor logits = model->forward(ids.narrow(1, 0, 11));
        return torch::nn::functional::cross_entropy(logits.reshape({-1, config.vocabSize}),
                                                    ids.narrow(1, 1, 11).reshape({-1}));
    };
    engine::model::LlamaForCausalLM plain = testing_support::randomLlama(config);
    step(plain).backward();

    engine::model::LlamaForCausalLM recorded = testing_support::randomLlama(config);
    InspectOptions options;
    options.referenceRun = false;
    const InspectionReport r = inspectStep(
        [&] {
            StepProgram p;
            p.source = "tiny llama";
            for (const auto &item : recorded->named_parameters())
                p.parameters.emplace_back(item.key(), item.value());
            p.forward = [&] { return step(recorded); };
            return p;
        },
        options);
    EXPECT_EQ(r.status, InspectStatus::Ok) << r.summary;
    EXPECT_GT(r.stats.opsKept, 100);
    EXPECT_GT(r.stats.savedTensors, 20);
    const auto a = plain->named_parameters();
    const auto b = recorded->named_parameters();
    ASSERT_EQ(a.size(), b.size());
    for (size_t i = 0; i < a.size(); ++i) {
        ASSERT_TRUE(b[i].value().grad().defined()) << b[i].key();
        EXPECT_TRUE(torch::equal(a[i].value().grad(), b[i].value().grad())) << a[i].key();
    }
    // Module paths come from the model's scopes.
    bool sawMlp = false, sawBackward = false;
    for (const OpRecord &op : r.ops) {
        sawMlp = sawMlp || op.module == "model.layers.1.mlp.down_proj";
        sawBackward = sawBackward || (op.isBackwardNode && op.phase == Phase::Backward);
    }
    EXPECT_TRUE(sawMlp);
    EXPECT_TRUE(sawBackward);
    EXPECT_FALSE(engine::ModuleScope::tracking()); // the recorder switched scope tracking off again
}

TEST(InspectRecording, InjectedNanIsCaughtAtTheRightOp)
{
    const auto config = testing_support::tinyLlama();
    engine::model::LlamaForCausalLM model = testing_support::randomLlama(config);
    {
        torch::NoGradGuard noGrad;
        model->named_parameters()["model.layers.1.mlp.down_proj.weight"].select(0, 3).select(0, 5).fill_(std::nan(""));
    }
    const torch::Tensor ids = testing_support::someIds(1, 8);
    InspectOptions options;
    options.referenceRun = false;
    const InspectionReport r = inspectStep(
        [&] {
            StepProgram p;
            p.forward = [&] { return model->forward(ids).sum(); };
            return p;
        },
        options);
    ASSERT_EQ(r.status, InspectStatus::Nan) << r.summary;
    EXPECT_EQ(r.nan->module, "model.layers.1.mlp.down_proj");
    EXPECT_EQ(r.nan->phase, Phase::Forward);
    // The NaN came in through the weight: one of the op's inputs holds it.
    bool nanInput = false;
    for (const TensorInfo &t : r.nan->inputs)
        nanInput = nanInput || std::isnan(t.min) || std::isnan(t.max);
    EXPECT_TRUE(nanInput);
    EXPECT_TRUE(r.nan->hasNan);
}

TEST(InspectRecording, NanBornInBackwardNamesTheNode)
{
    torch::manual_seed(0);
    const torch::Tensor x = torch::ones({4}, torch::requires_grad());
    InspectOptions options;
    options.referenceRun = false;
    const InspectionReport r = inspectStep(
        [&] {
            StepProgram p;
            p.parameters = {{"x", x}};
            p.forward = [&] {
                const engine::ModuleScope scope("block");
                return torch::sqrt(x - 1.0).sum(); // sqrt(0) is finite, its gradient is not
            };
            return p;
        },
        options);
    ASSERT_EQ(r.status, InspectStatus::Nan) << r.summary;
    EXPECT_EQ(r.nan->phase, Phase::Backward);
    EXPECT_EQ(r.nan->backwardNode, "SqrtBackward0");
    EXPECT_EQ(r.nan->module, "block");
    EXPECT_FALSE(r.nan->hasNan); // Inf
}

TEST(InspectRecording, MemoryBoundDropsOpsThenRefuses)
{
    const InspectionReport full = inspectScenario("kv-cache-inplace");
    EXPECT_EQ(full.stats.opsDropped, 0);
    InspectOptions small;
    small.maxRecordBytes = full.stats.bytesUsed / 2;
    const InspectionReport r = inspectScenario("kv-cache-inplace", small);
    EXPECT_GT(r.stats.opsDropped, 0);
    EXPECT_EQ(r.stats.opsSeen, r.stats.opsKept + r.stats.opsDropped);
    ASSERT_TRUE(r.conflict); // writes and saves are kept past the bound
    EXPECT_EQ(r.conflict->culpritOp, "aten::copy_");

    InspectOptions tiny;
    tiny.maxRecordBytes = 500;
    expectError([&] { inspectScenario("kv-cache-inplace", tiny); }, engine::ErrorKind::InvalidInput,
                "exceeds its memory bound of 500 bytes");
}

TEST(InspectTorchScript, CheckedInModuleWithInplaceCacheBug)
{
    const nlohmann::json expected = nlohmann::json::parse(slurp(kData / "inplace_cache_expected.json"));
    for (int run = 0; run < 2; ++run) { // the report must not change after the executor's first calls
        const InspectionReport r =
            inspectTorchScript(kData / "inplace_cache.pt", kData / "inplace_cache_inputs.pt", "forward");
        ASSERT_EQ(r.status, InspectStatus::InplaceConflict) << r.summary << r.error;
        const InplaceConflict &c = *r.conflict;
        if (c.culpritOp.empty())
            for (const OpRecord &op : r.ops)
                if (op.writesInput || op.name.find("copy") != std::string::npos)
                    ADD_FAILURE() << op.index << " " << op.name << " " << op.module << " in0 storage "
                                  << (op.inputs.empty() ? -1 : op.inputs[0].storageId) << " v "
                                  << (op.inputs.empty() ? -1 : op.inputs[0].versionBefore) << "->"
                                  << (op.inputs.empty() ? -1 : op.inputs[0].versionAfter) << " saved storage "
                                  << r.savedTensors[size_t(c.savedTensorId)].tensor.storageId;
        EXPECT_EQ(c.culpritOp, "aten::copy_");
        EXPECT_EQ(c.savedByOp, "aten::bmm");
        EXPECT_EQ(c.backwardNode, "BmmBackward0");
        EXPECT_NE(c.culpritModule.find("attention"), std::string::npos) << c.culpritModule;
        EXPECT_TRUE(c.predicted);
        EXPECT_TRUE(c.raisedInBackward);
        EXPECT_EQ(r.pytorchError, cppTypeNames(expected["pytorch_error"].get<std::string>()));
        const auto [current, saved] = versionsIn(r.pytorchError);
        EXPECT_EQ(current, c.currentVersion);
        EXPECT_EQ(saved, c.savedVersion);
        EXPECT_EQ(c.tensorShape, (std::vector<int64_t>{2, 2, 4}));
    }
}

TEST(InspectTorchScript, ModuleRegeneratedWithPythonIsDiagnosedTheSame)
{
    if (std::system("/usr/bin/python3 -c 'import torch' >/dev/null 2>&1") != 0)
        GTEST_SKIP() << "python3-torch is not installed";
    testing_support::TempDir dir("inspect-ts");
    const std::string command =
        std::string("/usr/bin/python3 ") + MAKE_INPLACE_CACHE_SCRIPT + " " + dir.path().string();
    ASSERT_EQ(std::system(command.c_str()), 0);
    const InspectionReport r =
        inspectTorchScript(dir.path() / "inplace_cache.pt", dir.path() / "inplace_cache_inputs.pt");
    ASSERT_EQ(r.status, InspectStatus::InplaceConflict);
    EXPECT_EQ(r.conflict->culpritOp, "aten::copy_");
    EXPECT_EQ(r.conflict->backwardNode, "BmmBackward0");
    // TorchScript keeps the Python source range of every node: the report names the script's line.
    // Backward meets the last step's `probs @ values` first: the [2, 2, 4] tensor PyTorch names is that
    // matmul's saved values (keys are saved transposed, [2, 4, 2]), rewritten by the next step's cache_v write.
    ASSERT_TRUE(r.conflict->culpritSource) << r.summary;
    EXPECT_EQ(fs::path(r.conflict->culpritSource->file).filename(), "make_inplace_cache_module.py");
    EXPECT_EQ(r.conflict->culpritSource->code, "self.cache_v[:bsz, start_pos : start_pos + seqlen] = xv");
    EXPECT_EQ(r.conflict->culpritSource->function, "forward");
    ASSERT_TRUE(r.conflict->savedBySource);
    EXPECT_EQ(r.conflict->savedBySource->code, "out = torch.matmul(probs, values)");
    EXPECT_EQ(r.conflict->tensorShape, (std::vector<int64_t>{2, 2, 4}));
    EXPECT_FALSE(r.conflict->culpritModule.empty()) << "an op of the scripted module itself names its class";
    const nlohmann::json expected = nlohmann::json::parse(slurp(dir.path() / "inplace_cache_expected.json"));
    EXPECT_EQ(r.pytorchError, cppTypeNames(expected["pytorch_error"].get<std::string>()));
}

TEST(InspectTorchScript, BadInputGivesOneClearError)
{
    using engine::ErrorKind;
    const fs::path module = kData / "inplace_cache.pt";
    const fs::path inputs = kData / "inplace_cache_inputs.pt";
    expectError([&] { inspectTorchScript(inputs, inputs); }, ErrorKind::InvalidInput, "not a loadable TorchScript");
    expectError([&] { inspectTorchScript(module, inputs, "nope"); }, ErrorKind::InvalidInput, "has no method 'nope'");
    expectError([&] { inspectTorchScript(module, inputs, "positions"); }, ErrorKind::InvalidInput, "not a tensor");
    expectError([&] { inspectTorchScript(module, module); }, ErrorKind::InvalidInput, "inplace_cache.pt");

    expectError([&] { inspectTorchScript(module, kData / "two_inputs.pt"); }, ErrorKind::InvalidInput, "do not match");
    expectError([&] { inspectTorchScript(module, kData / "missing.pt"); }, ErrorKind::Io, "missing.pt");
}

TEST(TrainingGuard, FiresOnStaleSavedTensorsAndNanButNotOnACleanStep)
{
    TrainingGuard guard;
    {
        torch::manual_seed(0);
        TinyDecoder model(CacheMode::InPlace);
        guard.beginStep();
        const torch::Tensor loss = model.decodeLoss(torch::tensor({3, 7, 1, 4, 9, 2}, torch::kInt64).view({1, 6}), 3);
        const GuardVerdict v = guard.beforeBackward(loss);
        EXPECT_TRUE(v.fired);
        EXPECT_NE(v.reason.find("BmmBackward0"), std::string::npos) << v.reason;
        guard.endStep();
    }
    {
        torch::manual_seed(0);
        TinyDecoder model(CacheMode::CloneBeforeWrite);
        guard.beginStep();
        const torch::Tensor loss = model.decodeLoss(torch::tensor({3, 7, 1, 4, 9, 2}, torch::kInt64).view({1, 6}), 3);
        EXPECT_FALSE(guard.beforeBackward(loss).fired);
        loss.backward();
        std::vector<torch::Tensor> params = model.parameters();
        EXPECT_FALSE(guard.afterBackward(params).fired);
        // An injected NaN gradient.
        params[0].grad()[0][0] = std::nan("");
        EXPECT_TRUE(guard.afterBackward(params).fired);
        guard.endStep();
    }
    {
        NanLogModel model(false);
        guard.beginStep();
        const GuardVerdict v = guard.beforeBackward(model.forward(torch::linspace(-1.0, 1.0, 32).view({4, 8})));
        EXPECT_TRUE(v.fired);
        EXPECT_NE(v.reason.find("NaN"), std::string::npos);
        guard.endStep();
    }
}

TEST(InspectReport, JsonHasTheFieldsTheCliPromises)
{
    const nlohmann::json j = reportToJson(inspectScenario("kv-cache-inplace"), true);
    for (const char *key : {"status", "culprit_op", "culprit_index", "culprit_module", "saved_by_op", "backward_node",
                            "tensor_shape", "saved_version", "current_version", "fix", "pytorch_error", "ops",
                            "storages", "saved_tensors"})
        EXPECT_TRUE(j.contains(key)) << key;
    EXPECT_EQ(j["status"], "inplace_conflict");
    const nlohmann::json n = reportToJson(inspectScenario("nan-log"));
    EXPECT_EQ(n["status"], "nan");
    EXPECT_EQ(n["first_nan_op"], "aten::log");
    EXPECT_EQ(n["first_nan_module"], "head");
    EXPECT_EQ(n["phase"], "forward");
    EXPECT_EQ(n["pytorch_error"], "");
    EXPECT_NE(reportToText(inspectScenario("kv-cache-inplace")).find("How to fix it"), std::string::npos);
}

TEST(InspectModelFolder, ASavedBatchOrAnAdapterThatDoesNotFitIsOneClearError)
{
    testing_support::TempDir dir("inspect-batch");
    const fs::path model = dir.path() / "model";
    testing_support::writeTinyConfig(model); // vocab_size 512
    auto batchFile = [&](const std::string &name, std::vector<std::pair<std::string, torch::Tensor>> tensors) {
        const fs::path file = dir.path() / (name + ".safetensors");
        engine::io::writeSafetensors(file, tensors);
        return file;
    };
    const torch::Tensor ids = torch::arange(16, torch::kInt64).view({2, 8});
    const auto inspect = [&](const fs::path &folder, const fs::path &data) {
        return [=] { engine::inspect::inspectModelFolder(folder, data); };
    };
    using engine::ErrorKind;
    testing_support::expectError(inspect(model, batchFile("no-ids", {{"tokens", ids}})), ErrorKind::InvalidInput,
                                 "holds no input_ids tensor");
    testing_support::expectError(inspect(model, batchFile("flat", {{"input_ids", ids.view({-1})}})), ErrorKind::InvalidInput,
                                 "input_ids must be [batch, tokens]");
    testing_support::expectError(inspect(model, batchFile("labels-shape", {{"input_ids", ids}, {"labels", ids.view({4, 4})}})),
                                 ErrorKind::InvalidInput, "do not match input_ids");
    testing_support::expectError(inspect(model, batchFile("vocab", {{"input_ids", ids + 500}})), ErrorKind::InvalidInput,
                                 "token id 515 is outside the model's vocab_size 512");
    testing_support::expectError(inspect(model, batchFile("unlabelled", {{"input_ids", ids}, {"labels", torch::full_like(ids, -100)}})),
                                 ErrorKind::InvalidInput, "no token has a label");

    const fs::path adapter = dir.path() / "adapter";
    fs::create_directories(adapter);
    std::ofstream(adapter / "adapter_config.json") << R"({"peft_type": "LORA", "base_model_name_or_path": "/no/such/base"})";
    testing_support::expectError(inspect(adapter, batchFile("fine", {{"input_ids", ids}})), ErrorKind::InvalidInput,
                                 "its base model \"/no/such/base\" is not a folder here");
    std::ofstream(adapter / "adapter_config.json") << "{not json";
    testing_support::expectError(inspect(adapter, dir.path() / "fine.safetensors"), ErrorKind::InvalidInput, "not valid JSON");

    // Without labels, each position learns the next token: the step runs and backward succeeds.
    const auto report = engine::inspect::inspectModelFolder(model, dir.path() / "fine.safetensors");
    EXPECT_EQ(report.status, engine::inspect::InspectStatus::Ok) << report.summary << report.error;
    EXPECT_TRUE(report.backwardSucceeded);
    EXPECT_TRUE(std::isfinite(report.loss));
}
