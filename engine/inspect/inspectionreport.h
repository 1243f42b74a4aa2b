#pragma once
// The autograd inspector's result as plain values (no torch): the op trace of one recorded step,
// every storage's version events, the saved tensors, the diagnoses and the gradient-flow table.
// The CLI prints it (inspectionoutput.h: JSON and text); the Inspect page renders it.
//
// How to read it:
//   report.status                       // Ok, InplaceConflict, SilentMutation, Nan, Error
//   report.conflict->culpritOpIndex     // index into report.ops of the write that broke backward
//   report.storages[i].events           // a row per storage: create / save / write / unpack marks
//   report.gradients                    // one row per parameter

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace engine::inspect {

/// What the inspection found (the first that applies, in this order: error, conflict, mutation, nan).
enum class InspectStatus { Ok, InplaceConflict, SilentMutation, Nan, Error };

/// "ok", "inplace_conflict", "silent_mutation", "nan", "error".
const char *statusName(InspectStatus status);

/// Forward pass or backward pass.
enum class Phase { Forward, Backward };

/// "forward", "backward".
const char *phaseName(Phase phase);

/// One tensor argument or result of an op, as it was when the op ran.
struct TensorInfo {
    std::vector<int64_t> shape;
    std::string dtype;           ///< "float32", "int64", ...
    std::string device;          ///< "cpu", "cuda:0"
    int64_t storageId = 0;       ///< index into InspectionReport::storages + 1; 0 = no storage
    int64_t versionBefore = -1;  ///< version counter when the op started (-1 = unknown)
    int64_t versionAfter = -1;   ///< when it ended (written arguments and outputs; -1 = unknown)
    bool written = false;        ///< the op's schema marks this argument as written (Tensor(a!))
    bool nonFinite = false;      ///< outputs only: holds NaN or Inf (checked while looking for a NaN origin)
    double min = 0;              ///< range of the values, filled only for the NaN origin's inputs
    double max = 0;
};

/// Where in the user's code something happened: the innermost frame of the program (not torch's).
struct SourceLocation {
    std::string file;            ///< as the program's interpreter named it ("/home/me/llama/model.py")
    int64_t line = 0;            ///< 1-based
    std::string function;        ///< "forward"
    std::string code;            ///< the line's text, stripped ("self.cache_k[:bsz, ...] = xk")
};

/// One op of the trace, in the order the ops started.
struct OpRecord {
    int64_t index = 0;           ///< position in InspectionReport::ops
    std::string name;            ///< "aten::copy_", or a backward node "BmmBackward0"
    Phase phase = Phase::Forward;
    bool isBackwardNode = false; ///< a node of the autograd graph rather than an aten op
    int depth = 0;               ///< nesting: 0 = called by the model, 1 = called by that op, ...
    int64_t sequenceNr = -1;     ///< autograd sequence number; a forward op and its node share it
    std::string module;          ///< module path ("model.layers.0.self_attn"); backward: the forward op's
    std::string backwardNode;    ///< forward ops that created a node: its name ("BmmBackward0")
    bool writesInput = false;    ///< some argument is written in place
    std::vector<TensorInfo> inputs;
    std::vector<TensorInfo> outputs;
    std::optional<SourceLocation> source; ///< the user's line that led to the op, when the recorder knows it
};

/// A mark on a storage's version timeline.
enum class StorageEventKind { Save, Write, Unpack };

/// "save", "write", "unpack".
const char *storageEventName(StorageEventKind kind);

/// One event on a storage: a tensor saved for backward, an in-place write, a saved tensor used.
struct StorageEvent {
    StorageEventKind kind = StorageEventKind::Write;
    int64_t opIndex = -1;        ///< the op (forward op that saved or wrote; backward node that unpacked)
    int64_t version = 0;         ///< version after the event (write) or at the event (save, unpack)
    int64_t savedTensorId = -1;  ///< save / unpack: index into InspectionReport::savedTensors
};

/// One storage (the memory behind a tensor and all its views) that was saved or written.
struct StorageTimeline {
    int64_t id = 0;
    std::string label;           ///< shape and dtype of the first tensor seen on it ("[1, 16, 8] float32")
    std::string name;            ///< the parameter or buffer it holds ("layers.1.attention.cache_v"), when known
    std::vector<StorageEvent> events;
};

/// A tensor autograd saved for backward.
struct SavedTensorInfo {
    int64_t id = 0;                 ///< index into InspectionReport::savedTensors
    TensorInfo tensor;              ///< shape, dtype, storage; versionBefore = version when saved
    int64_t savedByOp = -1;         ///< op index of the forward op that saved it (-1 = dropped/unknown)
    std::string savedByOpName;      ///< "aten::bmm"
    std::string backwardNode;       ///< the node that will use it ("BmmBackward0")
    int64_t producedByOp = -1;      ///< op that made the tensor (-1 = an input, a parameter, unknown)
    std::string producedByOpName;
    std::string gradFn;             ///< the tensor's own grad_fn when saved ("AsStridedBackward0"), "" for leaves
    int64_t savedVersion = 0;
    int64_t versionAtCheck = -1;    ///< before backward (prediction) or at unpack, whichever came last
    bool unpacked = false;          ///< backward used it
    bool checksumChanged = false;   ///< contents differ at unpack although the version did not move
};

/// An in-place write to a saved tensor's storage after it was saved.
struct WriteInfo {
    int64_t opIndex = -1;
    std::string op;                 ///< "aten::copy_"
    std::string module;
    int64_t versionAfter = 0;
    std::optional<SourceLocation> source;
};

/// The in-place conflict: a saved tensor was written before backward used it.
struct InplaceConflict {
    int64_t savedTensorId = -1;
    std::vector<int64_t> tensorShape;
    std::string dtype;
    std::string producedByOp;       ///< op that made the tensor ("aten::slice")
    std::string savedByOp;          ///< forward op whose saved tensor was invalidated ("aten::bmm")
    int64_t savedByOpIndex = -1;
    std::string savedByModule;
    std::string backwardNode;       ///< "BmmBackward0"
    int64_t savedVersion = 0;
    int64_t currentVersion = 0;
    std::string culpritOp;          ///< the first write after the save ("aten::copy_")
    int64_t culpritIndex = -1;      ///< its position in the trace (-1 when the trace dropped it)
    std::string culpritModule;
    std::optional<SourceLocation> culpritSource; ///< the user's line of the culprit, when known
    std::optional<SourceLocation> savedBySource; ///< the user's line of the op that saved the tensor
    std::string storageName;        ///< the parameter or buffer written ("layers.1.attention.cache_k"), when known
    std::vector<WriteInfo> writes;  ///< every write to the storage after the save, in order
    std::vector<std::string> fixes; ///< in plain words, the one that fits first
    bool predicted = false;         ///< found by checking saved tensors before backward ran
    bool raisedInBackward = false;  ///< backward failed on it
};

/// A saved tensor whose contents changed without a version bump (a `.data` write, a custom kernel).
struct SilentMutation {
    int64_t savedTensorId = -1;
    std::vector<int64_t> tensorShape;
    std::string savedByOp;
    std::string backwardNode;
    std::string module;
    std::optional<SourceLocation> source;
};

/// Where NaN or Inf first appeared.
struct NanOrigin {
    std::string op;                 ///< the aten op whose output first held NaN/Inf ("aten::log")
    int64_t opIndex = -1;
    std::string module;
    Phase phase = Phase::Forward;
    std::string backwardNode;       ///< backward phase: the node the op ran in ("SqrtBackward0")
    std::vector<TensorInfo> inputs; ///< with min / max filled
    bool hasNan = false;            ///< NaN (else only Inf)
    std::optional<SourceLocation> source; ///< the user's line of that op, when known
};

/// One parameter after backward.
struct GradientRow {
    std::string name;
    std::vector<int64_t> shape;
    std::string device;
    bool requiresGrad = false;
    bool hasGrad = false;
    double gradNorm = 0;
    bool inOptimizer = false;
    bool optimizerKnown = false;    ///< false when no optimizer was given (inOptimizer then meaningless)
    std::string problem;            ///< "" or a plain sentence ("frozen but in the optimizer", ...)
};

/// A node of the backward graph, as the walk from the loss found it before backward ran.
struct GraphNode {
    int64_t id = 0;                     ///< index into AutogradGraph::nodes; 0 = the loss's grad_fn
    std::string name;                   ///< "BmmBackward0", "AccumulateGrad"
    int64_t sequenceNr = -1;
    int64_t forwardOp = -1;             ///< the forward op that created it (index into ops), -1 = unknown
    std::vector<int64_t> savedTensorIds; ///< tensors it saved (indices into savedTensors)
};

/// An edge from a node to one of its next_edges (towards the leaves).
struct GraphEdge {
    int64_t from = 0;
    int64_t to = 0;
};

/// The backward graph of the recorded step, bounded in size.
struct AutogradGraph {
    std::vector<GraphNode> nodes;
    std::vector<GraphEdge> edges;
    bool truncated = false;             ///< the graph has more nodes than the kMaxGraphNodes kept here
    static constexpr size_t kMaxGraphNodes = 4000;
};

/// How much of the step the recording kept.
struct RecordingStats {
    int64_t opsSeen = 0;
    int64_t opsKept = 0;
    int64_t opsDropped = 0;         ///< ops seen after the memory bound, not in the trace
    int64_t savedTensors = 0;
    int64_t bytesUsed = 0;          ///< estimate of the recording's own memory
    int64_t byteLimit = 0;
};

/// The whole result of inspecting one step.
struct InspectionReport {
    InspectStatus status = InspectStatus::Ok;
    std::string source;             ///< "scenario kv-cache-inplace", "torchscript model.pt (forward)", ...
    std::string pytorchError;       ///< PyTorch's own message for the failed step; empty when none
    std::string error;              ///< status Error: what went wrong
    std::optional<InplaceConflict> conflict;
    std::vector<SilentMutation> mutations;
    std::optional<NanOrigin> nan;
    std::vector<GradientRow> gradients;
    std::vector<std::string> gradientProblems; ///< summary sentences ("2 trainable parameters are not in the optimizer")
    std::vector<OpRecord> ops;
    std::vector<StorageTimeline> storages;
    std::vector<SavedTensorInfo> savedTensors;
    AutogradGraph graph;
    RecordingStats stats;
    double loss = 0;                ///< the loss of the step (NaN possible)
    bool backwardSucceeded = false;
    std::string summary;            ///< one plain sentence: what happened
};

} // namespace engine::inspect
