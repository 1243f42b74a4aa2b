#include "engine/train/gradientclip.h"

#include <cmath>

namespace engine::train {

GradientNorm clipGradientsByGroup(const std::vector<std::vector<torch::Tensor>> &groups,
                                  const std::vector<std::string> &names, double clipNorm)
{
    GradientNorm result;
    double sum = 0;
    for (size_t g = 0; g < groups.size(); ++g) {
        torch::Tensor squares; // on the group's device; one host sync per group
        for (const auto &p : groups[g]) {
            if (!p.grad().defined())
                continue;
            const torch::Tensor part = p.grad().detach().norm().to(torch::kFloat64).pow(2); // per tensor, as torch
            squares = squares.defined() ? squares + part : part;
        }
        const double value = squares.defined() ? squares.item<double>() : 0.0;
        sum += value;
        if (groups.size() > 1)
            result.perDevice.emplace_back(g < names.size() ? names[g] : std::to_string(g), std::sqrt(value));
    }
    result.total = std::sqrt(sum);
    const double scale = clipNorm / (result.total + 1e-6); // as torch.nn.utils.clip_grad_norm_
    if (clipNorm > 0 && scale < 1) {
        torch::NoGradGuard noGrad;
        for (const auto &group : groups) {
            for (const auto &p : group) {
                if (p.grad().defined())
                    p.grad().mul_(scale);
            }
        }
    }
    return result;
}

GradientNorm clipGradients(const std::vector<torch::Tensor> &parameters, double clipNorm)
{
    std::vector<torch::Device> devices;
    std::vector<std::vector<torch::Tensor>> groups;
    for (const auto &p : parameters) {
        size_t slot = 0;
        while (slot < devices.size() && devices[slot] != p.device())
            ++slot;
        if (slot == devices.size()) {
            devices.push_back(p.device());
            groups.emplace_back();
        }
        groups[slot].push_back(p);
    }
    std::vector<std::string> names;
    for (const auto &device : devices)
        names.push_back(device.str());
    return clipGradientsByGroup(groups, names, clipNorm);
}

} // namespace engine::train
