#include "app/cli/interruptwatcher.h"

#include <csignal>
#include <ctime>

#include <pthread.h>
#include <unistd.h>

namespace app::cli {
namespace {

sigset_t interruptSignals()
{
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    return set;
}

} // namespace

InterruptWatcher::InterruptWatcher(engine::JobControl &control, std::function<void()> onFirstSignal)
{
    const sigset_t set = interruptSignals();
    pthread_sigmask(SIG_BLOCK, &set, nullptr);
    m_thread = std::thread([this, &control, onFirstSignal = std::move(onFirstSignal)] {
        const sigset_t signals = interruptSignals();
        const timespec wait{0, 200'000'000};
        int received = 0;
        while (!m_stop.load()) {
            if (sigtimedwait(&signals, nullptr, &wait) < 0)
                continue;
            if (++received == 1) {
                control.requestCancel();
                if (onFirstSignal)
                    onFirstSignal();
            } else {
                ::_exit(130);
            }
        }
    });
}

InterruptWatcher::~InterruptWatcher()
{
    m_stop.store(true);
    if (m_thread.joinable())
        m_thread.join();
    const sigset_t set = interruptSignals();
    pthread_sigmask(SIG_UNBLOCK, &set, nullptr);
}

} // namespace app::cli
