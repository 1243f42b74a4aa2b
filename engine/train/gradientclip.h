#pragma once
// Gradient norm and clipping by global norm for parameters that may live on several devices (a model
// dispatched over a device map). torch's clip_grad_norm_ stacks every parameter's norm into one tensor,
// which fails across devices; here each device's squared norm is summed where its gradients are, the
// sums are combined on the CPU, and each gradient is scaled on its own device. Engine-internal (torch).

#include <torch/torch.h>

#include <string>
#include <utility>
#include <vector>

namespace engine::train {

struct GradientNorm {
    double total = 0;                                       ///< the global L2 norm before clipping
    std::vector<std::pair<std::string, double>> perDevice; ///< (group, norm) when there are several groups
};

/// Norm over all gradients of `groups` (parameters without a gradient are skipped) and, when clipNorm > 0,
/// scaling of every gradient by clipNorm / (norm + 1e-6) if that is below 1 (torch.nn.utils.clip_grad_norm_).
/// Each group's squares are summed on that group's device; `names` labels the groups in perDevice.
GradientNorm clipGradientsByGroup(const std::vector<std::vector<torch::Tensor>> &groups,
                                  const std::vector<std::string> &names, double clipNorm);

/// clipGradientsByGroup with the parameters grouped by the device they live on.
GradientNorm clipGradients(const std::vector<torch::Tensor> &parameters, double clipNorm);

} // namespace engine::train
