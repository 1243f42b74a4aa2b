#include "bridge/metricsbuffer.h"

#include <algorithm>

namespace bridge {

MetricsBuffer::MetricsBuffer(std::size_t capacity) : m_capacity(std::max<std::size_t>(capacity, 1)) {}

bool MetricsBuffer::push(const engine::train::StepMetrics &metrics)
{
    std::lock_guard lock(m_mutex);
    if (m_items.size() >= m_capacity) {
        m_items.pop_front();
        ++m_dropped;
    }
    m_items.push_back(metrics);
    const bool notify = !m_notifyPending;
    m_notifyPending = true;
    return notify;
}

std::vector<engine::train::StepMetrics> MetricsBuffer::takeAll()
{
    std::lock_guard lock(m_mutex);
    std::vector<engine::train::StepMetrics> items(m_items.begin(), m_items.end());
    m_items.clear();
    m_notifyPending = false;
    return items;
}

std::size_t MetricsBuffer::size() const
{
    std::lock_guard lock(m_mutex);
    return m_items.size();
}

std::size_t MetricsBuffer::dropped() const
{
    std::lock_guard lock(m_mutex);
    return m_dropped;
}

void MetricsBuffer::clear()
{
    std::lock_guard lock(m_mutex);
    m_items.clear();
    m_dropped = 0;
    m_notifyPending = false;
}

} // namespace bridge
