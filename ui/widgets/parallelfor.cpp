#include "ui/widgets/parallelfor.h"

#include <QSemaphore>
#include <QThreadPool>

#include <algorithm>
#include <atomic>
#include <memory>

namespace ui {

void parallelFor(int n, const std::function<void(int)> &work)
{
    if (n <= 0)
        return;
    // Shared with the helpers, which may start after the caller has returned (a pool thread woken late
    // on a busy machine): such a helper finds no item left and touches nothing else.
    struct State {
        std::atomic<int> next{0};
        QSemaphore doneByHelpers; ///< one release per item a helper finished
        const std::function<void(int)> *work = nullptr;
        int n = 0;
    };
    const auto state = std::make_shared<State>();
    state->work = &work;
    state->n = n;
    // Helpers only from threads that are free now (tryStart): a busy pool never delays the caller,
    // which takes whatever the helpers have not, and then waits only for the items a helper is on, not
    // for a helper that has not woken up yet.
    QThreadPool *pool = QThreadPool::globalInstance();
    const int wanted = std::min(n - 1, pool->maxThreadCount() - 1);
    for (int h = 0; h < wanted; ++h) {
        if (!pool->tryStart([state] {
                for (int i = state->next.fetch_add(1); i < state->n; i = state->next.fetch_add(1)) {
                    (*state->work)(i); // the caller waits for this item, so work is still alive
                    state->doneByHelpers.release();
                }
            }))
            break;
    }
    int doneHere = 0;
    for (int i = state->next.fetch_add(1); i < n; i = state->next.fetch_add(1)) {
        work(i);
        ++doneHere;
    }
    state->doneByHelpers.acquire(n - doneHere);
}

} // namespace ui
