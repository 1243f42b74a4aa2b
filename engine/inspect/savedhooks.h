#pragma once
// Saved-tensor hooks from pure C++ (docs/ARCHITECTURE.md, "The inspector"): an autograd Engine subclass, installed once
// with set_default_engine_stub(), hands every SavedVariable a hook object while a recorder is active
// and none otherwise (then autograd behaves exactly as the base engine). Hooks turn PyTorch's own
// version check off, so each hook checks the version at unpack itself and raises PyTorch's message.
// Engine-internal (torch headers).

#include <cstdint>
#include <memory>
#include <string>

#include <ATen/core/Tensor.h>
#include <c10/core/TensorImpl.h>

namespace engine::inspect {

struct RecorderState;

/// What a hook remembers of its tensor besides the tensor itself.
struct SavedEntry {
    int64_t id = -1;               ///< index into the recorder's saved tensors; -1 = not recorded
    c10::VariableVersion version;
    int64_t savedVersion = 0;
    int64_t seqNr = -1;            ///< sequence number of the node that saved it
    std::string gradFnName;        ///< the tensor's grad_fn when saved
    int64_t outputNr = 0;
    uint64_t checksum = 0;
    bool hasChecksum = false;
};

/// Hooks go to saved tensors from now on, reporting to `state`. Installs the engine stub on first use.
void installSavedHooks(const std::shared_ptr<RecorderState> &state, bool checksums);
/// No more hooks for new saved tensors (those already hooked keep checking).
void removeSavedHooks(const std::shared_ptr<RecorderState> &state);
/// Whether some recorder's hooks are installed.
bool savedHooksActive();

/// While alive, ops this thread runs are the recorder's own (checks, checksums): not recorded.
class InternalOpsScope {
public:
    InternalOpsScope();
    ~InternalOpsScope();
    InternalOpsScope(const InternalOpsScope &) = delete;
    InternalOpsScope &operator=(const InternalOpsScope &) = delete;

private:
    bool m_previous;
};

/// Called by a hook when its tensor is saved / used (defined in steprecorder.cpp).
std::shared_ptr<SavedEntry> recordSave(const std::shared_ptr<RecorderState> &state, const at::Tensor &t,
                                       bool computeChecksum);
void recordUnpack(const std::shared_ptr<RecorderState> &state, const SavedEntry &entry, int64_t currentVersion,
                  bool checksumChanged);

} // namespace engine::inspect
