#pragma once
// Records one training step (forward and backward) for the autograd inspector: every op through a
// global RecordFunction callback, every tensor autograd saves through saved-tensor hooks installed
// with the autograd engine stub (docs/ARCHITECTURE.md, "The inspector"). Installing hooks turns PyTorch's own
// version check off, so the hooks check versions themselves and raise PyTorch's message.
// Engine-internal (torch headers). One recorder at a time per process.
//
// How to use:
//   StepRecorder recorder(options);                  // callbacks and hooks on (RAII)
//   torch::Tensor loss = forward();
//   recorder.beginBackward(loss);                    // links ops to nodes, predicts conflicts
//   try { loss.backward(); } catch (const c10::Error &e) { ... }
//   recorder.endBackward();
//   recorder.fill(report);                           // ops, storages, saved tensors, diagnoses' raw data
// With options.recordOps = false only the saved-tensor hooks run (the cheap guard mode).

#include "engine/inspect/diagnosis.h"
#include "engine/inspect/inspectionreport.h"

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <ATen/core/Tensor.h>

namespace engine::inspect {

/// What a recording keeps and how much memory it may use.
struct RecordOptions {
    int64_t maxBytes = int64_t(64) << 20; ///< the op trace stops growing here (ops then counted as dropped)
    bool recordOps = true;                ///< false: saved-tensor hooks only (guard mode)
    bool checksums = true;                ///< checksum saved tensors at save and at unpack (silent mutation)
    bool findNan = true;                  ///< check op outputs for NaN/Inf until the first is found
    bool torchScriptScopes = false;       ///< take module paths from the TorchScript interpreter
};

struct RecorderState;

/// The RAII recording of one step; see the header comment.
class StepRecorder {
public:
    /// Installs the callbacks and hooks. Throws engine::Error when another recorder is active.
    explicit StepRecorder(const RecordOptions &options = {});
    /// Removes them (the hooks of tensors still saved keep checking versions).
    ~StepRecorder();
    StepRecorder(const StepRecorder &) = delete;
    StepRecorder &operator=(const StepRecorder &) = delete;

    /// Call after forward, before backward: names each forward op's backward node (graph walk from
    /// `loss`) and checks every saved tensor the graph still needs against its storage's version.
    /// Returns the stale ones (the prediction).
    std::vector<StaleSaved> beginBackward(const at::Tensor &loss);
    /// Call when backward returned or threw.
    void endBackward();
    /// Stops recording ops and saves now (idempotent; the destructor calls it).
    void stop();

    /// Saved tensors that backward found stale at unpack (it then raised PyTorch's error).
    std::vector<StaleSaved> staleAtUnpack() const;
    /// Saved tensor ids whose checksum changed while the version did not.
    std::vector<int64_t> silentMutations() const;
    /// Set when the recording exceeded twice its bound even for the events diagnoses need.
    std::string limitError() const;
    /// Names the storages the recording saw that hold these tensors (parameters, buffers), so that the
    /// version timeline says "layers.0.self_attn.q_proj.weight" rather than a shape. Call before fill().
    void nameStorages(const std::vector<std::pair<std::string, at::Tensor>> &named);

    /// Copies the trace, storages, saved tensors, NaN origin and stats into `report`.
    void fill(InspectionReport &report) const;

private:
    std::shared_ptr<RecorderState> m_state;
    bool m_stopped = false;
};

/// The message PyTorch raises for a stale saved tensor, built the same way (PyTorch's
/// torch/csrc/autograd/saved_variable.cpp).
std::string versionErrorMessage(const at::Tensor &data, const std::string &gradFnName, int64_t outputNr,
                                int64_t currentVersion, int64_t savedVersion);

} // namespace engine::inspect
