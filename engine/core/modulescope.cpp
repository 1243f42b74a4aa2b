#include "engine/core/modulescope.h"

#include <atomic>
#include <string>

namespace engine {
namespace {

std::atomic<int> g_trackers{0};
thread_local std::string t_path;

} // namespace

ModuleScope::ModuleScope(std::string_view name)
{
    if (g_trackers.load(std::memory_order_relaxed) == 0)
        return;
    m_restoreLength = static_cast<int64_t>(t_path.size());
    if (!t_path.empty())
        t_path += '.';
    t_path += name;
}

ModuleScope::ModuleScope(std::string_view name, int64_t index)
{
    if (g_trackers.load(std::memory_order_relaxed) == 0)
        return;
    m_restoreLength = static_cast<int64_t>(t_path.size());
    if (!t_path.empty())
        t_path += '.';
    t_path += name;
    t_path += '.';
    t_path += std::to_string(index);
}

ModuleScope::~ModuleScope()
{
    if (m_restoreLength >= 0)
        t_path.resize(static_cast<size_t>(m_restoreLength));
}

std::string_view ModuleScope::currentPath() { return t_path; }

void ModuleScope::setTracking(bool on)
{
    if (on)
        g_trackers.fetch_add(1, std::memory_order_relaxed);
    else
        g_trackers.fetch_sub(1, std::memory_order_relaxed);
}

bool ModuleScope::tracking() { return g_trackers.load(std::memory_order_relaxed) > 0; }

} // namespace engine
