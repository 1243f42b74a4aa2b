"""The recorder: what a Python program's steps do to tensors, for the engine's diagnosis.

Mechanism (the Python counterpart of engine/inspect/steprecorder.h, see docs/trace-format.md):
  ops              a TorchDispatchMode sees every aten op below autograd, forward and backward, with
                   the op's schema (which argument it writes) and its tensors' version counters
  saved tensors    default saved-tensor hooks see every tensor autograd saves (pack) and every use of
                   one in backward (unpack); they record versions and checksums. While such hooks are
                   set PyTorch skips its own version check (torch/csrc/autograd/saved_variable.cpp),
                   so the unpack hook makes it and raises PyTorch's message, built the same way
  op -> node       after an op, its output's grad_fn is the node it created; the node's `metadata`
                   dict gets a stamp (node id, op, module, source) that backward reads back
  saved -> node    before backward runs, a walk of the graph from the loss reads each node's saved
                   tensors (`_saved_*`), which unpacks them through the hook: that names the node
                   (and the op) that saved each one, and checks its version (the prediction)
  backward nodes   a pre hook and a post hook on every node of the walked graph
  modules          global forward pre and post hooks keep the module path
  the gap           between a backward's end and the next module call, while no graph keeps saved
                   tensors, the dispatch mode is off (the optimizer's updates stay in C++); in a CPU
                   backward it is on only inside hooked nodes (nodes that only hand gradients on,
                   _PASS_NODES, are not hooked)
  source lines     frames.capture(): the innermost non-torch frame, resolved when writing

The recorder never diagnoses; it writes the trace (trace.py) and hands it to the engine (handoff.py).
"""
import os
import sys
import threading
import types
import weakref

from . import frames
from . import records as R
from .records import OpRec, SavedInfo, UnpackRec

KEY = "tunebench_record"

# A node's stamp (a list kept in node.metadata[KEY]).
ST_ID, ST_OP, ST_MODULE, ST_FRAME, ST_OPNAME, ST_NAME, ST_HOOKED = range(7)

# Ops whose result does not depend on the old values of what they write: no range is taken of
# their written argument before they run (the NaN search's min/max).
_OVERWRITES = frozenset(("aten::copy_", "aten::fill_", "aten::zero_", "aten::normal_", "aten::uniform_",
                         "aten::bernoulli_", "aten::random_", "aten::exponential_", "aten::index_put_",
                         "aten::_index_put_impl_", "aten::set_", "aten::resize_", "aten::detach_"))

# In-place ops that change what a tensor object is (shape, strides, storage), not only its values.
_METADATA_OPS = frozenset(("resize_", "resize_as_", "set_", "t_", "transpose_", "squeeze_", "unsqueeze_",
                           "as_strided_", "swapdims_", "swapaxes_", "detach_", "_coalesced_",
                           "sparse_resize_", "sparse_resize_and_clear_", "_resize_output_"))


def short_name(name):
    return name.split("::", 1)[-1]


# Ops whose output holds whatever the memory held: never a NaN origin.
_UNINITIALIZED = frozenset(("aten::empty", "aten::empty_like", "aten::empty_strided", "aten::new_empty",
                            "aten::new_empty_strided", "aten::_empty_affine_quantized", "aten::resize_",
                            "aten::resize_as_", "aten::set_", "aten::empty_permuted"))

# Backward nodes that save no tensor and only hand gradients on (a leaf's accumulation; views):
# they read no saved tensor, write none and make no NaN, so no diagnosis needs their records; not
# hooking them spares two Python hook registrations and calls each (12 of the bench MLP's 21 nodes).
_PASS_NODES = frozenset(("torch::autograd::AccumulateGrad", "TBackward0", "ViewBackward0",
                         "TransposeBackward0", "PermuteBackward0", "UnsqueezeBackward0",
                         "SqueezeBackward0", "SqueezeBackward1", "ReshapeAliasBackward0",
                         "UnsafeViewBackward0", "AliasBackward0"))

_CHECKSUM_CACHE = 64  # saved tensors whose checksums are reused while no op writes

_NAN_BATCH = 64  # device (non-CPU) outputs: finite checks are queued and read this many at a time


class _OpInfo:
    """What an op's schema says, once per op overload."""
    __slots__ = ("name", "arg_writes", "kw_writes", "ret_fresh", "ret_writes", "ret_names", "skip_nan",
                 "overwrites", "returns_tensor", "makes_constants",
                 "func", "call", "ret_alias_arg", "changes_metadata", "inert")

    def __init__(self, func):
        self.func = func  # held: the recorder's table is keyed by id(func)
        # OpOverload.__call__ is a Python frame around ._op (1.13 and 2.x); call ._op itself
        op = getattr(func, "_op", None)
        self.call = op if callable(op) else func
        schema = func._schema
        self.name = schema.name if "::" in schema.name else "aten::" + schema.name
        writes = []
        kw = {}
        for a in schema.arguments:
            w = bool(a.alias_info is not None and a.alias_info.is_write)
            writes.append(w)
            kw[a.name] = w
        self.arg_writes = tuple(writes)
        self.kw_writes = kw
        self.ret_fresh = tuple(r.alias_info is None for r in schema.returns)
        # for a result that aliases an argument (a view): that argument's position (its version is the
        # view's: autograd points the view at its base's counter only after the op returns)
        alias_arg = []
        for r in schema.returns:
            pos = -1
            if r.alias_info is not None and not r.alias_info.is_write:
                pos = 0
                for i, a in enumerate(schema.arguments):
                    if a.alias_info is not None and r.alias_info.before_set \
                            and a.alias_info.before_set == r.alias_info.before_set:
                        pos = i
                        break
            alias_arg.append(pos)
        self.ret_alias_arg = tuple(alias_arg)
        self.ret_writes = tuple(bool(r.alias_info is not None and r.alias_info.is_write) for r in schema.returns)
        self.ret_names = tuple(r.name for r in schema.returns if r.name)
        # an op all of whose results are views of its inputs: its values are its inputs' (no NaN check)
        # no NaN search: an op whose results are all views of its inputs (its values are its inputs'),
        # or one whose output is uninitialized memory
        views_only = bool(schema.returns) and not any(self.ret_fresh) and not any(self.ret_writes)
        self.skip_nan = views_only or self.name in _UNINITIALIZED
        # an op that writes nothing and is no NaN origin: in backward without grad it makes no node
        # either, and nothing a diagnosis reads (autograd's own detach, t and view: ~60% of the bench
        # MLP's backward ops)
        self.inert = self.skip_nan and not any(writes) and not any(self.ret_writes)
        self.overwrites = self.name in _OVERWRITES
        # in-place ops that change a tensor's shape, strides or storage (its cached info)
        self.changes_metadata = short_name(self.name) in _METADATA_OPS
        self.returns_tensor = len(schema.returns) == 1 and str(schema.returns[0].type) == "Tensor"
        # ops that build constants (a -inf attention mask): an Inf they make is no NaN/Inf origin
        short = self.name.split("::", 1)[-1]
        self.makes_constants = ("fill" in short or "full" in short
                                or short in ("scalar_tensor", "tensor", "lift_fresh", "lift_fresh_copy"))


