"""Writes a recorder's window as a trace file (docs/trace-format.md, version 1): JSON Lines, a header,
then `storage`, `op`, `saved` and `unpack` records, then one `end` record. Written beside the target
and renamed into place, so a reader never sees half a file."""
import datetime
import gc
import json
import math
import os
import platform
import tempfile

from . import __version__
from . import frames
from . import records as R

FORMAT = "tunebench-trace"
VERSION = 1


def _number(v):
    """NaN and Inf are not JSON: as strings, as the engine's JSON output writes them."""
    if v is None:
        return None
    v = float(v)
    if math.isnan(v):
        return "nan"
    if math.isinf(v):
        return "inf" if v > 0 else "-inf"
    return v


def _dtype(dtype):
    text = str(dtype)
    return text[6:] if text.startswith("torch.") else text


class _Storages:
    """Dense storage ids (1, 2, ...) in the order the file first mentions them."""

    def __init__(self):
        self.ids = {}
        self.order = []

    def map(self, internal):
        if not internal:
            return 0
        sid = self.ids.get(internal)
        if sid is None:
            sid = self.ids[internal] = len(self.order) + 1
            self.order.append(internal)
        return sid


def _tensor(ti, storages, with_range=False, saved_version=None):
    d = {"shape": list(ti[R.SHAPE]), "dtype": _dtype(ti[R.DTYPE]), "device": str(ti[R.DEVICE]),
         "storage": storages.map(ti[R.STORAGE]), "version_before": ti[R.VERSION_BEFORE],
         "version_after": ti[R.VERSION_AFTER], "written": bool(ti[R.WRITTEN]), "non_finite": bool(ti[R.NON_FINITE])}
    if with_range and ti[R.RANGE] is not None:
        d["min"] = _number(ti[R.RANGE][0])
        d["max"] = _number(ti[R.RANGE][1])
    return d


def _storage_names(recorder, roots):
    """Internal storage id -> "layers.0.attention.cache_k" for the parameters, buffers and plain
    tensor attributes of the modules the program called."""
    torch = recorder.torch
    names = {}

    def note(name, t):
        try:
            ptr = t.data_ptr()
            if not ptr:
                return
            key = ptr - t.storage_offset() * t.element_size()
        except Exception:
            return
        sid = recorder._sids.get(key)
        if sid is not None and sid not in names:
            names[sid] = name

    for root in roots:
        try:
            for name, p in root.named_parameters():
                note(name, p)
            for name, b in root.named_buffers():
                note(name, b)
            for mname, m in root.named_modules():
                for k, v in vars(m).items():
                    if isinstance(v, torch.Tensor) and not isinstance(v, torch.nn.Parameter):
                        note(mname + "." + k if mname else k, v)
        except Exception:
            continue
    return names


def gradient_rows(recorder, roots):
    """One row per parameter of the called modules (the optimizer columns are filled when written)."""
    torch = recorder.torch
    rows = []
    seen = set()
    for root in roots:
        try:
            params = list(root.named_parameters())
        except Exception:
            continue
        for name, p in params:
            if id(p) in seen:
                continue
            seen.add(id(p))
            g = p.grad
            norm = 0.0
            if g is not None:
                try:
                    with torch.no_grad():
                        norm = _number(g.detach().double().norm())
                except Exception:
                    norm = 0.0
            rows.append({"name": name, "shape": list(p.shape), "device": str(p.device),
                         "requires_grad": bool(p.requires_grad), "has_grad": g is not None, "grad_norm": norm,
                         "in_optimizer": False, "optimizer_known": False, "_param": id(p)})
    return rows


def _gradients(recorder, state):
    torch = recorder.torch
    rows = state.get("gradients")
    if rows is None:
        rows = gradient_rows(recorder, state["roots"])
    in_opt = set()
    optimizers = []
    try:
        Optimizer = torch.optim.Optimizer
        # type(), not isinstance(): isinstance reads __class__, which some objects warn about
        optimizers = [o for o in gc.get_objects() if issubclass(type(o), Optimizer)]
    except Exception:
        pass
    for o in optimizers:
        for group in o.param_groups:
            for p in group.get("params", ()):
                in_opt.add(id(p))
    out = []
    for row in rows:
        row = dict(row)
        pid = row.pop("_param")
        row["in_optimizer"] = pid in in_opt
        row["optimizer_known"] = bool(optimizers)
        out.append(row)
    return out


