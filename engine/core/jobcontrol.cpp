#include "engine/core/jobcontrol.h"

namespace engine {

void JobControl::requestCancel()
{
    {
        std::lock_guard lock(m_mutex);
        m_cancel.store(true);
    }
    m_wake.notify_all();
}

void JobControl::setPaused(bool paused)
{
    {
        std::lock_guard lock(m_mutex);
        m_paused.store(paused);
    }
    m_wake.notify_all();
}

bool JobControl::waitWhilePaused()
{
    std::unique_lock lock(m_mutex);
    if (m_paused.load() && !m_cancel.load()) {
        ++m_held;
        m_wake.notify_all(); // a waitUntilHeld
        m_wake.wait(lock, [this] { return !m_paused.load() || m_cancel.load(); });
        --m_held;
    }
    return !m_cancel.load();
}

bool JobControl::waitUntilHeld(std::chrono::milliseconds timeout)
{
    std::unique_lock lock(m_mutex);
    return m_wake.wait_for(lock, timeout, [this] { return m_held > 0; });
}

void JobControl::reset()
{
    std::lock_guard lock(m_mutex);
    m_cancel.store(false);
    m_paused.store(false);
}

} // namespace engine