class _Box:
    """What a SavedVariable holds for the recorder: the tensor to give back at unpack and its record.
    `orig` is True when `t` is the tensor autograd saved (inputs, as PyTorch keeps them); False when
    it is a detached alias (outputs, which would otherwise form a reference cycle through their
    own grad_fn)."""
    __slots__ = ("t", "info", "orig", "live")

    def __init__(self, t, info, orig, live):
        self.t = t
        self.info = info
        self.orig = orig
        self.live = live  # the recorder's count of boxes alive (saved tensors of some graph)
        live[0] += 1

    def __del__(self):
        self.live[0] -= 1


class _LastOp:
    """The op that ran last in forward, while autograd may still save its outputs (weak references)."""
    __slots__ = ("op", "outs", "remaining")

    def __init__(self, op, outs):
        self.op = op
        self.outs = outs
        self.remaining = 0


class Options:
    def __init__(self, trace_path, nan_check=True, max_record_mib=64, always_write=False, checksums=True,
                 program="", argv=None, report=None, where="program"):
        self.trace_path = trace_path
        self.nan_check = nan_check
        self.max_record_mib = max_record_mib
        self.max_bytes = int(max_record_mib * (1 << 20))
        self.always_write = always_write
        self.checksums = checksums
        self.program = program
        self.argv = list(argv or [])
        self.report = report      # callable(path, recorder) after a trace is written, or None
        self.where = where        # "program" (python -m) or "notebook"


