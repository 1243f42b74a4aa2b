#include "engine/inspect/steprecorder.h"

#include "engine/core/error.h"
#include "engine/core/modulescope.h"
#include "engine/inspect/savedhooks.h"
#include "engine/inspect/tensorinfo.h"

#include <ATen/SequenceNumber.h>
#include <ATen/record_function.h>
#include <torch/csrc/autograd/anomaly_mode.h>
#include <torch/csrc/autograd/function.h>
#include <torch/csrc/jit/runtime/interpreter.h>
#include <torch/torch.h>

#include <atomic>
#include <mutex>
#include <sstream>
#include <unordered_map>
#include <unordered_set>

namespace engine::inspect {

namespace {

std::atomic<RecorderState *> g_active{nullptr};
std::mutex g_activeMutex;

/// Per-thread frame of a running op (kept for dropped ops too, so saves still find their op).
struct Frame {
    int64_t opIndex = -1;        ///< -1: dropped from the trace
    int64_t seqNr = -1;
    std::string name;
    std::string module;
    bool backwardNode = false;
    std::vector<int64_t> writtenStorages;
};

thread_local std::vector<Frame> t_frames;

/// The module path of the TorchScript op now running: the instance names of the interpreter's module
/// hierarchy (entries "TOP(Decoder)::forward", "attention(CacheAttention)::forward") -> "attention".
std::string torchScriptPath()
{
    std::string path, top;
    for (const std::string &entry : torch::jit::currentModuleHierarchy()) {
        const std::string name = entry.substr(0, entry.find_first_of("(:"));
        if (name == "TOP" && top.empty()) { // "TOP(CacheAttention)::forward": the scripted module's class
            const size_t open = entry.find('('), close = entry.find(')');
            if (open != std::string::npos && close != std::string::npos && close > open + 1)
                top = entry.substr(open + 1, close - open - 1);
        }
        if (name.empty() || name == "TOP" || name == "SELF" || name == "INSTANCE_NAME_UNKNOWN" ||
            name.starts_with("CALL_FUNCTION"))
            continue;
        path += (path.empty() ? "" : ".") + name;
    }
    // An op of the scripted module itself (not of a submodule) is named by the module's class.
    return path.empty() ? top : path;
}

/// The script's line that the TorchScript op now running comes from: the innermost frame of the
/// interpreter's call stack (libtorch lists it first, the callers after it) that is in the user's code,
/// torch's own modules (nn.Linear's F.linear) skipped. The line's text is read from the file afterwards
/// (fillSourceCode), as the API differs between libtorch versions.
std::optional<SourceLocation> torchScriptSource()
{
    auto isTorchOwn = [](const std::string &file) {
        return file.find("/site-packages/torch/") != std::string::npos ||
               file.find("/dist-packages/torch/") != std::string::npos;
    };
    std::optional<SourceLocation> innermost;
    for (const torch::jit::StackEntry &entry : torch::jit::currentCallstack()) {
        // A module loaded from a saved archive runs its serialized code ("code/__torch__.py"); the archive's
        // debug records map each of its ranges back to the user's file, when the module was saved with them.
        const auto generated = entry.range.findSourceRangeThatGenerated();
        const auto where = generated ? generated->file_line_col() : entry.range.file_line_col();
        if (!where || std::get<0>(*where).empty())
            continue;
        SourceLocation source;
        source.file = std::get<0>(*where);
        source.line = static_cast<int64_t>(std::get<1>(*where));
        const std::string &function = entry.filename; // the function's qualified name, despite the field's name
        source.function = function.substr(function.find_last_of('.') == std::string::npos ? 0 : function.find_last_of('.') + 1);
        if (!isTorchOwn(source.file))
            return source;
        if (!innermost)
            innermost = source;
    }
    return innermost;
}

} // namespace

/// Everything a recording collects; shared with the hooks of saved tensors, which may outlive it.
struct RecorderState {
    RecordOptions options;
    mutable std::mutex mutex;
    bool active = true;
    bool backward = false;

