#pragma once

#include "engine/core/jobcontrol.h"

#include <atomic>
#include <functional>
#include <thread>

namespace app::cli {

/// Turns Ctrl+C / SIGTERM into a cancel request at the next step boundary, so the run is kept
/// whole; a second signal quits at once. Blocks both signals in the calling thread, so create
/// it in main() before any other thread starts.
class InterruptWatcher {
public:
    InterruptWatcher(engine::JobControl &control, std::function<void()> onFirstSignal);
    ~InterruptWatcher();
    InterruptWatcher(const InterruptWatcher &) = delete;
    InterruptWatcher &operator=(const InterruptWatcher &) = delete;

private:
    std::atomic<bool> m_stop{false};
    std::thread m_thread;
};

} // namespace app::cli
