#include "engine/io/torchscriptmodule.h"

#include "engine/core/error.h"

#include <torch/csrc/jit/passes/tensorexpr_fuser.h>
#include <torch/script.h>

#include <fstream>

namespace engine::io {

namespace {

/// The first line of a c10::Error, without the C++ backtrace.
std::string firstLine(const std::string &message)
{
    const size_t end = message.find('\n');
    return end == std::string::npos ? message : message.substr(0, end);
}

} // namespace

TorchScriptModule::TorchScriptModule(torch::jit::Module module, std::filesystem::path path)
    : m_module(std::move(module)), m_path(std::move(path))
{
}

TorchScriptModule TorchScriptModule::load(const std::filesystem::path &path)
{
    std::error_code ec;
    if (!std::filesystem::exists(path, ec))
        throw ioError(path.string() + ": file not found");
    if (std::filesystem::is_directory(path, ec))
        throw invalidInput(path.string() + ": is a folder, not a TorchScript file");
    if (!std::ifstream(path, std::ios::binary))
        throw ioError(path.string() + ": cannot open for reading");
    if (std::filesystem::file_size(path, ec) == 0)
        throw invalidInput(path.string() + ": empty file, not a TorchScript module");
    // The TensorExpr (NNC) CPU fuser, which the profiling executor runs on a method's third call,
    // hangs for good in Debian 13's libtorch 2.6 (a 2-layer Sequential trained with SGD never
    // returns; Python's torch 2.6 from the same package does the same). Fused kernels buy little
    // for the small scripted modules users bring to train or inspect, so it stays off.
    torch::jit::setTensorExprFuserEnabled(false);
    try {
        torch::jit::Module module = torch::jit::load(path.string(), torch::kCPU);
        return TorchScriptModule(std::move(module), path);
    } catch (const c10::Error &error) {
        throw invalidInput(path.string() + ": not a loadable TorchScript module (torch.jit.save): " +
                           firstLine(error.what_without_backtrace()));
    } catch (const std::exception &error) {
        throw invalidInput(path.string() + ": not a loadable TorchScript module (torch.jit.save): " +
                           firstLine(error.what()));
    }
}

std::vector<std::pair<std::string, torch::Tensor>> TorchScriptModule::namedParameters() const
{
    std::vector<std::pair<std::string, torch::Tensor>> out;
    for (const auto &parameter : m_module.named_parameters(/*recurse=*/true))
        out.emplace_back(parameter.name, parameter.value);
    return out;
}

std::vector<torch::Tensor> TorchScriptModule::parameters() const
{
    std::vector<torch::Tensor> out;
    for (const auto &parameter : m_module.parameters(/*recurse=*/true))
        out.push_back(parameter);
    return out;
}

torch::Tensor TorchScriptModule::forward(std::vector<torch::jit::IValue> inputs)
{
    torch::jit::IValue result;
    try {
        result = m_module.forward(std::move(inputs));
    } catch (const c10::Error &error) {
        throw invalidInput(m_path.string() + ": forward failed: " + firstLine(error.what_without_backtrace()));
    } catch (const std::exception &error) {
        throw invalidInput(m_path.string() + ": forward failed: " + firstLine(error.what()));
    }
    if (!result.isTensor())
        throw invalidInput(m_path.string() + ": forward returned a " + result.tagKind() + ", not a tensor");
    return result.toTensor();
}

void TorchScriptModule::train(bool on) { m_module.train(on); }

bool TorchScriptModule::isTraining() const { return m_module.is_training(); }

} // namespace engine::io
