#include "engine/train/lrschedule.h"
#include "engine/train/trainingparams.h"
#include "engine/core/error.h"

#include <nlohmann/json.hpp>

#include <limits>

#include <gtest/gtest.h>

TEST(LearningRateSchedule, WarmupThenCosineToTheFloor)
{
    const engine::train::LearningRateSchedule s{1e-3, 10, 110, 0.1};
    EXPECT_DOUBLE_EQ(s.at(1), 1e-4);
    EXPECT_DOUBLE_EQ(s.at(5), 5e-4);
    EXPECT_DOUBLE_EQ(s.at(10), 1e-3);
    EXPECT_NEAR(s.at(60), 1e-3 * (0.1 + 0.9 * 0.5), 1e-15); // halfway through the decay
    EXPECT_NEAR(s.at(110), 1e-4, 1e-15);
    for (int64_t step = 11; step < 110; ++step)
        EXPECT_GE(s.at(step), s.at(step + 1));
}

TEST(LearningRateSchedule, ConstantAndLinearAfterWarmup)
{
    using engine::train::ScheduleKind;
    const engine::train::LearningRateSchedule constant{1e-3, 10, 110, 0.1, ScheduleKind::Constant};
    EXPECT_DOUBLE_EQ(constant.at(5), 0.5e-3);
    EXPECT_DOUBLE_EQ(constant.at(11), 1e-3);
    EXPECT_DOUBLE_EQ(constant.at(110), 1e-3);
    const engine::train::LearningRateSchedule linear{1e-3, 10, 110, 0.1, ScheduleKind::Linear};
    EXPECT_DOUBLE_EQ(linear.at(10), 1e-3);
    EXPECT_NEAR(linear.at(60), 1e-3 * (0.1 + 0.9 * 0.5), 1e-15) << "halfway: halfway down";
    EXPECT_NEAR(linear.at(110), 1e-4, 1e-15);
    const engine::train::LearningRateSchedule cosine{1e-3, 10, 110, 0.1, ScheduleKind::Cosine};
    EXPECT_NEAR(cosine.at(60), 1e-3 * (0.1 + 0.9 * 0.5), 1e-15) << "cosine is also halfway at the middle";
    EXPECT_GT(cosine.at(35), linear.at(35)) << "cosine stays higher early";
}

TEST(LearningRateSchedule, NoWarmup)
{
    const engine::train::LearningRateSchedule s{2e-3, 0, 1, 0.0};
    EXPECT_DOUBLE_EQ(s.at(1), 0.0);
    const engine::train::LearningRateSchedule t{2e-3, 0, 3, 0.0};
    EXPECT_DOUBLE_EQ(t.at(0), 2e-3);
}

TEST(TrainingParams, DefaultsAreValidAndJsonNamesEverySetting)
{
    engine::train::TrainingParams p;
    EXPECT_NO_THROW(p.validate());
    const auto json = p.toJson();
    for (const char *key : {"steps", "learning_rate", "warmup_steps", "batch_size", "sequence_length", "threads", "seed"})
        EXPECT_TRUE(json.contains(key)) << key;
}

TEST(TrainingParams, NonFiniteValuesAreRefused)
{
    engine::train::TrainingParams p;
    p.learningRate = std::numeric_limits<double>::quiet_NaN();
    EXPECT_THROW(p.validate(), engine::Error);
    p = {};
    p.weightDecay = std::numeric_limits<double>::infinity();
    EXPECT_THROW(p.validate(), engine::Error);
    p = {};
    p.warmupSteps = p.steps + 1;
    EXPECT_THROW(p.validate(), engine::Error);
}