def build(recorder, state, outcome, pytorch_error, failed_in, backward_succeeded):
    """The trace's lines, as JSON-ready dicts (header first, end last)."""
    torch = recorder.torch
    opts = recorder.options
    ops = state["ops"]
    storages = _Storages()
    index = {op.gidx: i for i, op in enumerate(ops)}

    op_lines = []
    nan_op = state["nan_op"]
    for i, op in enumerate(ops):
        is_nan = nan_op is op
        d = {"kind": "op", "index": i, "name": op.name, "phase": op.phase, "backward_node_op": op.is_node,
             "depth": op.depth, "seq": op.seq, "module": op.module, "backward_node": op.node_name,
             "writes_input": op.writes,
             "inputs": [_tensor(t, storages, with_range=is_nan) for t in op.inputs],
             "outputs": [_tensor(t, storages) for t in op.outputs]}
        source = frames.resolve(recorder._frame_table[op.frame]) if op.frame is not None else None
        if source is not None:
            d["source"] = source
        op_lines.append(d)

    saved = state["saved"]
    saved_ids = {}
    saved_lines = []
    for info in saved:
        if id(info) in saved_ids:
            continue
        sid = saved_ids[id(info)] = len(saved_lines)
        by = info.owner_op if info.owner_node >= 0 else info.guess_op
        by_index = index.get(by, -1)
        by_name = info.owner_op_name if info.owner_node >= 0 else (ops[by_index].name if by_index >= 0 else "")
        node = info.owner_name
        if not node and by_index >= 0:
            node = ops[by_index].node_name
        tensor = _tensor(info.tensor, storages)
        tensor["version_after"] = -1
        produced = index.get(info.produced_op, -1) if info.produced_op >= 0 else -1
        produced_name = info.produced_op_name if info.produced_op >= 0 else ""
        if produced < 0 and by_index >= 0:
            produced, produced_name = _producer(ops, by_index, info.tensor)
        saved_lines.append({"kind": "saved", "id": sid, "tensor": tensor, "saved_by_op": by_index,
                            "saved_by_op_name": by_name, "backward_node": node, "produced_by_op": produced,
                            "produced_by_op_name": produced_name, "grad_fn": info.grad_fn,
                            "saved_version": info.version})

    unpack_lines = []
    for u in state["unpacks"]:
        sid = saved_ids.get(id(u.saved))
        if sid is None:
            continue
        unpack_lines.append({"kind": "unpack", "saved": sid, "op": index.get(u.op, -1), "version": u.version,
                             "checksum_changed": bool(u.checksum_changed)})

    def stale(pairs):
        out = []
        for info, current in pairs:
            sid = saved_ids.get(id(info))
            if sid is not None:
                out.append({"saved": sid, "saved_version": info.version, "current_version": current})
        return out

    names = _storage_names(recorder, state["roots"])
    first_seen = {}  # a label from the trace itself for a storage the recorder no longer labels
    for op in ops:
        for ti in op.inputs + op.outputs:
            first_seen.setdefault(ti[R.STORAGE], (ti[R.SHAPE], ti[R.DTYPE]))
    storage_lines = []
    for dense, internal in enumerate(storages.order, 1):
        shape, dtype = recorder._slabel.get(internal) or first_seen.get(internal, ((), None))
        d = {"kind": "storage", "id": dense, "label": "%s %s" % (list(shape), _dtype(dtype))}
        if internal in names:
            d["name"] = names[internal]
        storage_lines.append(d)

    loss = None
    if state["loss"] is not None:
        try:
            loss = _number(state["loss"].item())
        except Exception:
            loss = None
    dropped = ""
    if state.get("saved_dropped"):
        dropped = ("%d saved tensors past four times the %g MiB bound (forwards without backward) are not in "
                   "the trace; their versions were still checked. " % (state["saved_dropped"],
                                                                        opts.max_record_mib))
    if state["ops_dropped"]:
        dropped += ("%d of %d ops past the %g MiB bound (from trace position %d on): their tensors and sources "
                   "are not in the trace; in-place writes, backward nodes and saved tensors were kept up to "
                   "four times the bound"
                   % (state["ops_dropped"], state["ops_seen"], opts.max_record_mib, state["first_dropped"]))
    end = {"kind": "end", "outcome": outcome, "pytorch_error": pytorch_error or "", "failed_in": failed_in,
           "backward_succeeded": bool(backward_succeeded), "loss": loss,
           "stale_before_backward": stale(state["stale_before"]), "stale_at_unpack": stale(state["stale_unpack"]),
           "silent_mutations": [saved_ids[id(i)] for i in state["silent"] if id(i) in saved_ids],
           "nan_op": index.get(nan_op.gidx, -1) if nan_op is not None else -1,
           "gradients": _gradients(recorder, state),
           "ops_seen": state["ops_seen"], "ops_kept": len(ops), "ops_dropped": state["ops_dropped"],
           "bytes_used": state["bytes"], "byte_limit": opts.max_bytes, "dropped": dropped}

    header = {"format": FORMAT, "version": VERSION, "recorder": "tunebench_record " + __version__,
              "torch": str(torch.__version__), "python": platform.python_version(), "program": opts.program,
              "argv": opts.argv, "created": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
              "seq_source": "autograd" if recorder.features.sequence_nr else "recorder"}
    return [header] + storage_lines + op_lines + saved_lines + unpack_lines + [end]


def _producer(ops, before, ti):
    """The latest op before `before` with an output on the same storage, shape and version."""
    for i in range(before - 1, -1, -1):
        for o in ops[i].outputs:
            if (o[R.STORAGE] == ti[R.STORAGE] and o[R.STORAGE] and tuple(o[R.SHAPE]) == tuple(ti[R.SHAPE])
                    and o[R.VERSION_AFTER] == ti[R.VERSION_BEFORE]):
                return i, ops[i].name
    return -1, ""


def write(path, recorder, state, outcome, pytorch_error, failed_in, backward_succeeded):
    lines = build(recorder, state, outcome, pytorch_error, failed_in, backward_succeeded)
    directory = os.path.dirname(os.path.abspath(path))
    os.makedirs(directory, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".tunebench-trace.", dir=directory)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            for line in lines:
                f.write(json.dumps(line, ensure_ascii=False, allow_nan=False))
                f.write("\n")
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    return lines
