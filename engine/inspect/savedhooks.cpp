#include "engine/inspect/savedhooks.h"

#include "engine/inspect/steprecorder.h"
#include "engine/inspect/tensorinfo.h"

#include <torch/csrc/autograd/engine.h>
#include <torch/csrc/autograd/function.h>
#include <torch/csrc/autograd/saved_variable_hooks.h>
#include <torch/torch.h>

#include <atomic>
#include <mutex>

namespace engine::inspect {
namespace {

std::mutex g_hooksMutex;
std::shared_ptr<RecorderState> g_hookState;
std::atomic<bool> g_hooksOn{false};
bool g_checksums = false;

/// Keeps the saved tensor and checks it at unpack, as SavedVariable does without hooks.
class InspectHooks : public torch::autograd::SavedVariableHooks {
public:
    InspectHooks(std::weak_ptr<RecorderState> state, bool checksums)
        : m_state(std::move(state)), m_checksums(checksums)
    {
    }

    void call_pack_hook(const at::Tensor &tensor) override
    {
        const InternalOpsScope internal;
        auto state = m_state.lock();
        if (state) {
            m_entry = recordSave(state, tensor, m_checksums);
        } else {
            m_entry = std::make_shared<SavedEntry>();
            m_entry->version = torch::autograd::impl::version_counter(tensor);
            m_entry->savedVersion = static_cast<int64_t>(m_entry->version.current_version());
            m_entry->gradFnName = tensor.grad_fn() ? tensor.grad_fn()->name() : std::string();
            m_entry->outputNr = tensor.output_nr();
        }
        // An output of the node being built holds that node as grad_fn: keep only its data
        // (as SavedVariable does), or node -> hook -> tensor -> node would never be freed.
        const bool isOutputOfSaver = tensor.grad_fn() && static_cast<int64_t>(tensor.grad_fn()->sequence_nr()) ==
                                                             m_entry->seqNr;
        m_keepsOriginal = !isOutputOfSaver;
        m_data = isOutputOfSaver ? tensor.detach() : tensor;
    }

    at::Tensor call_unpack_hook() override
    {
        const InternalOpsScope internal;
        const auto current = static_cast<int64_t>(m_entry->version.current_version());
        bool changed = false;
        if (current == m_entry->savedVersion && m_entry->hasChecksum)
            changed = tensorChecksum(m_data) != m_entry->checksum;
        if (auto state = m_state.lock())
            recordUnpack(state, *m_entry, current, changed);
        if (current != m_entry->savedVersion) {
            // PyTorch names the tensor's grad_fn as it is now (a view's is regenerated after a write).
            std::string gradFn = m_entry->gradFnName;
            if (m_keepsOriginal && m_data.grad_fn())
                gradFn = m_data.grad_fn()->name();
            TORCH_CHECK(false, versionErrorMessage(m_data, gradFn, m_entry->outputNr, current, m_entry->savedVersion));
        }
        return m_data;
    }

private:
    std::weak_ptr<RecorderState> m_state;
    bool m_checksums;
    std::shared_ptr<SavedEntry> m_entry;
    at::Tensor m_data;
    bool m_keepsOriginal = true;
};

/// The base engine plus hooks while a recorder wants them.
class InspectEngine : public torch::autograd::Engine {
public:
    static torch::autograd::Engine &instance()
    {
        static InspectEngine *engine = new InspectEngine(); // never destroyed: worker threads at exit
        return *engine;
    }

    std::unique_ptr<torch::autograd::SavedVariableHooks> get_default_saved_variable_hooks() override
    {
        if (!g_hooksOn.load(std::memory_order_acquire))
            return nullptr;
        std::lock_guard lock(g_hooksMutex);
        if (!g_hookState)
            return nullptr;
        return std::make_unique<InspectHooks>(g_hookState, g_checksums);
    }
};

} // namespace

void installSavedHooks(const std::shared_ptr<RecorderState> &state, bool checksums)
{
    static std::once_flag installed;
    std::call_once(installed, [] { torch::autograd::set_default_engine_stub(&InspectEngine::instance); });
    std::lock_guard lock(g_hooksMutex);
    g_hookState = state;
    g_checksums = checksums;
    g_hooksOn.store(true, std::memory_order_release);
}

void removeSavedHooks(const std::shared_ptr<RecorderState> &state)
{
    std::lock_guard lock(g_hooksMutex);
    if (g_hookState != state)
        return;
    g_hookState.reset();
    g_hooksOn.store(false, std::memory_order_release);
}

bool savedHooksActive() { return g_hooksOn.load(std::memory_order_acquire); }

} // namespace engine::inspect
