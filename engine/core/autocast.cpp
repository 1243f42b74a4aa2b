#include "engine/core/autocast.h"

#include "engine/core/torchversion.h"

#include <ATen/autocast_mode.h>

namespace engine {
namespace {

// The one place where the libtorch versions differ: 1.13 has per-device functions
// (is_cpu_enabled, get_autocast_cpu_dtype, ...), 2.4 and later take the device type.
#if TUNEBENCH_TORCH_AT_LEAST(2, 4)
bool enabled(c10::DeviceType device) { return at::autocast::is_autocast_enabled(device); }
void setEnabled(c10::DeviceType device, bool on) { at::autocast::set_autocast_enabled(device, on); }
c10::ScalarType dtypeOf(c10::DeviceType device) { return at::autocast::get_autocast_dtype(device); }
void setDtype(c10::DeviceType device, c10::ScalarType dtype) { at::autocast::set_autocast_dtype(device, dtype); }
#else
bool enabled(c10::DeviceType device)
{
    return device == c10::DeviceType::CPU ? at::autocast::is_cpu_enabled() : at::autocast::is_enabled();
}
void setEnabled(c10::DeviceType device, bool on)
{
    if (device == c10::DeviceType::CPU)
        at::autocast::set_cpu_enabled(on);
    else
        at::autocast::set_enabled(on);
}
c10::ScalarType dtypeOf(c10::DeviceType device)
{
    return device == c10::DeviceType::CPU ? at::autocast::get_autocast_cpu_dtype() : at::autocast::get_autocast_gpu_dtype();
}
void setDtype(c10::DeviceType device, c10::ScalarType dtype)
{
    if (device == c10::DeviceType::CPU)
        at::autocast::set_autocast_cpu_dtype(dtype);
    else
        at::autocast::set_autocast_gpu_dtype(dtype);
}
#endif

} // namespace

AutocastState AutocastState::current()
{
    AutocastState state;
    state.cpu = enabled(c10::DeviceType::CPU);
    state.cpuDtype = dtypeOf(c10::DeviceType::CPU);
    state.cuda = enabled(c10::DeviceType::CUDA);
    state.cudaDtype = dtypeOf(c10::DeviceType::CUDA);
    return state;
}

AutocastScope::AutocastScope(c10::DeviceType device, c10::ScalarType dtype)
    : m_previous(AutocastState::current())
{
    AutocastState next = m_previous;
    if (device == c10::DeviceType::CUDA) {
        next.cuda = true;
        next.cudaDtype = dtype;
    } else {
        next.cpu = true;
        next.cpuDtype = dtype;
    }
    apply(next);
}

AutocastScope::AutocastScope(const AutocastState &state)
    : m_previous(AutocastState::current())
{
    apply(state);
}

void AutocastScope::apply(const AutocastState &state)
{
    at::autocast::increment_nesting();
    setDtype(c10::DeviceType::CPU, state.cpuDtype);
    setEnabled(c10::DeviceType::CPU, state.cpu);
    setDtype(c10::DeviceType::CUDA, state.cudaDtype);
    setEnabled(c10::DeviceType::CUDA, state.cuda);
}

AutocastScope::~AutocastScope()
{
    setEnabled(c10::DeviceType::CPU, m_previous.cpu);
    setDtype(c10::DeviceType::CPU, m_previous.cpuDtype);
    setEnabled(c10::DeviceType::CUDA, m_previous.cuda);
    setDtype(c10::DeviceType::CUDA, m_previous.cudaDtype);
    // As torch.autocast's __exit__: the outermost scope drops the cast copies of the weights.
    if (at::autocast::decrement_nesting() == 0)
        at::autocast::clear_cache();
}

} // namespace engine