def _make_modes(torch, recorder):
    """(direct mode object, stack mode object): the first is set as 1.13's C++-level mode (1.13
    stashes it while our handler runs; a later torch with that API gets the handler's own guard),
    the second is a public TorchDispatchMode."""
    from torch.utils._python_dispatch import TorchDispatchMode
    disable = torch._C._DisableTorchDispatch if hasattr(torch._C, "_DisableTorchDispatch") else None
    on_dispatch = recorder._on_dispatch

    from .compat import parse_version
    if parse_version(torch.__version__) < (2, 0):
        class DirectMode:
            # 1.13 stashes the mode while its handler runs (the op and the recorder's own ops inside
            # it do not come back here): no guard of ours is needed, and one cost ~2.4 us an op
            def __torch_dispatch__(self, func, types, args=(), kwargs=None):
                return on_dispatch(func, args, kwargs or {})
    else:
        class DirectMode:
            def __torch_dispatch__(self, func, types, args=(), kwargs=None):
                guard = disable()
                try:
                    return on_dispatch(func, args, kwargs or {})
                finally:
                    del guard

    class StackMode(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            return on_dispatch(func, args, kwargs or {})

    return (DirectMode() if disable is not None else None), StackMode()


class Recorder:
    def __init__(self, torch, features, options):
        self.torch = torch
        self.features = features
        self.options = options
        self.Tensor = torch.Tensor
        self._grad_enabled = torch.is_grad_enabled
        self._inference_mode = getattr(torch, "is_inference_mode_enabled", lambda: False)
        self._disable = getattr(torch._C, "_DisableTorchDispatch", None)
        self._recording = False
        self._started = False
        self._opinfo = {}
        self._internal_errors = 0
        self._said_errors = set()
        self._frame_ids = {}      # (code, line) -> index into _frame_table (ops keep the int)
        self._frame_table = []
        self._node_saved_attrs = {}
        self._result_saves = {}
        self._next_gidx = 0
        self._next_node = 1
        self._next_saved = 0
        # storages: base address -> internal id; id -> (shape, dtype) of the first tensor seen on it
        self._sids = {}
        self._tcache = {}         # id(tensor) -> (weakref, data_ptr, shape, dtype, device, storage id)
        self._slabel = {}
        self._next_sid = 1
        # modules
        self._mnames = weakref.WeakKeyDictionary()
        self._roots = weakref.WeakSet()
        self._held_roots = []
        self._mstack = []
        self._module = ""
        # backward
        self._bw_depth = 0
        self._thread_nodes = {}
        self._deferred = {}
        self._probing = None
        self._backward_calls = 0
        self._skipped_nograd = 0  # no-grad ops outside backward that wrote nothing autograd saved
        self._backward_ok = 0
        # The gap: between a backward's end and the next module call, while no graph keeps saved
        # tensors, the dispatch mode is off (the optimizer's no-grad updates never enter Python)
        self._live = [0]          # saved-tensor boxes alive (any graph's)
        self._off = False         # the dispatch mode is off now (in a gap)
        self._bw_quiet = False    # in a backward whose dispatch mode is on only inside hooked nodes
        self._node_depth = 0
        self._gap_ok = True       # False once a program did autograd work in a gap (never off again)
        self._first_pack_in_module = None  # this window's first save happened inside a module call
        self._gap_gidx = None     # this window began after a gap: the index kept for what it wrote
        # NaN search
        self._nan_active = bool(options.nan_check)
        self._nan_pending = []
        self._defer_nan = False  # True: queue CPU checks too, as a device's (tests use it)
        # results
        self.traces_written = []
        self._snapshot = None
        self._window = 0
        self._reset_window()

    # ------------------------------------------------------------------ window
    def _reset_window(self):
        self._window += 1
        # Storages autograd saved a tensor of, in this window and the one before (a graph kept with
        # retain_graph=True reaches back one window): only a no-grad write to one of them can matter.
        self._saved_keys_prev = getattr(self, "_saved_keys", set())
        self._saved_keys = set()
        self._saved_dropped = 0
        # storage labels of storages no address maps to any more (a long run makes new ones each step)
        if len(getattr(self, "_slabel", ())) > 4 * len(getattr(self, "_sids", ())) + 1024:
            live = set(self._sids.values())
            self._slabel = {k: v for k, v in self._slabel.items() if k in live}
        if len(getattr(self, "_sids", ())) > 1 << 20:
            self._sids.clear()
            self._slabel.clear()
        if len(getattr(self, "_tcache", ())) > 4096:
            self._tcache = {k: c for k, c in self._tcache.items() if c[0]() is not None}
        self._ops = []
        self._saved = []
        self._unpacks = []
        self._stale_before = []
        self._stale_unpack = []
        self._pending_packs = []
        self._pending_ops = []
        self._pending_written = []
        self._last = None
        self._bytes = 0
        self._ops_seen = 0
        self._ops_dropped = 0
        self._first_dropped = -1
        self._nan_op = None          # OpRec where NaN/Inf first appeared in this window
        self._nonfinite = set()      # (storage, version) of outputs that held an expected Inf
        self._ck_cache = {}          # (TensorImpl address, version) -> (tensor, checksum)
        self._nan_has_nan = False
        self._inplace_error = None
        self._loss = None
        self._silent = []
        self._first_pack_in_module = None
        self._gap_gidx = None
        self._gap_frame = None

    def _window_state(self, snapshot=False):
        """What a trace of this window needs. A snapshot (--always-write, written at exit) holds the
        modules and their gradient rows as they are now: by exit the program may have dropped them."""
        from . import trace
        roots = list(self._roots) or self._held_roots
        return {"roots": roots, "gradients": trace.gradient_rows(self, roots) if snapshot else None,
                "ops": self._ops, "saved": self._saved, "unpacks": self._unpacks,
                "stale_before": self._stale_before, "stale_unpack": self._stale_unpack,
                "ops_seen": self._ops_seen, "ops_dropped": self._ops_dropped, "first_dropped": self._first_dropped,
                "saved_dropped": self._saved_dropped,
                "bytes": self._bytes, "nan_op": self._nan_op, "loss": self._loss, "silent": self._silent}

    # ------------------------------------------------------------------ start / stop
    def start(self):
        if self._started:
            return
        torch = self.torch
        frames.add_skipped_dir(os.path.dirname(torch.__file__))
        frames.add_skipped_dir(os.path.dirname(os.path.abspath(__file__)))
        self._hooks_ctx = torch.autograd.graph.saved_tensors_hooks(self._pack, self._unpack)
        self._hooks_ctx.__enter__()
        M = torch.nn.modules.module
        self._h_pre = M.register_module_forward_pre_hook(self._module_pre)
        if self.features.forward_hook_always_call:
            self._h_post = M.register_module_forward_hook(self._module_post, always_call=True)
        else:
            self._h_post = M.register_module_forward_hook(self._module_post)
        self._orig_backward = torch.autograd.backward
        self._orig_grad = torch.autograd.grad
        recorder = self
        orig_backward, orig_grad = self._orig_backward, self._orig_grad

        def backward(tensors, *args, **kwargs):
            return recorder._run_backward(orig_backward, tensors, args, kwargs, tensors, 2)

        def grad(outputs, *args, **kwargs):
            return recorder._run_backward(orig_grad, outputs, args, kwargs, outputs, 3)

        for new, old in ((backward, orig_backward), (grad, orig_grad)):
            new.__name__, new.__qualname__, new.__doc__ = old.__name__, old.__qualname__, old.__doc__
            new.__wrapped__ = old
        torch.autograd.backward = backward
        torch.autograd.grad = grad
        direct, stack = _make_modes(torch, self)
        C = torch._C
        self._direct = False
        if (self.features.direct_dispatch_mode and direct is not None
                and C._len_torch_dispatch_stack() == 0):
            C._set_torch_dispatch_mode(direct)
            self._direct = True
        else:
            stack.__enter__()
        self._mode = direct if self._direct else stack
        self._recording = True
        self._started = True

    def stop(self):
        if not self._started:
            return
        torch = self.torch
        self._recording = False
        self._off = False
        if self._direct:
            torch._C._set_torch_dispatch_mode(None)
        else:
            self._mode.__exit__(None, None, None)
        torch.autograd.backward = self._orig_backward
        torch.autograd.grad = self._orig_grad
        self._h_pre.remove()
        self._h_post.remove()
        self._hooks_ctx.__exit__(None, None, None)
        self._started = False

    # ------------------------------------------------------------------ the gap
    def _leave_mode(self):
        """After a backward whose graph is gone (no saved tensor of any graph alive) in a program whose
        steps start with a module call: no op until the next module call can make a node, save a
        tensor or write one a graph saved, so none needs Python. The mode comes back at the next
        module call (_module_pre), save (_pack) or backward (_begin_backward). What the gap may hide
        is a NaN/Inf the optimizer (or the program) writes into a parameter: the NaN search finds
        it at the first forward op that reads it (_found_nan names the write in the gap)."""
        self.torch._C._set_torch_dispatch_mode(None)
        self._off = True

    def _enter_mode(self):
        self._off = False
        if self._started and self._direct:
            self.torch._C._set_torch_dispatch_mode(self._mode)

    # ------------------------------------------------------------------ helpers
    def _quiet(self):
        """An object that keeps the recorder's own ops out of the dispatch mode while it lives (a RAII
        guard: callers hold it in a local and `del` it in `finally`)."""
        return self._disable() if self._disable is not None else None

    def _storage(self, t, fresh):
        """The recorder's id of the storage under `t` (views share it); 0 for none. Keyed by the
        storage's base address; an op's fresh result takes a new id even at a reused address."""
        try:
            ptr = t.data_ptr()
            if not ptr:
                return 0
            key = ptr - t.storage_offset() * t.element_size()
        except Exception:
            return 0  # sparse, nested, meta: no single storage
        if not fresh:
            sid = self._sids.get(key)
            if sid is not None:
                return sid
        sid = self._next_sid
        self._next_sid += 1
        self._sids[key] = sid
        try:
            self._slabel[sid] = (tuple(t.shape), t.dtype)
        except Exception:
            self._slabel[sid] = ((), t.dtype)
        return sid

    def _tinfo(self, t, written, fresh=False, bump=False):
        """A tensor info tuple (records.SHAPE, ...): plain values, so the garbage collector soon stops
        tracking it. `bump`: the op writes it; its version after is read back by _flush. What does
        not change for a tensor object (shape, dtype, device, storage) is cached by id while the
        object lives and its data pointer stays (parameters and optimizer states come every step)."""
        try:
            v = t._version
        except Exception:
            v = -1  # an inference tensor: no version counter
        c = self._tcache.get(id(t))
        if c is not None and not fresh and c[0]() is t:
            try:
                ptr = t.data_ptr()
            except Exception:
                ptr = None
            if ptr == c[1]:
                return (c[2], c[3], c[4], c[5], v, v + 1 if bump and v >= 0 else v, written, False, None)
        try:
            shape = tuple(t.shape)
        except Exception:
            shape = ()  # a nested tensor: no single shape
        sid = self._storage(t, fresh)
        try:
            ptr = t.data_ptr()
            self._tcache[id(t)] = (weakref.ref(t), ptr, shape, t.dtype, t.device, sid)
        except Exception:
            pass
        return (shape, t.dtype, t.device, sid, v, v + 1 if bump and v >= 0 else v, written, False, None)

    def _keep(self, op, force=False):
        self._ops_seen += 1
        cost = R.OP_BYTES + R.TENSOR_BYTES * (len(op.inputs) + len(op.outputs))
        if op.frame is not None:
            cost += R.SOURCE_BYTES
        limit = self.options.max_bytes
        if self._bytes + cost > limit and not force:
            # writes and backward nodes (what diagnoses need) are kept up to four times the bound
            if not (op.writes or op.is_node) or self._bytes + cost > 4 * limit:
                self._ops_dropped += 1
                if self._first_dropped < 0:
                    self._first_dropped = len(self._ops)
                return False
        self._bytes += cost
        self._ops.append(op)
        return True

    def _gidx(self):
        g = self._next_gidx
        self._next_gidx = g + 1
        return g

    def _stamp(self, node):
        md = node.metadata
        st = md.get(KEY)
        if st is None:
            if self.features.sequence_nr:
                nid = node._sequence_nr()
            else:
                nid = self._next_node
                self._next_node += 1
            st = [nid, -1, "", None, "", node.name(), False]
            md[KEY] = st
        return st

    def _result_save_count(self, node, info, inplace_view):
        tp = type(node)
        key = (tp, info.ret_names)
        n = self._result_saves.get(key)
        if n is None:
            names = {"result"} | {"result%d" % i for i in range(8)} | set(info.ret_names)
            n = sum(1 for a in dir(tp) if a.startswith("_raw_saved_") and a[11:] in names)
            self._result_saves[key] = n
        if inplace_view and not n and not info.overwrites:
            n = 1  # an in-place op on a view: its node hides inside CopySlices; allow one result save
        return n

    def _saved_attrs(self, node):
        tp = type(node)
        names = self._node_saved_attrs.get(tp)
        if names is None:
            names = tuple("_saved_" + a[11:] for a in dir(tp) if a.startswith("_raw_saved_"))
            self._node_saved_attrs[tp] = names
        return names

    def _flush(self):
        """Reads what an op's autograd kernel did after the op returned: the versions its in-place
        writes reached, and the node it created."""
        if self._pending_written:
            for op, output, i, t in self._pending_written:
                try:
                    v = t._version
                except Exception:
                    continue
                if (op.outputs if output else op.inputs)[i][R.VERSION_AFTER] != v:
                    _patch(op, output, i, R.VERSION_AFTER, v)
            self._pending_written = []
        if self._pending_ops:
            for op, outs, info in self._pending_ops:
                self._link(op, outs, info)
            self._pending_ops = []

    def _link(self, op, outs, info):
        node = None
        inplace_view = False
        for ref in outs:
            o = ref()
            if o is not None and o.requires_grad:
                if op.writes and o._is_view():
                    base = o._base
                    node = base.grad_fn if base is not None else o.grad_fn
                    inplace_view = True
                else:
                    node = o.grad_fn
                break
        if node is None:
            return
        st = self._stamp(node)
        if st[ST_OP] < 0:
            st[ST_OP] = op.gidx
            st[ST_MODULE] = op.module
            st[ST_FRAME] = op.frame
            st[ST_OPNAME] = op.name
        elif st[ST_OP] != op.gidx:
            return  # a node an earlier op made (the op returned an existing tensor)
        op.seq = st[ST_ID]
        op.node_name = st[ST_NAME]
        last = self._last
        if last is not None and last.op is op:
            last.remaining = self._result_save_count(node, info, inplace_view)

    # ------------------------------------------------------------------ ops
    def _on_dispatch(self, func, args, kwargs):
        """Runs one aten op and records it. The op always runs as the program asked; a failure of the
        recorder's own bookkeeping costs that op's record, never the program. (The hot path: one
        function, no helper calls but _tinfo, for the 5-15 us an op may cost on 1.13.)"""
        if not self._recording:
            return func(*args, **kwargs)
        info = self._opinfo.get(id(func))  # OpOverload's __hash__ is a Python function; id() is not
        if info is None:
            try:
                info = self._opinfo[id(func)] = _OpInfo(func)
            except Exception:
                return func(*args, **kwargs)
        if self._bw_depth and info.inert and not self._grad_enabled():
            # a view or an empty tensor in backward: nothing to record
            out = info.call(*args, **kwargs)
            if info.returns_tensor and isinstance(out, (bool, int, float, complex)):
                out = self._rewrap(info, args, kwargs, out)
            return out
        Tensor = self.Tensor
        if self._bw_depth == 0 and not self._grad_enabled() and not self._writes_saved(info, args, kwargs, Tensor):
            # No-grad work outside backward (an optimizer's updates, a no-grad fill) makes no node and saves
            # nothing: unless it writes a storage autograd saved, no diagnosis can need it (the optimizer's
            # updates of its moments and temporaries, ~90 of a small MLP's ~180 ops a step, are not kept).
            self._skipped_nograd += 1
            out = info.call(*args, **kwargs)
            if info.returns_tensor and isinstance(out, (bool, int, float, complex)):
                out = self._rewrap(info, args, kwargs, out)
            return out
        tinfo = self._tinfo
        op = None
        try:
            if self._pending_ops or self._pending_written:
                self._flush()
            backward = self._bw_depth > 0
            if backward:
                stack = self._thread_nodes.get(threading.get_ident())
                cur = stack[-1] if stack else None
                depth = 1 if cur is not None else 0
                module = cur.module if cur is not None else ""
                frame = None
                grad = False
            else:
                depth = 0
                module = self._module
                frame = frames.capture()
                if frame is not None:
                    fid = self._frame_ids.get(frame)
                    if fid is None:
                        fid = self._frame_ids[frame] = len(self._frame_table)
                        self._frame_table.append(frame)
                    frame = fid
                grad = self._grad_enabled()
            gidx = self._next_gidx
            self._next_gidx = gidx + 1
            op = OpRec(gidx, info.name, "backward" if backward else "forward", False, depth, module, frame)
            if self._pending_packs:
                for p in self._pending_packs:
                    p.guess_op = gidx
                self._pending_packs = []
            self._last = None
            ins = []
            written = None
            wflags = info.arg_writes
            nw = len(wflags)
            for i, a in enumerate(args):
                if isinstance(a, Tensor):
                    if i < nw and wflags[i]:
                        if written is None:
                            written = []
                        written.append((len(ins), a))
                        ins.append(tinfo(a, True, bump=True))
                    else:
                        ins.append(tinfo(a, False))
                elif isinstance(a, (list, tuple)):
                    for x in a:
                        if isinstance(x, Tensor):
                            ins.append(tinfo(x, False))
            if kwargs:
                for k, a in kwargs.items():
                    if isinstance(a, Tensor):
                        if info.kw_writes.get(k, False):
                            if written is None:
                                written = []
                            written.append((len(ins), a))
                            ins.append(tinfo(a, True, bump=True))
                        else:
                            ins.append(tinfo(a, False))
                    elif isinstance(a, (list, tuple)):
                        for x in a:
                            if isinstance(x, Tensor):
                                ins.append(tinfo(x, False))
            op.inputs = tuple(ins)
        except Exception as exc:
            op = None
            self._internal_error(info.name, exc)

        out = info.call(*args, **kwargs)
        if info.returns_tensor and isinstance(out, (bool, int, float, complex)):
            out = self._rewrap(info, args, kwargs, out)
        if op is None:
            return out

        try:
            outs = out if isinstance(out, (tuple, list)) else (out,)
            fresh = info.ret_fresh
            rw = info.ret_writes
            alias = info.ret_alias_arg
            single_list = isinstance(out, list)
            oinfos = []
            out_tensors = []
            pending = self._pending_written
            for j, o in enumerate(outs):
                if isinstance(o, Tensor):
                    r = 0 if single_list else j
                    w = r < len(rw) and rw[r]
                    if w:
                        pending.append((op, True, len(oinfos), o))
                    ti = tinfo(o, False, r < len(fresh) and fresh[r], bump=w)
                    k = alias[r] if r < len(alias) else -1
                    if k >= 0 and k < len(args) and isinstance(args[k], Tensor):
                        try:
                            v = args[k]._version
                            ti = ti[:R.VERSION_BEFORE] + (v, v) + ti[R.WRITTEN:]
                        except Exception:
                            pass
                    oinfos.append(ti)
                    out_tensors.append(o)
            op.outputs = tuple(oinfos)
            if written is not None:
                if info.changes_metadata:
                    for _, t in written:
                        self._tcache.pop(id(t), None)
                for i, t in written:
                    pending.append((op, False, i, t))  # the version after, read by _flush once bumped
                op.writes = True
                if self._ck_cache:
                    self._ck_cache = {}
            # NaN search: the forward ops run with grad enabled (the step, not the optimizer's no-grad
            # updates) and the aten ops backward nodes run, until the first NaN/Inf origin
            found = False
            if out_tensors and self._nan_active and not info.skip_nan and (depth == 1 if backward else grad):
                found = self._search_outputs(op, info, out_tensors, args, kwargs)
            # keep it (the bound: ops past it are counted as dropped; writes and backward nodes,
            # what diagnoses need, are kept up to four times the bound)
            self._ops_seen += 1
            cost = R.OP_BYTES + R.TENSOR_BYTES * (len(op.inputs) + len(oinfos))
            if frame is not None:
                cost += R.SOURCE_BYTES
            limit = self.options.max_bytes
            if self._bytes + cost <= limit or found or (op.writes and self._bytes + cost <= 4 * limit):
                self._bytes += cost
                self._ops.append(op)
            else:
                self._ops_dropped += 1
                if self._first_dropped < 0:
                    self._first_dropped = len(self._ops)
            if out_tensors and grad and not self._inference_mode():
                # Weak references: a result must leave the handler unshared. autograd's as_view()
                # reuses a view's TensorImpl only while nothing else holds it (else a shallow copy,
                # which the recorder would then not see get its node), and 1.13's detach of a held
                # inference-mode result fails ("Cannot set version_counter for inference tensor").
                # Only with grad enabled: no other op makes a node.
                refs = [weakref.ref(o) for o in out_tensors]
                self._pending_ops.append((op, refs, info))
                self._last = _LastOp(op, refs)
        except Exception as exc:
            self._internal_error(info.name, exc)
        return out

    def _writes_saved(self, info, args, kwargs, Tensor):
        """Whether the op writes a tensor whose storage autograd saved (this window or the one before)."""
        keys, prev = self._saved_keys, self._saved_keys_prev
        if not keys and not prev:
            return False
        wflags = info.arg_writes
        for i in range(min(len(wflags), len(args))):
            if wflags[i] and isinstance(args[i], Tensor):
                if self._saved_key_of(args[i], keys, prev):
                    return True
        if kwargs and info.kw_writes:
            for k, a in kwargs.items():
                if info.kw_writes.get(k, False) and isinstance(a, Tensor) and self._saved_key_of(a, keys, prev):
                    return True
        return False

    @staticmethod
    def _saved_key_of(t, keys, prev):
        try:
            key = t.data_ptr() - t.storage_offset() * t.element_size()
        except Exception:
            return True  # no single storage: record it, to be safe
        return key in keys or key in prev

    def _internal_error(self, where, exc):
        """The recorder's own failure: said once per place, counted, never raised into the program."""
        self._internal_errors += 1
        key = (where, type(exc).__name__)
        if key not in self._said_errors:
            self._said_errors.add(key)
            text = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
            if len(text) > 160:
                text = text[:157] + "..."
            _say("internal error while recording %s (%s: %s); that record is left out, the program goes on"
                 % (where, type(exc).__name__, text))

    def _rewrap(self, info, args, kwargs, out):
        """torch 1.13 hands back an op's result that is a wrapped number (a Python scalar autograd
        saved as a tensor, e.g. the 2 of `x * 2`) as a Python number when the op is called through
        its OpOverload; autograd then rejects it ("detach returned invalid type int"). The tensor
        method returns the tensor itself."""
        method = getattr(args[0], info.name.split("::", 1)[-1], None) if args else None
        if method is None:
            return out
        try:
            again = method(*args[1:], **kwargs)
        except Exception:
            return out
        return again if isinstance(again, self.Tensor) else out

    # ------------------------------------------------------------------ NaN search
    # As the engine's recorder (engine/inspect/steprecorder.cpp): an op's output holding NaN is an
    # origin; one holding only Inf is not when the op builds constants (a -inf mask: full, fill,
    # masked_fill) or an input already held non-finite values (the mask carried along). Outputs on
    # the CPU are checked at once (one sum; isfinite only when the sum is not finite); on a device
    # the checks are queued and read _NAN_BATCH at a time, so that no op waits for the device.
    def _search_outputs(self, op, info, outs, args, kwargs):
        torch = self.torch
        inputs = None
        strided = torch.strided
        for j, o in enumerate(outs):
            if not (o.is_floating_point() or o.is_complex()) or o.layout is not strided or o.is_nested \
                    or not o.numel():
                continue
            if self._defer_nan or o.device.type != "cpu":
                if inputs is None:
                    inputs = self._input_tensors(args, kwargs)
                self._nan_pending.append((op, j, info, torch.isfinite(o).all(), o.isnan().any(),
                                          [weakref.ref(t) for t in inputs]))
                if len(self._nan_pending) >= _NAN_BATCH:
                    self._check_nan_pending()
                continue
            kind = _nonfinite(torch, o)
            if kind is not None:
                if inputs is None:
                    inputs = self._input_tensors(args, kwargs)
                if self._judge(op, j, info, kind == "nan", inputs):
                    return True
        return False

    def _input_tensors(self, args, kwargs):
        """The op's tensor arguments, in the order of its input infos."""
        Tensor = self.Tensor
        tensors = []
        for a in list(args) + list(kwargs.values()):
            if isinstance(a, Tensor):
                tensors.append(a)
            elif isinstance(a, (list, tuple)):
                tensors.extend(x for x in a if isinstance(x, Tensor))
        return tensors

    def _judge(self, op, j, info, has_nan, inputs):
        """Output j held NaN or Inf: True when it is the origin (then recorded as such)."""
        _patch(op, True, j, R.NON_FINITE, True)
        oi = op.outputs[j]
        ins = op.inputs
        key = (oi[R.STORAGE], oi[R.VERSION_AFTER])
        if not has_nan:
            expected = info.makes_constants or any((ti[R.STORAGE], ti[R.VERSION_BEFORE]) in self._nonfinite
                                                   for ti in ins if ti[R.STORAGE])
            if not expected:
                for ti, t in zip(ins, inputs):
                    if ti[R.WRITTEN]:
                        continue  # an in-place op's own result: not what it read
                    t = t() if isinstance(t, weakref.ref) else t
                    if t is not None and (t.is_floating_point() or t.is_complex()) \
                            and t.layout is self.torch.strided and not t.is_nested and t.numel() \
                            and _nonfinite(self.torch, t) is not None:
                        expected = True
                        break
            if expected:
                self._nonfinite.add(key)
                return False
        self._found_nan(op, has_nan, inputs)
        return True

    def _check_nan_pending(self):
        pending, self._nan_pending = self._nan_pending, []
        if not pending or not self._nan_active:
            return
        torch = self.torch
        flags = torch.stack([p[3] for p in pending]).tolist()
        for p, finite in zip(pending, flags):
            if finite:
                continue
            op, j, info, _, has_nan, refs = p
            if self._judge(op, j, info, bool(has_nan), refs):
                if op not in self._ops:
                    self._ops.append(op)  # kept although past the bound: the diagnosis needs it
                    self._ops.sort(key=lambda o: o.gidx)
                return

    def _found_nan(self, op, has_nan, inputs):
        if self._gap_gidx is not None and op.phase == "forward":
            try:
                gap = self._gap_origin(op, inputs)
                if gap is not None:
                    op, has_nan = gap
                    inputs = ()
            except Exception as exc:
                self._internal_error("the NaN search", exc)
        self._nan_op = op
        self._held_roots = list(self._roots)  # the trace may be written at exit, the model gone
        self._nan_has_nan = has_nan
        self._nan_active = False
        self._nan_pending = []
        for i, (ti, t) in enumerate(zip(op.inputs, inputs)):
            t = t() if isinstance(t, weakref.ref) else t
            if t is None or not (t.is_floating_point() or t.is_complex()) or not t.numel():
                continue
            if ti[R.WRITTEN]:
                continue  # an in-place op: the values it read are gone
            try:
                x = t.detach().abs() if t.is_complex() else t.detach()
                _patch(op, False, i, R.RANGE, (float(x.min()), float(x.max())))
            except Exception:
                pass

    def _gap_origin(self, op, inputs):
        """The forward op where a NaN/Inf first showed, in a window after a gap (the mode was off
        from the last backward's end to this window's first module call): when it read a tensor
        already non-finite that no op of this window made (a parameter the optimizer wrote, or a
        tensor the program made in the gap), the origin is the gap. Returns that origin as an op
        record (first in the window, written input = the tensor, no source line: the gap's ops ran
        unrecorded; for a tensor that is no parameter, the line that called the module) and whether it
        holds NaN, or None."""
        made = set()
        for o in self._ops:
            if o is op:
                break
            for ti in o.outputs:
                made.add(ti[R.STORAGE])
            for ti in o.inputs:
                if ti[R.WRITTEN]:
                    made.add(ti[R.STORAGE])
        for ti, t in zip(op.inputs, inputs):
            t = t() if isinstance(t, weakref.ref) else t
            if t is None or ti[R.WRITTEN] or not ti[R.STORAGE] or ti[R.STORAGE] in made:
                continue
            if not (t.is_floating_point() or t.is_complex()) or t.layout is not self.torch.strided \
                    or t.is_nested or not t.numel():
                continue
            kind = _nonfinite(self.torch, t.detach())
            if kind is None:
                continue
            name = self._tensor_name(t)
            if name is not None:
                what = "write to %s between backward and forward (optimizer step or program code)" % name
                module = name.rsplit(".", 1)[0] if "." in name else ""
                frame = None  # the optimizer's step, or any line of the program: unknown
            else:
                what = "tensor made between backward and forward (program code, not recorded)"
                module = op.module
                frame = self._frame_index(self._gap_frame)  # where the program passed it in
            gap = OpRec(self._gap_gidx, what, "forward", False, 0, module, frame)
            v = ti[R.VERSION_BEFORE]
            x = t.detach().abs() if t.is_complex() else t.detach()
            gap.inputs = (ti[:R.VERSION_BEFORE] + (v, v, True, False, (float(x.min()), float(x.max()))),)
            gap.outputs = (ti[:R.VERSION_BEFORE] + (v, v, False, True, None),)
            gap.writes = True
            self._ops.insert(0, gap)
            self._ops_seen += 1
            self._bytes += R.OP_BYTES + 2 * R.TENSOR_BYTES
            return gap, kind == "nan"
        return None

    def _frame_index(self, frame):
        if frame is None:
            return None
        fid = self._frame_ids.get(frame)
        if fid is None:
            fid = self._frame_ids[frame] = len(self._frame_table)
            self._frame_table.append(frame)
        return fid

    def _tensor_name(self, t):
        """"layers.0.weight" for a parameter or buffer of the modules the program called, else None."""
        for root in list(self._roots):
            for n, p in root.named_parameters():
                if p is t or (p.data_ptr() == t.data_ptr() and p.shape == t.shape):
                    return n
            for n, b in root.named_buffers():
                if b is t or (b.data_ptr() == t.data_ptr() and b.shape == t.shape):
                    return n
        return None

    # ------------------------------------------------------------------ modules
    def _module_pre(self, module, inputs):
        if self._off:
            self._enter_mode()
            self._gap_gidx = self._gidx()  # for what the gap wrote, should the NaN search need it
            self._gap_frame = frames.capture()  # the program's line calling the module
        name = self._mnames.get(module)
        if name is None:
            if not self._mstack:  # a module called by the program: name it and its submodules
                self._roots.add(module)
                for n, m in module.named_modules():
                    self._mnames[m] = n
                name = ""
            else:
                parent = self._mstack[-1]
                name = (parent + "." if parent else "") + type(module).__name__
                self._mnames[module] = name
        self._mstack.append(name)
        self._module = name

    def _module_post(self, module, inputs, output):
        stack = self._mstack
        name = self._mnames.get(module)
        while stack:
            if stack.pop() == name:
                break
        self._module = stack[-1] if stack else ""

    # ------------------------------------------------------------------ saved tensors
    def _pack(self, t):
        if self._first_pack_in_module is None:
            if self._off:
                # autograd work in the gap, outside any module call: the op saving this ran unrecorded;
                # record from here on, and never leave the mode for this program again
                self._gap_ok = False
                self._enter_mode()
            self._first_pack_in_module = bool(self._mstack)
        info = SavedInfo()
        try:
            info.version = t._version
        except Exception:
            pass
        if self._recording:
            quiet = self._quiet()
            try:
                return self._pack_recorded(t, info)
            except Exception as exc:
                self._internal_error("a saved tensor", exc)
            finally:
                del quiet
        # (a detached alias: no reference cycle through the tensor's own grad_fn)
        return _Box(t.detach() if t.grad_fn is not None else t, info, False, self._live)

    def _pack_recorded(self, t, info):
        self._flush()
        gf = t.grad_fn
        output = False
        last = self._last
        if gf is not None and last is not None and last.remaining > 0:
            for ref in last.outs:
                if ref() is t:
                    output = True
                    last.remaining -= 1
                    break
        info.sid = self._next_saved
        self._next_saved += 1
        try:
            self._saved_keys.add(t.data_ptr() - t.storage_offset() * t.element_size())
        except Exception:
            pass
        info.window = self._window
        info.tensor = self._tinfo(t, False)
        info.version = info.tensor[R.VERSION_BEFORE]
        info.output_nr = t.output_nr
        if gf is not None:
            st = self._stamp(gf)
            info.pack_node = st[ST_ID]
            info.grad_fn = st[ST_NAME]
            info.produced_op = st[ST_OP]
            info.produced_op_name = st[ST_OPNAME]
        if output:
            info.guess_op = last.op.gidx
            info.is_output = True
        else:
            self._pending_packs.append(info)
        if self._bytes <= 4 * self.options.max_bytes:
            if self.options.checksums:
                info.checksum = self._checksum(t)
            self._saved.append(info)
            self._bytes += R.OP_BYTES + R.TENSOR_BYTES
        else:
            # a window past four times its bound (forwards without backward): the version check
            # goes on, the record does not
            self._saved_dropped += 1
        return _Box(t.detach() if output else t, info, not output, self._live)

    def _checksum(self, t):
        """A 0-dim tensor summing `t` (no device sync), or None. One per view and version while no op
        writes: the same activation saved by three matmuls is summed once."""
        torch = self.torch
        cache = self._ck_cache
        try:
            key = (t._cdata, t._version)
        except Exception:
            return None
        hit = cache.get(key)
        if hit is not None:
            return hit[1]
        tensor = t
        try:
            if t.layout is not torch.strided or t.is_nested:
                return None
            if t.is_complex():
                t = torch.view_as_real(t)
            if t.dtype in (torch.float16, torch.bfloat16):
                c = t.sum(dtype=torch.float32)
            elif t.is_floating_point():
                c = t.sum()
            else:
                c = t.sum(dtype=torch.int64)
        except Exception:
            return None
        if len(cache) >= _CHECKSUM_CACHE:
            del cache[next(iter(cache))]
        cache[key] = (tensor, c)  # the tensor is held so that its address is not reused meanwhile
        return c

    def _current_node(self):
        stack = self._thread_nodes.get(threading.get_ident())
        return stack[-1] if stack else None

    def _unpack(self, box):
        t = box.t
        info = box.info
        try:
            v = t._version
        except Exception:
            return t
        stale = v != info.version
        st = self._probing
        if st is not None:
            info.owner_node = st[ST_ID]
            info.owner_name = st[ST_NAME]
            info.owner_op = st[ST_OP]
            info.owner_op_name = st[ST_OPNAME]
            info.is_output = info.pack_node == st[ST_ID]
            if info.window != self._window:
                self._adopt(info)
            if stale:
                self._stale_before.append((info, v))
            return t
        cur = None
        if self._recording:
            quiet = self._quiet()
            try:
                self._flush()
                cur = self._current_node()
                if info.window != self._window:
                    self._adopt(info)
                ck = None
                if info.checksum is not None and not stale:
                    ck = self._checksum(t)
                if self._bytes <= 4 * self.options.max_bytes or stale:
                    self._unpacks.append(UnpackRec(info, cur.gidx if cur is not None else -1, v, ck))
                    self._bytes += R.OP_BYTES
                if stale:
                    self._stale_unpack.append((info, v))
            except Exception as exc:
                self._internal_error("an unpacked saved tensor", exc)
            finally:
                del quiet
        if stale:
            try:
                message = self._version_message(box, info, v, cur)
            except Exception as exc:
                self._internal_error("PyTorch's message", exc)
                message = ("one of the variables needed for gradient computation has been modified by an "
                           "inplace operation: is at version %d; expected version %d instead." % (v, info.version))
            self._inplace_error = message
            if cur is None or self.features.unpack_error_exact:
                raise RuntimeError(message)
            # 1.13 turns an exception raised here into "RuntimeError: ...\n\nAt: <traceback>";
            # the node's post hook raises it unchanged once the node has run.
            self._deferred.setdefault(threading.get_ident(), message)
        return t

    def _adopt(self, info):
        """A saved tensor from an earlier window (a retained graph) used in this one."""
        info.window = self._window
        self._saved.append(info)
        self._bytes += R.OP_BYTES + R.TENSOR_BYTES

    def _version_message(self, box, info, current, cur):
        """PyTorch's message for a stale saved tensor, built as torch/csrc/autograd/saved_variable.cpp
        builds it (SavedVariable::unpack) for a SavedVariable without hooks."""
        t = box.t
        output = info.is_output if info.owner_node >= 0 else not box.orig
        name = None
        nr = 0
        if output:
            name = info.owner_name or info.grad_fn or None
            nr = info.output_nr
        else:
            # saved as the original tensor: PyTorch names the tensor's grad_fn now (for a view whose
            # base was written since, a regenerated AsStridedBackward0), output number 0
            gf = t.grad_fn if box.orig else None
            if gf is not None:
                name = gf.name()
            elif not box.orig and info.grad_fn:
                name = info.grad_fn
            elif info.pack_node >= 0:
                name = info.owner_name or (cur.name if cur is not None else None)
        text = ("one of the variables needed for gradient computation has been modified by an inplace "
                "operation: [%s %s]" % (t.type(), list(t.shape)))
        if name:
            text += ", which is output %d of %s," % (nr, name)
        text += " is at version %d; expected version %d instead." % (current, info.version)
        if not self.torch.is_anomaly_enabled():
            text += (" Hint: enable anomaly detection to find the operation that failed to compute its "
                     "gradient, with torch.autograd.set_detect_anomaly(True).")
        else:
            text += (" Hint: the backtrace further above shows the operation that failed to compute its "
                     "gradient. The variable in question was changed in there or anywhere later. Good luck!")
        return text

    # ------------------------------------------------------------------ backward
    def _run_backward(self, orig, tensors, args, kwargs, roots, create_at):
        began = self._begin_backward(roots)
        if began and self._bw_depth == 1 and self._recording and self._direct:
            create = kwargs.get("create_graph", args[create_at] if len(args) > create_at else False)
            if not create:
                self._quiet_backward(roots)
        try:
            result = orig(tensors, *args, **kwargs)
        except Exception as exc:
            if began:
                self._end_backward(exc)
            raise exc.with_traceback(self._trim_traceback(exc.__traceback__))
        except BaseException:
            if began:
                self._bw_depth -= 1
                self._loud_backward()
            raise
        if began:
            self._end_backward(None)
        return result

    def _trim_traceback(self, tb):
        """The traceback without the recorder's own hook frames (PyTorch's error as PyTorch raises it)."""
        here = os.path.dirname(os.path.abspath(__file__))
        kept = []
        while tb is not None:
            if not os.path.abspath(tb.tb_frame.f_code.co_filename).startswith(here + os.sep):
                kept.append(tb)
            tb = tb.tb_next
        new = None
        for entry in reversed(kept):
            new = types.TracebackType(new, entry.tb_frame, entry.tb_lasti, entry.tb_lineno)
        return new

    def _roots_of(self, roots):
        Tensor = self.Tensor
        if isinstance(roots, Tensor):
            return [roots]
        try:
            return [r for r in roots if isinstance(r, Tensor)]
        except TypeError:
            return []

    def _begin_backward(self, roots):
        if not self._started:
            return False
        if self._off:  # a backward over a graph made in the gap (no module call, no saved tensor)
            self._gap_ok = False
            self._enter_mode()
        self._bw_depth += 1
        if self._bw_depth > 1 or not self._recording:
            return True
        quiet = self._quiet()
        try:
            self._flush()
            self._check_nan_pending()
            self._last = None
            self._pending_packs = []
            self._backward_calls += 1
            self._mstack = []
            self._module = ""
            tensors = self._roots_of(roots)
            if tensors and tensors[0].numel() == 1:
                self._loss = tensors[0].detach()
            self._ck_cache = {}  # unpack checksums are taken afresh
            self._walk_graph([t.grad_fn for t in tensors if t.grad_fn is not None])
        except Exception as exc:
            self._internal_error("the graph before backward", exc)
        finally:
            del quiet
        return True

    def _walk_graph(self, start):
        """Every node the backward may run: stamp it, hook it, and read its saved tensors (which
        names each saved tensor's node and checks its version)."""
        torch = self.torch
        seen = set()
        order = []
        todo = list(start)
        while todo:
            node = todo.pop()
            if id(node) in seen:
                continue
            seen.add(id(node))
            order.append(node)
            for nxt, _ in node.next_functions:
                if nxt is not None and id(nxt) not in seen:
                    todo.append(nxt)
        backward_fn = getattr(torch.autograd.function, "BackwardCFunction", None)
        for node in order:
            st = self._stamp(node)
            attrs = self._saved_attrs(node)
            custom = backward_fn is not None and isinstance(node, backward_fn)
            if not st[ST_HOOKED] and (attrs or custom or st[ST_NAME] not in _PASS_NODES):
                st[ST_HOOKED] = True
                node.register_prehook(_NodeHook(self, st, True))
                node.register_hook(_NodeHook(self, st, False))
            if not attrs and not custom:
                continue
            self._probing = st
            try:
                for name in attrs:
                    try:
                        getattr(node, name)
                    except Exception:
                        pass  # freed, or saved before recording began (PyTorch's own check raised)
                if custom:
                    try:
                        node.saved_tensors
                    except Exception:
                        pass
            finally:
                self._probing = None

    def _quiet_backward(self, roots):
        """A backward on the CPU without create_graph: the dispatch mode is off outside the hooked
        nodes (what runs there is the engine's seed gradient, a leaf's accumulation and the nodes that
        only hand gradients on, _PASS_NODES: ~20 of the bench MLP's ~80 backward dispatches), on
        from a hooked node's pre hook to its post hook."""
        try:
            if not all(t.device.type == "cpu" for t in self._roots_of(roots)):
                return  # device nodes run on the engine's device threads (their own mode state)
        except Exception:
            return
        self._node_depth = 0
        self._bw_quiet = True
        self.torch._C._set_torch_dispatch_mode(None)

    def _loud_backward(self):
        if self._bw_quiet and self._bw_depth == 0:
            self._bw_quiet = False
            if self._started and not self._off:
                self.torch._C._set_torch_dispatch_mode(self._mode)

    def _node_pre(self, st, grad_outputs):
        if self._bw_quiet:
            self._node_depth += 1
            if self._node_depth == 1:
                self.torch._C._set_torch_dispatch_mode(self._mode)
        if not self._recording:
            return
        quiet = self._quiet()
        try:
            self._flush()
            op = OpRec(self._gidx(), st[ST_NAME], "backward", True, 0, st[ST_MODULE], st[ST_FRAME])
            op.seq = st[ST_ID]
            Tensor = self.Tensor
            op.inputs = tuple(self._tinfo(g, False) for g in grad_outputs if isinstance(g, Tensor))
            self._keep(op)
            self._thread_nodes.setdefault(threading.get_ident(), []).append(op)
        except Exception as exc:
            self._internal_error(st[ST_NAME], exc)
        finally:
            del quiet

    def _node_post(self, st, grad_inputs, grad_outputs):
        ident = threading.get_ident()
        if self._recording:
            quiet = self._quiet()
            try:
                stack = self._thread_nodes.get(ident)
                if stack and stack[-1].seq == st[ST_ID]:
                    op = stack.pop()
                    self._flush()
                    Tensor = self.Tensor
                    op.outputs = tuple(self._tinfo(g, False) for g in grad_inputs if isinstance(g, Tensor))
            except Exception as exc:
                self._internal_error(st[ST_NAME], exc)
            finally:
                del quiet
        if self._bw_quiet:
            self._node_depth -= 1
            if self._node_depth == 0:
                self.torch._C._set_torch_dispatch_mode(None)
        message = self._deferred.pop(ident, None)
        if message is not None:
            raise RuntimeError(message)

    def _end_backward(self, exc):
        self._bw_depth -= 1
        self._loud_backward()
        if self._bw_depth > 0 or not self._recording:
            return
        quiet = self._quiet()
        try:
            self._flush()
            self._check_nan_pending()
            self._compare_checksums()
            self._thread_nodes.clear()
            self._deferred.clear()
            if exc is None:
                self._backward_ok += 1
                outcome = None
                if self._nan_op is not None:
                    outcome = "nan"
                elif self._silent:
                    outcome = "ok"
                if outcome is not None:
                    self.write_trace(outcome, "", "", True)  # nothing raised: the NaN's phase is in its op
                elif self.options.always_write:
                    self._snapshot = self._window_state(snapshot=True)
            else:
                text = str(exc)
                inplace = (self._inplace_error is not None and text == self._inplace_error) or \
                    "modified by an inplace operation" in text
                self.write_trace("inplace_error" if inplace else "error", text, "backward", False)
        except Exception as error:
            self._internal_error("the end of backward", error)
        finally:
            ended_in_module = self._first_pack_in_module
            self._reset_window()
            del quiet
        if ended_in_module and self._gap_ok and self._direct and not self._live[0]:
            self._leave_mode()

    def _compare_checksums(self):
        """Saved tensors whose checksum at unpack differs from the one at save while the version did
        not move: silent mutations. CPU checksums are read one by one (no sync); device ones in one
        transfer."""
        torch = self.torch
        pairs = [u for u in self._unpacks if u.checksum is not None and u.saved.checksum is not None]
        if not pairs:
            return
        try:
            if all(u.checksum.device.type == "cpu" and u.saved.checksum.device.type == "cpu" for u in pairs):
                changed = []
                for u in pairs:
                    a, b = u.saved.checksum.item(), u.checksum.item()
                    changed.append(a != b and not (a != a and b != b))
            else:
                a = torch.stack([u.saved.checksum.to("cpu", torch.float64) for u in pairs])
                b = torch.stack([u.checksum.to("cpu", torch.float64) for u in pairs])
                changed = ((a != b) & ~(a.isnan() & b.isnan())).tolist()
        except Exception:
            return
        for u, c in zip(pairs, changed):
            if c:
                u.checksum_changed = True
                if u.saved not in self._silent:
                    self._silent.append(u.saved)
            u.checksum = None

    # ------------------------------------------------------------------ trace
    def write_trace(self, outcome, pytorch_error, failed_in, backward_succeeded, state=None):
        from . import trace
        self._flush()
        self._check_nan_pending()
        state = state or self._window_state()
        path = self.options.trace_path
        try:
            trace.write(path, self, state, outcome, pytorch_error, failed_in, backward_succeeded)
        except OSError as exc:
            _say("could not write the trace to %s: %s" % (path, exc))
            return None
        except Exception as exc:
            self._internal_error("the trace", exc)
            return None
        self.traces_written.append(path)
        if self.options.report is not None:
            self.options.report(path, self, state, self._summary(outcome, state))
        return path

    def _summary(self, outcome, state):
        """What happened, in words, for the line that says where the trace is."""
        nan_op = state["nan_op"]
        if outcome == "inplace_error":
            return "backward failed with PyTorch's in-place error"
        if outcome == "nan":
            return "%s first appeared at %s (%s)" % ("NaN" if self._nan_has_nan else "Inf",
                                                      nan_op.name if nan_op is not None else "?",
                                                      nan_op.phase if nan_op is not None else "?")
        if outcome == "error":
            return "backward failed"
        if state["silent"]:
            return "a saved tensor changed without a version bump (a write through .data or a custom kernel)"
        return "the last completed step"

    def finish(self):
        """The program (or the recording block) ended: write what is still owed, say what happened."""
        if not self._started:
            return
        quiet = self._quiet()
        try:
            self._flush()
            self._check_nan_pending()
            if self._nan_op is not None:
                self.write_trace("nan", "", "", False)
                self._reset_window()
            elif self.options.always_write and self._snapshot is not None:
                self.write_trace("ok", "", "", True, self._snapshot)
                self._snapshot = None
        finally:
            del quiet


class _NodeHook:
    """A pre or post hook on one autograd node (a callable object rather than a closure)."""
    __slots__ = ("recorder", "stamp", "pre")

    def __init__(self, recorder, stamp, pre):
        self.recorder = recorder
        self.stamp = stamp
        self.pre = pre

    def __call__(self, *args):
        if self.pre:
            return self.recorder._node_pre(self.stamp, args[0])
        return self.recorder._node_post(self.stamp, args[0], args[1])


def _nonfinite(torch, t):
    """None when the CPU tensor `t` holds only finite values, else "nan" or "inf". One sum in the
    common case: on 1.13's CPU, isfinite/isnan + any cost ~17x a sum (1.7 ms for 786k floats); a
    sum that is not finite is confirmed by amax/amin, which propagate NaN."""
    if t.is_complex():
        t = torch.view_as_real(t)
    s = t.sum().item()
    if s - s == 0:
        return None
    hi = t.amax().item()
    if hi != hi:
        return "nan"
    lo = t.amin().item()
    if hi == float("inf") or lo == float("-inf"):
        return "inf"
    return None  # finite values whose sum overflowed


def _patch(op, outputs, i, field, value):
    """Sets one field of an op's i-th input or output info (tuples: rebuilt; rare)."""
    infos = list(op.outputs if outputs else op.inputs)
    info = list(infos[i])
    info[field] = value
    infos[i] = tuple(info)
    if outputs:
        op.outputs = tuple(infos)
    else:
        op.inputs = tuple(infos)


def _say(text):
    sys.stderr.write("tunebench_record: %s\n" % text)
    sys.stderr.flush()