    std::vector<OpRecord> ops;
    std::vector<SavedTensorInfo> saved;
    std::vector<std::shared_ptr<SavedEntry>> savedEntries; // version handles, same index as `saved`
    std::vector<StorageTimeline> storages;
    struct StorageSlot {
        c10::weak_intrusive_ptr<c10::StorageImpl> weak; ///< keeps the address from being reused while mapped
        int64_t id = 0;
    };
    std::unordered_map<const c10::StorageImpl *, StorageSlot> storageIds;
    std::unordered_map<const c10::TensorImpl *, int64_t> producer;
    std::unordered_map<int64_t, int64_t> lastForwardOpBySeq;
    std::unordered_map<int64_t, std::string> nodeNameBySeq;
    AutogradGraph graph; // the backward graph as beginBackward walked it
    std::unordered_map<int64_t, std::string> moduleBySeq;
    std::unordered_map<std::string, std::vector<bool>> writeArgsByOp;

    std::optional<NanOrigin> nan;
    std::vector<StaleSaved> staleAtUnpack;
    std::vector<int64_t> mutated;
    RecordingStats stats;
    at::CallbackHandle callbackHandle = 0;
    int64_t diagnosisBytes = 0;
    std::string limitError;

    /// The storage's id in this recording, a new one (labelled with the tensor) the first time.
    int64_t storageId(const at::Tensor &t)
    {
        if (!t.defined() || !t.has_storage())
            return 0;
        const c10::StorageImpl *impl = t.storage().unsafeGetStorageImpl();
        auto it = storageIds.find(impl);
        if (it != storageIds.end() && !it->second.weak.expired())
            return it->second.id;
        StorageSlot slot{c10::weak_intrusive_ptr<c10::StorageImpl>(
                             c10::intrusive_ptr<c10::StorageImpl>::reclaim_copy(const_cast<c10::StorageImpl *>(impl))),
                         static_cast<int64_t>(storages.size()) + 1};
        StorageTimeline timeline;
        timeline.id = slot.id;
        timeline.label = tensorLabel(t);
        storages.push_back(std::move(timeline));
        const int64_t id = slot.id;
        storageIds.insert_or_assign(impl, std::move(slot));
        diagnosisBytes += 96 + static_cast<int64_t>(storages.back().label.size());
        return id;
    }

    void addEvent(int64_t storage, StorageEvent event)
    {
        if (storage <= 0)
            return;
        storages[static_cast<size_t>(storage - 1)].events.push_back(event);
        diagnosisBytes += sizeof(StorageEvent);
        checkDiagnosisBound();
    }

    void checkDiagnosisBound()
    {
        if (limitError.empty() && diagnosisBytes > 2 * options.maxBytes) {
            std::ostringstream s;
            s << "the recording exceeds its memory bound of " << options.maxBytes << " bytes: the saved tensors and "
              << "in-place writes of this step alone need more than twice that (raise the bound)";
            limitError = s.str();
            active = false;
        }
    }

    bool opBudgetLeft() const { return stats.bytesUsed < options.maxBytes; }

    std::string currentModule(const Frame *parent, bool backwardNode, int64_t seqNr)
    {
        if (backwardNode) {
            auto it = moduleBySeq.find(seqNr);
            return it == moduleBySeq.end() ? std::string() : it->second;
        }
        if (backward)
            return parent ? parent->module : std::string();
        if (options.torchScriptScopes) {
            std::string path = torchScriptPath();
            if (!path.empty())
                return path;
        }
        return std::string(ModuleScope::currentPath());
    }

