// engine/core/autocast.h: a scope turns autocast on for its device and dtype, nests, and puts the
// previous state back (the part of torch.autocast the trainer and gradient checkpointing rely on).

#include "engine/core/autocast.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

using engine::AutocastScope;
using engine::AutocastState;

TEST(Autocast, AScopeRunsMatrixProductsInBf16AndRestoresFloat32After)
{
    const torch::Tensor x = torch::randn({4, 8});
    const torch::Tensor w = torch::randn({3, 8});
    ASSERT_FALSE(AutocastState::current().any());
    // The product of the bf16-rounded inputs, in float32.
    const torch::Tensor reference = torch::matmul(x.to(torch::kBFloat16).to(torch::kFloat32),
                                                  w.to(torch::kBFloat16).to(torch::kFloat32).t());
    {
        const AutocastScope amp(c10::DeviceType::CPU, torch::kBFloat16);
        EXPECT_TRUE(AutocastState::current().cpu);
        EXPECT_EQ(AutocastState::current().cpuDtype, torch::kBFloat16);
        const torch::Tensor y = torch::nn::functional::linear(x, w);
        EXPECT_EQ(y.scalar_type(), torch::kBFloat16);
        EXPECT_TRUE(torch::allclose(y.to(torch::kFloat32), reference, 2e-2, 2e-2));
        EXPECT_EQ(torch::softmax(y.to(torch::kFloat32), -1).scalar_type(), torch::kFloat32) << "non-matmul ops keep their dtype";
    }
    EXPECT_FALSE(AutocastState::current().cpu);
    EXPECT_EQ(torch::nn::functional::linear(x, w).scalar_type(), torch::kFloat32);
}

TEST(Autocast, NestedScopesRestoreTheStateTheyFound)
{
    const AutocastState before = AutocastState::current();
    {
        const AutocastScope outer(c10::DeviceType::CPU, torch::kBFloat16);
        AutocastState off = AutocastState::current();
        off.cpu = false;
        {
            const AutocastScope inner(off); // e.g. a region that must stay float32
            EXPECT_FALSE(AutocastState::current().cpu);
            EXPECT_EQ(torch::matmul(torch::ones({2, 2}), torch::ones({2, 2})).scalar_type(), torch::kFloat32);
        }
        EXPECT_TRUE(AutocastState::current().cpu);
        EXPECT_EQ(torch::matmul(torch::ones({2, 2}), torch::ones({2, 2})).scalar_type(), torch::kBFloat16);
    }
    const AutocastState after = AutocastState::current();
    EXPECT_EQ(after.cpu, before.cpu);
    EXPECT_EQ(after.cpuDtype, before.cpuDtype);
    EXPECT_EQ(after.cuda, before.cuda);
    EXPECT_EQ(after.cudaDtype, before.cudaDtype);
}
