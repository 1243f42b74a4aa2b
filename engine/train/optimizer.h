#pragma once
// The trainer's optimizers, over named trainable parameters, with their state as named tensors so that
// a checkpoint stores it in safetensors and a resume restores it bit for bit. Engine-internal (torch).
//
// AdamW is torch.optim.AdamW's update (decoupled weight decay, bias-corrected moments); SGD is
// torch.optim.SGD with momentum (coupled weight decay, the first step seeds the buffer with the gradient).
//
// How to use:
//   Optimizer optimizer(OptimizerKind::AdamW, groups, {.beta1 = 0.9, .beta2 = 0.95});
//   loss.backward();  optimizer.step(learningRate);  optimizer.zeroGrad();
//   auto state = optimizer.stateTensors();   // "<param>.exp_avg", ... for a checkpoint

#include "engine/train/trainingparams.h"

#include <torch/torch.h>

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace engine::train {

struct OptimizerOptions {
    double beta1 = 0.9;
    double beta2 = 0.95;
    double eps = 1e-8;
    double momentum = 0.9; ///< SGD
};

/// Parameters that share a weight decay.
struct ParameterGroup {
    std::vector<std::pair<std::string, torch::Tensor>> parameters; ///< (name, parameter)
    double weightDecay = 0;
};

/// The trainer's two groups of `named` (only what requires grad): matrices (dim >= 2: projections,
/// embeddings, LoRA A and B) with `weightDecay`, and every 1-D parameter (norm weights, biases) without
/// decay, as transformers' Trainer groups them.
std::vector<ParameterGroup> weightDecayGroups(const std::vector<std::pair<std::string, torch::Tensor>> &named,
                                              double weightDecay);

class Optimizer {
public:
    /// Every parameter must require grad; names must be unique.
    Optimizer(OptimizerKind kind, std::vector<ParameterGroup> groups, OptimizerOptions options = {});

    /// One update at `learningRate` of every parameter that has a gradient.
    void step(double learningRate);
    /// Drops every gradient (set to undefined, as zero_grad(set_to_none=True)).
    void zeroGrad();

    OptimizerKind kind() const { return m_kind; }
    int64_t stepCount() const { return m_steps; }
    const std::vector<ParameterGroup> &groups() const { return m_groups; }
    /// Number of parameter elements the optimizer updates.
    int64_t parameterCount() const;

    /// The state as named CPU tensors: "<param>.exp_avg" and "<param>.exp_avg_sq" (AdamW) or
    /// "<param>.momentum_buffer" (SGD), for the parameters that have state.
    std::vector<std::pair<std::string, torch::Tensor>> stateTensors() const;
    /// Restores stateTensors() and the step count. Throws Error(InvalidInput) naming `source` for a
    /// tensor of a parameter the optimizer does not hold, a wrong shape, or a missing moment.
    void loadState(const std::map<std::string, torch::Tensor> &tensors, int64_t steps, const std::string &source);

private:
    struct Slot {
        torch::Tensor first;  ///< exp_avg or momentum_buffer
        torch::Tensor second; ///< exp_avg_sq
    };
    OptimizerKind m_kind;
    std::vector<ParameterGroup> m_groups;
    OptimizerOptions m_options;
    std::map<std::string, Slot> m_state;
    int64_t m_steps = 0;
};

} // namespace engine::train
