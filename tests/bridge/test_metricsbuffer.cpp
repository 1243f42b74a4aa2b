#include "bridge/metricsbuffer.h"

#include <gtest/gtest.h>

#include <thread>

namespace {

engine::train::StepMetrics step(int64_t n)
{
    engine::train::StepMetrics m;
    m.step = n;
    m.loss = 1.0 / static_cast<double>(n);
    return m;
}

TEST(MetricsBuffer, KeepsTheNewestEntriesWhenFull)
{
    bridge::MetricsBuffer buffer(100);
    for (int64_t i = 1; i <= 1000; ++i)
        buffer.push(step(i));
    EXPECT_EQ(buffer.size(), 100u);
    EXPECT_EQ(buffer.dropped(), 900u);
    const auto items = buffer.takeAll();
    ASSERT_EQ(items.size(), 100u);
    EXPECT_EQ(items.front().step, 901);
    EXPECT_EQ(items.back().step, 1000);
    EXPECT_EQ(buffer.size(), 0u);
}

TEST(MetricsBuffer, NotifiesOncePerDrain)
{
    bridge::MetricsBuffer buffer;
    EXPECT_TRUE(buffer.push(step(1)));
    EXPECT_FALSE(buffer.push(step(2)));
    EXPECT_FALSE(buffer.push(step(3)));
    EXPECT_EQ(buffer.takeAll().size(), 3u);
    EXPECT_TRUE(buffer.push(step(4)));
    EXPECT_FALSE(buffer.push(step(5)));
}

TEST(MetricsBuffer, ConcurrentProducerAndConsumerLoseNothingBelowCapacity)
{
    bridge::MetricsBuffer buffer(1 << 20);
    constexpr int64_t kCount = 200'000;
    std::thread producer([&] {
        for (int64_t i = 1; i <= kCount; ++i)
            buffer.push(step(i));
    });
    int64_t next = 1;
    while (next <= kCount) {
        for (const auto &m : buffer.takeAll())
            ASSERT_EQ(m.step, next++);
    }
    producer.join();
    EXPECT_EQ(buffer.dropped(), 0u);
}

} // namespace
