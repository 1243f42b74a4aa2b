// fp16's dynamic loss scaling (engine/train/lossscaler.h) follows torch.amp.GradScaler: scale, unscale,
// skip on overflow with backoff, growth after the interval, and a checkpointable state.

#include "engine/core/error.h"
#include "engine/train/lossscaler.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <limits>

using engine::train::LossScaler;

namespace {

torch::Tensor parameterWithGrad(const torch::Tensor &grad)
{
    torch::Tensor p = torch::zeros(grad.sizes()).requires_grad_(true);
    p.mutable_grad() = grad.clone();
    return p;
}

} // namespace

TEST(LossScaler, ScalesTheLossAndUnscalesEveryGradientExactly)
{
    LossScaler scaler;
    EXPECT_EQ(scaler.currentScale(), 65536.0);
    EXPECT_DOUBLE_EQ(scaler.scale(torch::tensor(0.5)).item<double>(), 32768.0);
    const torch::Tensor g1 = torch::tensor({65536.0f, -131072.0f, 3.0f});
    const torch::Tensor g2 = torch::tensor({{1.0f}, {2.0f}});
    const std::vector<torch::Tensor> params = {parameterWithGrad(g1), parameterWithGrad(g2),
                                               torch::zeros({2}).requires_grad_(true)}; // no gradient: ignored
    EXPECT_TRUE(scaler.unscale(params));
    EXPECT_TRUE(torch::equal(params[0].grad(), g1 / 65536.0));
    EXPECT_TRUE(torch::equal(params[1].grad(), g2 / 65536.0));
    scaler.update();
    EXPECT_EQ(scaler.currentScale(), 65536.0);
    EXPECT_EQ(scaler.growthTracker(), 1);
}

TEST(LossScaler, AnOverflowSkipsTheStepAndHalvesTheScale)
{
    for (const float bad : {std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::infinity(),
                            std::numeric_limits<float>::quiet_NaN()}) {
        LossScaler scaler;
        scaler.unscale({parameterWithGrad(torch::ones({3}))});
        scaler.update();
        ASSERT_EQ(scaler.growthTracker(), 1);
        const std::vector<torch::Tensor> params = {parameterWithGrad(torch::ones({3})),
                                                   parameterWithGrad(torch::tensor({1.0f, bad}))};
        EXPECT_FALSE(scaler.unscale(params)) << bad;
        scaler.update();
        EXPECT_EQ(scaler.currentScale(), 32768.0) << bad;
        EXPECT_EQ(scaler.growthTracker(), 0) << "an overflow restarts the growth count";
        // The next clean step counts from zero and keeps the halved scale.
        EXPECT_TRUE(scaler.unscale({parameterWithGrad(torch::ones({3}))}));
        scaler.update();
        EXPECT_EQ(scaler.currentScale(), 32768.0);
    }
}

TEST(LossScaler, DoublesAfterTwoThousandCleanStepsInARow)
{
    LossScaler scaler;
    const std::vector<torch::Tensor> params = {parameterWithGrad(torch::ones({2}))};
    for (int64_t i = 1; i < LossScaler::kGrowthInterval; ++i) {
        scaler.unscale(params);
        scaler.update();
    }
    EXPECT_EQ(scaler.currentScale(), 65536.0);
    EXPECT_EQ(scaler.growthTracker(), LossScaler::kGrowthInterval - 1);
    scaler.unscale(params);
    scaler.update();
    EXPECT_EQ(scaler.currentScale(), 131072.0);
    EXPECT_EQ(scaler.growthTracker(), 0);
}

TEST(LossScaler, RestoresACheckpointedStateAndRefusesAnImpossibleOne)
{
    LossScaler scaler;
    scaler.restore(1024.0, 1999);
    EXPECT_EQ(scaler.currentScale(), 1024.0);
    scaler.unscale({parameterWithGrad(torch::ones({1}))});
    scaler.update();
    EXPECT_EQ(scaler.currentScale(), 2048.0) << "the restored tracker counts on";
    EXPECT_THROW(scaler.restore(0.0, 0), engine::Error);
    EXPECT_THROW(scaler.restore(std::numeric_limits<double>::infinity(), 0), engine::Error);
    EXPECT_THROW(scaler.restore(8.0, LossScaler::kGrowthInterval), engine::Error);
}
