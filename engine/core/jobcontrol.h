#pragma once
// Cancel and pause for long jobs. The UI thread (or a signal handler) sets the flags directly;
// the engine checks them at every step boundary and inside long loops.

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>

namespace engine {

/// Shared between the thread that controls a job and the thread that runs it. Thread-safe.
class JobControl {
public:
    /// Asks the job to stop at its next check; also wakes a paused job.
    void requestCancel();
    bool cancelRequested() const { return m_cancel.load(std::memory_order_relaxed); }

    void setPaused(bool paused);
    bool paused() const { return m_paused.load(std::memory_order_relaxed); }

    /// Blocks while paused. Returns false when cancel was requested (before or during the pause).
    bool waitWhilePaused();
    /// Blocks until the job is held in waitWhilePaused, or `timeout` has passed; returns whether it is
    /// held. Tells the controller that a pause took effect, not only that it was asked for (tests use it
    /// to check that a paused loop really stops, without guessing how long a step takes).
    bool waitUntilHeld(std::chrono::milliseconds timeout);

    /// Clears both flags, for reuse by the next job.
    void reset();

private:
    std::atomic<bool> m_cancel{false};
    std::atomic<bool> m_paused{false};
    int m_held = 0; ///< threads waiting in waitWhilePaused; guarded by m_mutex
    std::mutex m_mutex;
    std::condition_variable m_wake;
};

/// The three ways a job ends.
enum class JobStatus { Succeeded, Failed, Cancelled };

inline const char *jobStatusName(JobStatus status)
{
    switch (status) {
    case JobStatus::Succeeded: return "succeeded";
    case JobStatus::Failed: return "failed";
    case JobStatus::Cancelled: return "cancelled";
    }
    return "failed";
}

} // namespace engine
