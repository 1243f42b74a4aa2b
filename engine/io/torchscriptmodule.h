#pragma once
// A user's own TorchScript module (`torch.jit.script(model).save(path)` in Python), loaded with
// torch::jit::load for training and inspection. Its parameters stay trainable (requires_grad as saved).
// Engine-internal (torch headers).
//
// How to use:
//   auto module = TorchScriptModule::load(path);   // CPU; throws engine::Error
//   torch::optim::SGD sgd(module.parameters(), 0.1);
//   module.train(true);
//   torch::Tensor y = module.forward({x});

#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include <torch/csrc/jit/api/module.h>

namespace engine::io {

/// A loaded TorchScript module; copies share the same underlying module (as torch::jit::Module does).
class TorchScriptModule {
public:
    /// Loads `path` onto the CPU. Missing file: Error(Io); not a TorchScript archive: Error(InvalidInput).
    static TorchScriptModule load(const std::filesystem::path &path);

    /// Parameters with their dotted names ("0.weight", "encoder.fc.bias"), recursively, in module order.
    std::vector<std::pair<std::string, torch::Tensor>> namedParameters() const;
    /// The same parameters without names, for an optimizer.
    std::vector<torch::Tensor> parameters() const;
    /// Calls the module's forward; the result must be a tensor (Error(InvalidInput) otherwise, or
    /// when the inputs do not match its signature).
    torch::Tensor forward(std::vector<torch::jit::IValue> inputs);
    /// Switches training mode (dropout, batch norm) of the module and its children.
    void train(bool on = true);
    /// Whether the module is in training mode.
    bool isTraining() const;
    /// The wrapped module, for what this class does not cover.
    torch::jit::Module &module() { return m_module; }

private:
    TorchScriptModule(torch::jit::Module module, std::filesystem::path path);

    torch::jit::Module m_module;
    std::filesystem::path m_path;
};

} // namespace engine::io
