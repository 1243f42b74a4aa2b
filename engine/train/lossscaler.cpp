#include "engine/train/lossscaler.h"

#include "engine/core/error.h"

#include <torch/torch.h>

#include <cmath>
#include <string>

namespace engine::train {

torch::Tensor LossScaler::scale(const torch::Tensor &loss) const
{
    return loss.to(torch::kFloat32) * m_scale;
}

bool LossScaler::unscale(const std::vector<torch::Tensor> &parameters)
{
    torch::NoGradGuard noGrad;
    const double inverse = 1.0 / m_scale;
    bool finite = true;
    for (const torch::Tensor &parameter : parameters) {
        torch::Tensor grad = parameter.grad();
        if (!grad.defined())
            continue;
        grad.mul_(inverse);
        if (finite && !torch::isfinite(grad).all().item<bool>())
            finite = false;
    }
    m_foundInf = !finite;
    return finite;
}

void LossScaler::update()
{
    if (m_foundInf) {
        m_scale *= kBackoffFactor;
        m_growthTracker = 0;
    } else if (++m_growthTracker == kGrowthInterval) {
        m_scale *= kGrowthFactor;
        m_growthTracker = 0;
    }
    m_foundInf = false;
}

void LossScaler::restore(double scale, int64_t growthTracker)
{
    if (!(scale > 0) || !std::isfinite(scale) || growthTracker < 0 || growthTracker >= kGrowthInterval) {
        throw invalidInput("the checkpoint's loss scale (" + std::to_string(scale) + ", growth tracker "
                           + std::to_string(growthTracker) + ") is not a valid state");
    }
    m_scale = scale;
    m_growthTracker = growthTracker;
}

} // namespace engine::train
