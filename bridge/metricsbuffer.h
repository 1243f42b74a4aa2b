#pragma once
// A bounded, mutex-guarded queue of step metrics between the engine thread (producer) and the UI
// thread (consumer). The producer never blocks on the UI; when the UI falls behind, the oldest
// entries are dropped and counted.

#include "engine/train/stepmetrics.h"

#include <cstddef>
#include <deque>
#include <mutex>
#include <vector>

namespace bridge {

/// Thread-safe. push() from the engine thread, takeAll() from the UI thread.
class MetricsBuffer {
public:
    static constexpr std::size_t kDefaultCapacity = 4096;

    explicit MetricsBuffer(std::size_t capacity = kDefaultCapacity);

    /// Appends one entry (dropping the oldest when full). Returns true when the consumer should be
    /// told: the first push since the last takeAll(). At most one notification per drain.
    bool push(const engine::train::StepMetrics &metrics);
    /// Moves everything out and re-arms the notification.
    std::vector<engine::train::StepMetrics> takeAll();

    std::size_t size() const;
    std::size_t capacity() const { return m_capacity; }
    /// Entries dropped because the buffer was full, since construction or clear().
    std::size_t dropped() const;
    void clear();

private:
    const std::size_t m_capacity;
    mutable std::mutex m_mutex;
    std::deque<engine::train::StepMetrics> m_items;
    std::size_t m_dropped = 0;
    bool m_notifyPending = false;
};

} // namespace bridge
