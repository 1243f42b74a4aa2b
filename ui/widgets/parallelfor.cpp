#include "ui/widgets/parallelfor.h"

#include <QSemaphore>
#include <QThreadPool>

#include <algorithm>
#include <atomic>

namespace ui {

void parallelFor(int n, const std::function<void(int)> &work)
{
    if (n <= 0)
        return;
    std::atomic<int> next{0};
    QSemaphore finished;
    auto drain = [&] {
        for (int i = next.fetch_add(1); i < n; i = next.fetch_add(1))
            work(i);
    };
    // Helpers only from threads that are free now (tryStart): a busy pool never delays the caller,
    // which takes whatever the helpers have not.
    QThreadPool *pool = QThreadPool::globalInstance();
    int helpers = 0;
    const int wanted = std::min(n - 1, pool->maxThreadCount() - 1);
    for (int h = 0; h < wanted; ++h) {
        if (!pool->tryStart([&] {
                drain();
                finished.release();
            }))
            break;
        ++helpers;
    }
    drain();
    finished.acquire(helpers);
}

} // namespace ui
