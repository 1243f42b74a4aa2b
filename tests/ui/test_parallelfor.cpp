// ui::parallelFor: every item once, on the caller and the pool's idle threads, and back only when all
// ran; a helper that wakes after the caller has returned must touch nothing of the call's.

#include "ui/widgets/parallelfor.h"

#include <QThread>
#include <QThreadPool>

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <set>
#include <vector>

namespace {

TEST(ParallelFor, RunsEveryItemOnceAndReturnsWhenAllHaveRun)
{
    for (const int n : {0, 1, 2, 3, 17, 500}) {
        std::vector<std::atomic<int>> calls(size_t(std::max(n, 1)));
        std::atomic<int> finished{0};
        ui::parallelFor(n, [&](int i) {
            if (i % 7 == 0)
                QThread::usleep(200); // some items slower than others
            calls[size_t(i)].fetch_add(1);
            finished.fetch_add(1);
        });
        EXPECT_EQ(finished.load(), n) << "returned before every item had run, n = " << n;
        for (int i = 0; i < n; ++i)
            EXPECT_EQ(calls[size_t(i)].load(), 1) << "item " << i << " of " << n;
    }
}

// Two items, and each waits until another thread has taken one: they finish only if a pool thread runs
// one while the caller runs the other. No timing decides the outcome; the bound only ends a run where
// no helper ever comes (the caller then runs both items, one after the other, and the test fails).
TEST(ParallelFor, IdleThreadsOfThePoolHelp)
{
    if (QThreadPool::globalInstance()->maxThreadCount() < 2)
        GTEST_SKIP() << "the global thread pool has one thread on this machine: no helper to see";
    QThreadPool::globalInstance()->waitForDone();
    std::mutex mutex;
    std::condition_variable arrived;
    std::set<Qt::HANDLE> threads;
    bool waitedInVain = false;
    ui::parallelFor(2, [&](int) {
        std::unique_lock lock(mutex);
        threads.insert(QThread::currentThreadId());
        arrived.notify_all();
        if (!arrived.wait_for(lock, std::chrono::seconds(60), [&] { return threads.size() >= 2; }))
            waitedInVain = true;
    });
    EXPECT_FALSE(waitedInVain) << "an item waited 60 s for a second thread";
    EXPECT_EQ(threads.size(), 2u) << "every item ran on one thread";
    EXPECT_TRUE(threads.count(QThread::currentThreadId())) << "the caller took no item";
}

TEST(ParallelFor, ABusyPoolNeverDelaysTheCaller)
{
    // Every pool thread busy: the caller runs all items itself at once, not after the pool's work.
    QThreadPool *pool = QThreadPool::globalInstance();
    pool->waitForDone();
    std::atomic<bool> release{false};
    for (int t = 0; t < pool->maxThreadCount(); ++t)
        pool->start([&] {
            while (!release.load())
                QThread::msleep(1);
        });
    std::atomic<int> done{0};
    std::mutex mutex;
    std::set<Qt::HANDLE> threads;
    ui::parallelFor(4, [&](int) {
        const std::lock_guard lock(mutex);
        threads.insert(QThread::currentThreadId());
        done.fetch_add(1);
    });
    release.store(true);
    pool->waitForDone();
    EXPECT_EQ(done.load(), 4);
    EXPECT_EQ(threads, std::set<Qt::HANDLE>{QThread::currentThreadId()});
}

TEST(ParallelFor, ManyShortCallsInARowLeaveNoHelperBehind)
{
    // Items so short that the caller usually takes them all before a helper wakes: the helpers that wake
    // later find nothing to do and must not touch the returned call's state (AddressSanitizer, in the
    // sanitize build, reports it if they do).
    long total = 0;
    for (int round = 0; round < 3000; ++round) {
        int local[3] = {0, 0, 0};
        ui::parallelFor(3, [&](int i) { local[i] = i + 1; });
        total += local[0] + local[1] + local[2];
    }
    QThreadPool::globalInstance()->waitForDone();
    EXPECT_EQ(total, 3000L * 6);
}

} // namespace