    const std::vector<bool> &writeArgs(const at::RecordFunction &fn)
    {
        // Keyed by overload: aten::to.dtype and aten::to.device take different arguments.
        const auto op = fn.operator_name();
        const std::string name = op ? op->name + "." + op->overload_name : std::string(fn.name());
        auto it = writeArgsByOp.find(name);
        if (it != writeArgsByOp.end())
            return it->second;
        std::vector<bool> writes;
        if (auto schema = fn.operator_schema()) {
            for (const c10::Argument &argument : schema->arguments())
                writes.push_back(argument.alias_info() && argument.alias_info()->isWrite());
        }
        return writeArgsByOp.emplace(name, std::move(writes)).first->second;
    }
};

namespace {

/// Marks this thread as running the recorder's own ops (checks, checksums): they are not recorded.
thread_local bool t_internal = false;

using InternalScope = InternalOpsScope;

struct OpContext : public at::ObserverContext {
    int64_t opIndex = -1;
    std::vector<std::pair<size_t, c10::VariableVersion>> writtenVersions; // input slot -> counter
    std::vector<at::Tensor> nanInputs; // kept only while the op runs, for the NaN origin's ranges
};

bool infIsExpected(const std::string &op, const std::vector<at::Tensor> &inputs)
{
    if (op.find("fill") != std::string::npos || op.find("full") != std::string::npos ||
        op == "aten::scalar_tensor" || op == "aten::tensor" || op == "aten::lift_fresh")
        return true;
    for (const at::Tensor &input : inputs)
        if (hasNonFinite(input))
            return true;
    return false;
}

void collectTensors(const c10::IValue &value, std::vector<at::Tensor> &out)
{
    if (value.isTensor()) {
        out.push_back(value.toTensor());
    } else if (value.isTensorList()) {
        for (const at::Tensor &t : value.toTensorVector())
            out.push_back(t);
    } else if (value.isList()) {
        for (const c10::IValue &item : value.toListRef())
            if (item.isTensor())
                out.push_back(item.toTensor());
    }
}

std::unique_ptr<at::ObserverContext> onOpStart(const at::RecordFunction &fn)
{
    if (t_internal)
        return nullptr;
    RecorderState *state = g_active.load(std::memory_order_acquire);
    if (!state)
        return nullptr;
    InternalScope internal;
    std::lock_guard lock(state->mutex);
    if (!state->active)
        return nullptr;

    const bool backwardNode = fn.scope() == at::RecordScope::BACKWARD_FUNCTION;
    const Frame *parent = t_frames.empty() ? nullptr : &t_frames.back();
    Frame frame;
    frame.name = fn.name();
    frame.seqNr = fn.seqNr();
    frame.backwardNode = backwardNode;
    frame.module = state->currentModule(parent, backwardNode, frame.seqNr);
    ++state->stats.opsSeen;

    auto context = std::make_unique<OpContext>();
    const bool keep = state->opBudgetLeft();
    OpRecord record;
    record.name = frame.name;
    record.phase = state->backward ? Phase::Backward : Phase::Forward;
    record.isBackwardNode = backwardNode;
    record.depth = static_cast<int>(t_frames.size());
    record.sequenceNr = frame.seqNr;
    record.module = frame.module;
    if (state->options.torchScriptScopes && !state->backward && !backwardNode)
        record.source = torchScriptSource();

    static const std::vector<bool> kNoWrites;
    const std::vector<bool> &writes = backwardNode ? kNoWrites : state->writeArgs(fn);
    const c10::ArrayRef<const c10::IValue> inputs = fn.inputs();
    const bool wantNanInputs = state->options.findNan && !state->nan;
    // A boxed call (the TorchScript interpreter) passes its whole stack: the op's arguments are the last ones.
    const size_t first = !writes.empty() && inputs.size() > writes.size() ? inputs.size() - writes.size() : 0;
    for (size_t slot = first; slot < inputs.size(); ++slot) {
        std::vector<at::Tensor> tensors;
        collectTensors(inputs[slot], tensors);
        const bool written = slot - first < writes.size() && writes[slot - first];
        for (const at::Tensor &t : tensors) {
            if (!t.defined())
                continue;
            TensorInfo info = describeTensor(t);
            info.written = written;
            if (written) {
                info.storageId = state->storageId(t);
                frame.writtenStorages.push_back(info.storageId);
                context->writtenVersions.emplace_back(record.inputs.size(), torch::autograd::impl::version_counter(t));
                record.writesInput = true;
            } else if (keep) {
                info.storageId = state->storageId(t);
            }
            if (wantNanInputs)
                context->nanInputs.push_back(t);
            record.inputs.push_back(std::move(info));
        }
    }

    if (!state->backward && !backwardNode && frame.seqNr >= 0)
        state->moduleBySeq[frame.seqNr] = frame.module;

    if (keep || record.writesInput) {
        record.index = static_cast<int64_t>(state->ops.size());
        state->stats.bytesUsed += estimateBytes(record);
        if (!state->backward && !backwardNode && frame.seqNr >= 0)
            state->lastForwardOpBySeq[frame.seqNr] = record.index;
        context->opIndex = record.index;
        frame.opIndex = record.index;
        if (!keep)
            state->diagnosisBytes += estimateBytes(record);
        state->ops.push_back(std::move(record));
        ++state->stats.opsKept;
    } else {
        ++state->stats.opsDropped;
    }
    state->checkDiagnosisBound();
    t_frames.push_back(std::move(frame));
    return context;
}

void onOpEnd(const at::RecordFunction &fn, at::ObserverContext *ctx)
{
    if (t_internal || !ctx)
        return;
    RecorderState *state = g_active.load(std::memory_order_acquire);
    if (!state || t_frames.empty())
        return;
    InternalScope internal;
    torch::NoGradGuard noGrad;
    auto *context = static_cast<OpContext *>(ctx);
    std::lock_guard lock(state->mutex);
    Frame frame = std::move(t_frames.back());
    t_frames.pop_back();
    if (context->opIndex < 0 || !state->active)
        return;
    OpRecord &record = state->ops[static_cast<size_t>(context->opIndex)];

    // Versions after the op of the arguments it writes; a write event unless an enclosing op
    // writes the same storage (then the event belongs to the outermost write).
    for (auto &[slot, version] : context->writtenVersions) {
        TensorInfo &info = record.inputs[slot];
        info.versionAfter = static_cast<int64_t>(version.current_version());
        if (info.versionAfter == info.versionBefore)
            continue;
        bool enclosed = false;
        for (const Frame &outer : t_frames)
            for (int64_t id : outer.writtenStorages)
                enclosed = enclosed || id == info.storageId;
        if (!enclosed)
            state->addEvent(info.storageId, {StorageEventKind::Write, record.index, info.versionAfter, -1});
    }

    std::vector<at::Tensor> outputs;
    for (const c10::IValue &value : fn.outputs())
        collectTensors(value, outputs);
    // Only ops the model (or a backward formula) called directly: inner ops of an op's implementation
    // may look at buffers before they are written (aten::empty, then addmm_ into it).
    const bool outermost = t_frames.empty() || t_frames.back().backwardNode;
    const bool checkNan = state->options.findNan && !state->nan && !frame.backwardNode && outermost &&
                          record.name.find("empty") == std::string::npos;
    const bool keepDetail = state->opBudgetLeft();
    for (const at::Tensor &t : outputs) {
        if (!t.defined())
            continue;
        TensorInfo info = describeTensor(t);
        info.versionAfter = info.versionBefore;
        if (keepDetail)
            info.storageId = state->storageId(t);
        // A view an op made of its input without writing (transpose, narrow, expand, ...) holds that
        // input's values, checked already: scanning it again cost as much as the step's matmuls.
        bool viewOfInput = false;
        if (checkNan && !record.writesInput && t.has_storage())
            for (const at::Tensor &input : context->nanInputs)
                viewOfInput = viewOfInput || (input.has_storage() && input.storage().is_alias_of(t.storage()));
        if (checkNan && !viewOfInput && !state->nan && hasNonFinite(t)) {
            info.nonFinite = true;
            // Inf is legitimate where a mask is built (fill with -inf) or carried (inputs already
            // non-finite); an Inf origin is an op that made Inf out of finite values. NaN always counts.
            if (!t.isnan().any().item<bool>() && infIsExpected(record.name, context->nanInputs)) {
                state->producer[t.unsafeGetTensorImpl()] = record.index;
                record.outputs.push_back(std::move(info));
                continue;
            }
            NanOrigin origin;
            origin.op = record.name;
            origin.opIndex = record.index;
            origin.module = record.module;
            origin.phase = record.phase;
            for (const Frame &outer : t_frames)
                if (outer.backwardNode)
                    origin.backwardNode = outer.name;
            origin.hasNan = t.isnan().any().item<bool>();
            for (const at::Tensor &input : context->nanInputs) {
                TensorInfo in = describeTensor(input);
                if (input.numel() > 0 && (input.is_floating_point() || input.is_complex() == false)) {
                    const at::Tensor d = input.detach().to(torch::kDouble);
                    in.min = d.min().item<double>();
                    in.max = d.max().item<double>();
                }
                origin.inputs.push_back(std::move(in));
            }
            state->nan = std::move(origin);
        }
        state->producer[t.unsafeGetTensorImpl()] = record.index;
        state->stats.bytesUsed += static_cast<int64_t>(sizeof(TensorInfo) + 8 * info.shape.size());
        record.outputs.push_back(std::move(info));
    }
}

} // namespace

InternalOpsScope::InternalOpsScope() : m_previous(t_internal) { t_internal = true; }
InternalOpsScope::~InternalOpsScope() { t_internal = m_previous; }

// ---- saved tensors (called by the hooks in savedhooks.cpp) ----

std::shared_ptr<SavedEntry> recordSave(const std::shared_ptr<RecorderState> &state, const at::Tensor &t,
                                       bool computeChecksum)
{
    InternalScope internal;
    auto entry = std::make_shared<SavedEntry>();
    entry->version = torch::autograd::impl::version_counter(t);
    entry->savedVersion = static_cast<int64_t>(entry->version.current_version());
    entry->gradFnName = t.grad_fn() ? t.grad_fn()->name() : std::string();
    entry->outputNr = static_cast<int64_t>(t.output_nr());
    if (computeChecksum)
        entry->checksum = tensorChecksum(t);
    entry->hasChecksum = computeChecksum;

    std::lock_guard lock(state->mutex);
    if (!state->active)
        return entry;
    SavedTensorInfo info;
    info.id = static_cast<int64_t>(state->saved.size());
    info.tensor = describeTensor(t);
    info.tensor.storageId = state->storageId(t);
    info.savedVersion = entry->savedVersion;
    info.gradFn = entry->gradFnName;
    if (!t_frames.empty()) {
        const Frame &frame = t_frames.back();
        info.savedByOp = frame.opIndex;
        info.savedByOpName = frame.name;
        entry->seqNr = frame.seqNr;
    } else {
        // No op callbacks (guard mode): the saving node was created just before, by this thread.
        entry->seqNr = static_cast<int64_t>(at::sequence_number::peek()) - 1;
    }
    auto produced = state->producer.find(t.unsafeGetTensorImpl());
    if (produced != state->producer.end()) {
        info.producedByOp = produced->second;
        info.producedByOpName = state->ops[static_cast<size_t>(produced->second)].name;
    }
    entry->id = info.id;
    state->addEvent(info.tensor.storageId, {StorageEventKind::Save, info.savedByOp, info.savedVersion, info.id});
    state->diagnosisBytes += static_cast<int64_t>(sizeof(SavedTensorInfo) + 8 * info.tensor.shape.size());
    state->checkDiagnosisBound();
    state->saved.push_back(std::move(info));
    state->savedEntries.push_back(entry);
    state->stats.savedTensors = static_cast<int64_t>(state->saved.size());
    return entry;
}

void recordUnpack(const std::shared_ptr<RecorderState> &state, const SavedEntry &entry, int64_t currentVersion,
                  bool checksumChanged)
{
    std::lock_guard lock(state->mutex);
    if (entry.id < 0 || entry.id >= static_cast<int64_t>(state->saved.size()))
        return;
    SavedTensorInfo &info = state->saved[static_cast<size_t>(entry.id)];
    info.unpacked = true;
    info.versionAtCheck = currentVersion;
    int64_t opIndex = -1;
    for (auto it = t_frames.rbegin(); it != t_frames.rend(); ++it)
        if (it->backwardNode) {
            opIndex = it->opIndex;
            break;
        }
    if (state->active)
        state->addEvent(info.tensor.storageId, {StorageEventKind::Unpack, opIndex, currentVersion, info.id});
    if (currentVersion != entry.savedVersion)
        state->staleAtUnpack.push_back({info.id, entry.savedVersion, currentVersion});
    else if (checksumChanged) {
        info.checksumChanged = true;
        state->mutated.push_back(info.id);
    }
}

// ---- the recorder ----

StepRecorder::StepRecorder(const RecordOptions &options)
    : m_state(std::make_shared<RecorderState>())
{
    m_state->options = options;
    m_state->stats.byteLimit = options.maxBytes;
    {
        std::lock_guard lock(g_activeMutex);
        if (g_active.load() || savedHooksActive())
            throw invalidInput("another autograd inspection is already recording in this process");
        if (options.recordOps)
            g_active.store(m_state.get(), std::memory_order_release);
    }
    installSavedHooks(m_state, options.checksums);
    if (options.recordOps) {
        ModuleScope::setTracking(true);
        m_state->callbackHandle = at::addGlobalCallback(at::RecordFunctionCallback(&onOpStart, &onOpEnd)
                                                            .needsInputs(true)
                                                            .needsOutputs(true)
                                                            .needsIds(true)
                                                            .scopes({at::RecordScope::FUNCTION,
                                                                     at::RecordScope::BACKWARD_FUNCTION}));
    }
}

StepRecorder::~StepRecorder() { stop(); }

void StepRecorder::stop()
{
    if (m_stopped)
        return;
    m_stopped = true;
    removeSavedHooks(m_state);
    if (m_state->options.recordOps) {
        at::removeCallback(m_state->callbackHandle);
        ModuleScope::setTracking(false);
        std::lock_guard lock(g_activeMutex);
        g_active.store(nullptr, std::memory_order_release);
    }
    std::lock_guard lock(m_state->mutex); // waits for callbacks still running on other threads
    m_state->active = false;
}

std::vector<StaleSaved> StepRecorder::beginBackward(const at::Tensor &loss)
{
    InternalScope internal;
    std::vector<StaleSaved> stale;
    std::lock_guard lock(m_state->mutex);
    // Walk the graph: node names by sequence number, and which nodes backward will run.
    std::unordered_set<int64_t> reachable;
    AutogradGraph &graph = m_state->graph;
    graph = {};
    // Breadth first from the loss, every node (which saved tensors backward will unpack), so that a
    // graph truncated for the report keeps the nodes nearest the loss. The guard (no op trace) needs
    // no report graph and no node names (a demangled type name each) but for the stale tensors.
    const bool guardOnly = !m_state->options.recordOps;
    std::unordered_map<int64_t, torch::autograd::Node *> nodeOfSeq;
    if (loss.defined() && loss.grad_fn()) {
        std::vector<torch::autograd::Node *> order{loss.grad_fn().get()};
        std::unordered_map<torch::autograd::Node *, int64_t> ids{{loss.grad_fn().get(), 0}};
        const auto inGraph = [&](int64_t id) { return !guardOnly && id < int64_t(AutogradGraph::kMaxGraphNodes); };
        for (size_t next = 0; next < order.size(); ++next) {
            torch::autograd::Node *node = order[next];
            const auto seq = static_cast<int64_t>(node->sequence_nr());
            reachable.insert(seq);
            nodeOfSeq.emplace(seq, node);
            if (!guardOnly)
                m_state->nodeNameBySeq[seq] = node->name();
            if (inGraph(static_cast<int64_t>(next))) {
                GraphNode item;
                item.id = static_cast<int64_t>(next);
                item.name = m_state->nodeNameBySeq[seq];
                item.sequenceNr = seq;
                if (auto op = m_state->lastForwardOpBySeq.find(seq); op != m_state->lastForwardOpBySeq.end())
                    item.forwardOp = op->second;
                graph.nodes.push_back(std::move(item));
            }
            for (const torch::autograd::Edge &edge : node->next_edges()) {
                if (!edge.function)
                    continue;
                auto [it, added] = ids.emplace(edge.function.get(), static_cast<int64_t>(order.size()));
                if (added)
                    order.push_back(edge.function.get());
                if (inGraph(static_cast<int64_t>(next)) && inGraph(it->second))
                    graph.edges.push_back({static_cast<int64_t>(next), it->second});
            }
        }
        graph.truncated = !guardOnly && order.size() > AutogradGraph::kMaxGraphNodes;
    }
    for (auto &[seq, opIndex] : m_state->lastForwardOpBySeq) {
        auto name = m_state->nodeNameBySeq.find(seq);
        if (name != m_state->nodeNameBySeq.end())
            m_state->ops[static_cast<size_t>(opIndex)].backwardNode = name->second;
    }
    std::unordered_map<int64_t, size_t> nodeBySeq;
    for (size_t n = 0; n < graph.nodes.size(); ++n)
        nodeBySeq.emplace(graph.nodes[n].sequenceNr, n);
    for (size_t i = 0; i < m_state->saved.size(); ++i) {
        SavedTensorInfo &info = m_state->saved[i];
        const SavedEntry &entry = *m_state->savedEntries[i];
        auto name = m_state->nodeNameBySeq.find(entry.seqNr);
        if (name != m_state->nodeNameBySeq.end())
            info.backwardNode = name->second;
        if (auto node = nodeBySeq.find(entry.seqNr); entry.seqNr >= 0 && node != nodeBySeq.end())
            graph.nodes[node->second].savedTensorIds.push_back(info.id);
        if (!reachable.empty() && !reachable.count(entry.seqNr))
            continue;
        const auto current = static_cast<int64_t>(entry.version.current_version());
        info.versionAtCheck = current;
        if (current != entry.savedVersion) {
            stale.push_back({info.id, entry.savedVersion, current});
            if (auto node = nodeOfSeq.find(entry.seqNr); guardOnly && node != nodeOfSeq.end())
                info.backwardNode = node->second->name();
        }
    }
    m_state->backward = true;
    return stale;
}

void StepRecorder::endBackward()
{
    std::lock_guard lock(m_state->mutex);
    m_state->backward = false;
}

std::vector<StaleSaved> StepRecorder::staleAtUnpack() const
{
    std::lock_guard lock(m_state->mutex);
    return m_state->staleAtUnpack;
}

std::vector<int64_t> StepRecorder::silentMutations() const
{
    std::lock_guard lock(m_state->mutex);
    return m_state->mutated;
}

void StepRecorder::nameStorages(const std::vector<std::pair<std::string, at::Tensor>> &named)
{
    std::lock_guard lock(m_state->mutex);
    for (const auto &[name, tensor] : named) {
        if (!tensor.defined() || !tensor.has_storage())
            continue;
        const auto it = m_state->storageIds.find(tensor.storage().unsafeGetStorageImpl());
        if (it == m_state->storageIds.end() || it->second.weak.expired())
            continue;
        StorageTimeline &timeline = m_state->storages[static_cast<size_t>(it->second.id - 1)];
        if (timeline.name.empty())
            timeline.name = name;
    }
}

std::string StepRecorder::limitError() const
{
    std::lock_guard lock(m_state->mutex);
    return m_state->limitError;
}

void StepRecorder::fill(InspectionReport &report) const
{
    std::lock_guard lock(m_state->mutex);
    report.ops = m_state->ops;
    report.storages.clear();
    for (const StorageTimeline &timeline : m_state->storages)
        if (!timeline.events.empty())
            report.storages.push_back(timeline);
    report.savedTensors = m_state->saved;
    report.graph = m_state->graph;
    report.nan = m_state->nan;
    report.stats = m_state->stats;
    report.stats.bytesUsed = m_state->stats.bytesUsed + m_state->diagnosisBytes;
}

std::string versionErrorMessage(const at::Tensor &data, const std::string &gradFnName, int64_t outputNr,
                                int64_t currentVersion, int64_t savedVersion)
{
    std::ostringstream message;
    message << "one of the variables needed for gradient computation has been modified by an inplace operation: ["
            << data.toString() << " " << data.sizes() << "]";
    if (!gradFnName.empty())
        message << ", which is output " << outputNr << " of " << gradFnName << ",";
    message << " is at version " << currentVersion << "; expected version " << savedVersion << " instead.";
    if (!torch::autograd::AnomalyMode::is_enabled())
        message << " Hint: enable anomaly detection to find the operation that failed to compute its gradient, "
                   "with torch.autograd.set_detect_anomaly(True).";
    else
        message << " Hint: the backtrace further above shows the operation that failed to compute its gradient. "
                   "The variable in question was changed in there or anywhere later. Good luck!";
    return message.str();
}

} // namespace engine::inspect
