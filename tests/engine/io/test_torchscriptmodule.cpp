// A user's TorchScript module (golden scripted.pt from make_legacy_files.py): forward matches
// Python, and its parameters train.

#include "engine/io/torchscriptmodule.h"

#include "engine/core/error.h"
#include "engine/io/legacytestutil.h"
#include "support/expecterror.h"
#include "support/tempdir.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <torch/torch.h>

#include <fstream>

using engine::ErrorKind;
using engine::io::TorchScriptModule;
using legacy_test::kLegacyData;
using legacy_test::readJson;
using testing_support::expectError;
using testing_support::TempDir;

namespace {

torch::Tensor matrix(const nlohmann::ordered_json &rows)
{
    std::vector<torch::Tensor> out;
    for (const auto &row : rows)
        out.push_back(torch::tensor(row.get<std::vector<float>>()));
    return torch::stack(out);
}

} // namespace

TEST(TorchScriptModule, ForwardMatchesPython)
{
    const auto expected = readJson(kLegacyData / "scripted.json");
    TorchScriptModule module = TorchScriptModule::load(kLegacyData / "scripted.pt");
    module.train(false);
    EXPECT_FALSE(module.isTraining());
    torch::NoGradGuard noGrad;
    const torch::Tensor output = module.forward({matrix(expected["input"])});
    EXPECT_TRUE(torch::allclose(output, matrix(expected["output"]), 1e-5, 1e-6)) << output;
}

TEST(TorchScriptModule, NamedParametersAreTrainable)
{
    const auto expected = readJson(kLegacyData / "scripted.json");
    TorchScriptModule module = TorchScriptModule::load(kLegacyData / "scripted.pt");
    const auto parameters = module.namedParameters();
    std::vector<std::string> names;
    for (const auto &[name, tensor] : parameters) {
        names.push_back(name);
        EXPECT_TRUE(tensor.requires_grad()) << name;
    }
    EXPECT_EQ(names, expected["parameters"].get<std::vector<std::string>>());
    EXPECT_EQ(parameters[0].second.sizes().vec(), (std::vector<int64_t>{8, 4}));
}

TEST(TorchScriptModule, SgdStepsReduceTheLoss)
{
    torch::manual_seed(0);
    TorchScriptModule module = TorchScriptModule::load(kLegacyData / "scripted.pt");
    module.train(true);
    std::vector<torch::Tensor> before;
    for (const auto &[name, tensor] : module.namedParameters())
        before.push_back(tensor.detach().clone());
    const torch::Tensor x = torch::randn({16, 4});
    const torch::Tensor target = torch::randn({16, 2});
    torch::optim::SGD sgd(module.parameters(), torch::optim::SGDOptions(0.1));
    std::vector<double> losses;
    for (int step = 0; step < 10; ++step) {
        sgd.zero_grad();
        const torch::Tensor loss = torch::mse_loss(module.forward({x}), target);
        loss.backward();
        sgd.step();
        losses.push_back(loss.item<double>());
    }
    EXPECT_LT(losses.back(), losses.front() * 0.95);
    const auto after = module.namedParameters();
    for (size_t i = 0; i < before.size(); ++i)
        EXPECT_FALSE(torch::equal(before[i], after[i].second)) << after[i].first << " did not change";
}

TEST(TorchScriptModule, MissingEmptyAndCorruptFilesAreClearErrors)
{
    TempDir dir("torchscript");
    expectError([&] { TorchScriptModule::load(dir / "nope.pt"); }, ErrorKind::Io, "nope.pt: file not found");
    legacy_test::writeBytes(dir / "empty.pt", "");
    expectError([&] { TorchScriptModule::load(dir / "empty.pt"); }, ErrorKind::InvalidInput, "empty file");
    legacy_test::writeBytes(dir / "garbage.pt", "this is not a zip archive at all");
    expectError([&] { TorchScriptModule::load(dir / "garbage.pt"); }, ErrorKind::InvalidInput,
                "garbage.pt: not a loadable TorchScript module");
    // A state dict is a zip too, but has no code: not a module.
    expectError([&] { TorchScriptModule::load(kLegacyData / "state_dict.bin"); }, ErrorKind::InvalidInput,
                "not a loadable TorchScript module");
    const std::string bytes = legacy_test::readBytes(kLegacyData / "scripted.pt");
    legacy_test::writeBytes(dir / "cut.pt", bytes.substr(0, bytes.size() / 2));
    expectError([&] { TorchScriptModule::load(dir / "cut.pt"); }, ErrorKind::InvalidInput, "cut.pt");
    expectError([&] { TorchScriptModule::load(dir.path()); }, ErrorKind::InvalidInput, "is a folder");
}

TEST(TorchScriptModule, WrongInputsAreAnError)
{
    TorchScriptModule module = TorchScriptModule::load(kLegacyData / "scripted.pt");
    expectError([&] { module.forward({torch::randn({2, 5})}); }, ErrorKind::InvalidInput, "forward failed");
    expectError([&] { module.forward({}); }, ErrorKind::InvalidInput, "forward failed");
}
