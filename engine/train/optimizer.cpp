#include "engine/train/optimizer.h"

#include "engine/core/error.h"

#include <cmath>
#include <set>

namespace engine::train {

std::vector<ParameterGroup> weightDecayGroups(const std::vector<std::pair<std::string, torch::Tensor>> &named,
                                              double weightDecay)
{
    ParameterGroup decay{{}, weightDecay};
    ParameterGroup noDecay{{}, 0.0};
    for (const auto &[name, parameter] : named) {
        if (parameter.requires_grad())
            (parameter.dim() >= 2 ? decay : noDecay).parameters.emplace_back(name, parameter);
    }
    return {decay, noDecay};
}

Optimizer::Optimizer(OptimizerKind kind, std::vector<ParameterGroup> groups, OptimizerOptions options)
    : m_kind(kind)
    , m_groups(std::move(groups))
    , m_options(options)
{
    std::set<std::string> names;
    for (const auto &group : m_groups) {
        for (const auto &[name, parameter] : group.parameters) {
            TORCH_CHECK(parameter.requires_grad(), "optimizer parameter ", name, " does not require grad");
            TORCH_CHECK(names.insert(name).second, "optimizer parameter ", name, " appears twice");
        }
    }
}

int64_t Optimizer::parameterCount() const
{
    int64_t count = 0;
    for (const auto &group : m_groups) {
        for (const auto &item : group.parameters)
            count += item.second.numel();
    }
    return count;
}

void Optimizer::step(double lr)
{
    torch::NoGradGuard noGrad;
    ++m_steps;
    const double beta1 = m_options.beta1;
    const double beta2 = m_options.beta2;
    const double correction1 = 1.0 - std::pow(beta1, static_cast<double>(m_steps));
    const double correction2Sqrt = std::sqrt(1.0 - std::pow(beta2, static_cast<double>(m_steps)));
    for (auto &group : m_groups) {
        for (auto &[name, p] : group.parameters) {
            const torch::Tensor &grad = p.grad();
            if (!grad.defined())
                continue;
            Slot &slot = m_state[name];
            if (m_kind == OptimizerKind::AdamW) {
                if (!slot.first.defined()) {
                    slot.first = torch::zeros_like(p, torch::MemoryFormat::Preserve);
                    slot.second = torch::zeros_like(p, torch::MemoryFormat::Preserve);
                }
                // torch.optim.AdamW, step for step (single-tensor path).
                if (group.weightDecay != 0)
                    p.mul_(1.0 - lr * group.weightDecay);
                slot.first.mul_(beta1).add_(grad, 1.0 - beta1);
                slot.second.mul_(beta2).addcmul_(grad, grad, 1.0 - beta2);
                const torch::Tensor denom = (slot.second.sqrt() / correction2Sqrt).add_(m_options.eps);
                p.addcdiv_(slot.first, denom, -lr / correction1);
            } else {
                torch::Tensor update = group.weightDecay != 0 ? grad.add(p, group.weightDecay) : grad;
                if (m_options.momentum != 0) {
                    if (!slot.first.defined())
                        slot.first = update.clone();
                    else
                        slot.first.mul_(m_options.momentum).add_(update);
                    update = slot.first;
                }
                p.add_(update, -lr);
            }
        }
    }
}

void Optimizer::zeroGrad()
{
    for (auto &group : m_groups) {
        for (auto &item : group.parameters)
            item.second.mutable_grad() = torch::Tensor();
    }
}

std::vector<std::pair<std::string, torch::Tensor>> Optimizer::stateTensors() const
{
    std::vector<std::pair<std::string, torch::Tensor>> tensors;
    for (const auto &[name, slot] : m_state) {
        if (m_kind == OptimizerKind::AdamW) {
            tensors.emplace_back(name + ".exp_avg", slot.first.to(torch::kCPU));
            tensors.emplace_back(name + ".exp_avg_sq", slot.second.to(torch::kCPU));
        } else if (slot.first.defined()) {
            tensors.emplace_back(name + ".momentum_buffer", slot.first.to(torch::kCPU));
        }
    }
    return tensors;
}

void Optimizer::loadState(const std::map<std::string, torch::Tensor> &tensors, int64_t steps, const std::string &source)
{
    std::map<std::string, torch::Tensor> parameters;
    for (const auto &group : m_groups) {
        for (const auto &[name, p] : group.parameters)
            parameters[name] = p;
    }
    std::map<std::string, Slot> state;
    for (const auto &[key, tensor] : tensors) {
        const size_t dot = key.rfind('.');
        const std::string name = dot == std::string::npos ? key : key.substr(0, dot);
        const std::string moment = dot == std::string::npos ? "" : key.substr(dot + 1);
        auto it = parameters.find(name);
        if (it == parameters.end())
            throw invalidInput(source + ": optimizer state '" + key + "' is for a parameter this run does not train");
        const bool adam = m_kind == OptimizerKind::AdamW;
        if (!(adam ? (moment == "exp_avg" || moment == "exp_avg_sq") : moment == "momentum_buffer"))
            throw invalidInput(source + ": optimizer state '" + key + "' is not " + (adam ? "AdamW" : "SGD") + " state");
        if (tensor.sizes() != it->second.sizes())
            throw invalidInput(source + ": optimizer state '" + key + "' does not have its parameter's shape");
        torch::Tensor value = tensor.to(it->second.device(), it->second.scalar_type()).clone();
        (moment == "exp_avg_sq" ? state[name].second : state[name].first) = value;
    }
    if (m_kind == OptimizerKind::AdamW) {
        for (const auto &[name, slot] : state) {
            if (!slot.first.defined() || !slot.second.defined())
                throw invalidInput(source + ": optimizer state of '" + name + "' has only one of exp_avg and exp_avg_sq");
        }
    }
    m_state = std::move(state);
    m_steps = steps;
}

} // namespace engine::train
