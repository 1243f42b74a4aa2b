#include "engine/core/jobcontrol.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>

TEST(JobControl, CancelWakesAPausedJob)
{
    engine::JobControl control;
    control.setPaused(true);
    std::atomic<int> result{-1};
    std::thread worker([&] { result = control.waitWhilePaused() ? 1 : 0; });
    // Held: the worker waits in waitWhilePaused (the bound only ends a run where it never does).
    EXPECT_TRUE(control.waitUntilHeld(std::chrono::seconds(60))) << "the worker never waited";
    EXPECT_EQ(result.load(), -1) << "should still be paused";
    control.requestCancel();
    worker.join();
    EXPECT_EQ(result.load(), 0);
    EXPECT_TRUE(control.cancelRequested());
}

TEST(JobControl, ResumeContinues)
{
    engine::JobControl control;
    control.setPaused(true);
    std::atomic<int> result{-1};
    std::thread worker([&] { result = control.waitWhilePaused() ? 1 : 0; });
    EXPECT_TRUE(control.waitUntilHeld(std::chrono::seconds(60))) << "the worker never waited";
    control.setPaused(false);
    worker.join();
    EXPECT_EQ(result.load(), 1);
    control.requestCancel();
    control.reset();
    EXPECT_FALSE(control.cancelRequested());
    EXPECT_FALSE(control.paused());
}
