"""tunebench_record: records what a PyTorch program's training steps do to tensors, and when backward
fails with PyTorch's in-place error, a NaN/Inf first appears or a saved tensor changes silently, writes
a trace (docs/trace-format.md) and hands it to tunebench's diagnosis (`tunebench inspect --trace`).

    python3 -m tunebench_record [--trace FILE] [--no-nan-check] [--max-record-mib N] SCRIPT [ARGS...]

or, in a notebook:

    import tunebench_record
    tunebench_record.enable()            # ... tunebench_record.disable()
    with tunebench_record.recording():   # or for one block
        ...

Pure Python over torch (1.13 or newer); importing this package does not import torch.
"""
import contextlib
import os
import sys
import tempfile

__version__ = "0.1.0"
__all__ = ["enable", "disable", "recording", "RecorderUnavailable", "__version__"]

_active = None


class RecorderUnavailable(RuntimeError):
    """This Python cannot record: no torch, or a torch that is too old (the message says which)."""


def default_trace_path(name):
    stem = os.path.splitext(os.path.basename(name or "notebook"))[0] or "program"
    return os.path.join(tempfile.gettempdir(), "tunebench-%s-%d.trace.jsonl" % (stem, os.getpid()))


def _make(trace=None, nan_check=True, max_record_mib=64, always_write=False, checksums=True,
          program=None, argv=None, where="notebook"):
    from . import compat
    torch, problem = compat.load_torch()
    if problem:
        raise RecorderUnavailable(problem)
    from . import handoff
    from .recorder import Options, Recorder
    if program is None:
        program = os.path.basename(sys.argv[0]) if sys.argv and sys.argv[0] else "notebook"
    options = Options(trace or default_trace_path(program if where == "program" else "notebook"),
                      nan_check=nan_check, max_record_mib=max_record_mib, always_write=always_write,
                      checksums=checksums, program=program, argv=argv if argv is not None else list(sys.argv),
                      report=handoff.report, where=where)
    return Recorder(torch, compat.features(torch), options)


def enable(trace=None, nan_check=True, max_record_mib=64, always_write=False, checksums=True, **kw):
    """Starts recording in this process. `trace`: where a trace is written (default: a file under
    the temporary directory named after the program and pid). `always_write`: also write the last
    completed step's trace (outcome "ok") when recording ends. Returns the recorder."""
    global _active
    if _active is not None:
        return _active
    recorder = _make(trace, nan_check, max_record_mib, always_write, checksums, **kw)
    recorder.start()
    _active = recorder
    return recorder


def disable(quiet=False):
    """Stops recording; writes what is still owed (a NaN step without backward, an always_write
    trace) and says so when no backward ran while recording. Returns the recorder, or None."""
    global _active
    recorder, _active = _active, None
    if recorder is None:
        return None
    try:
        recorder.finish()
    finally:
        recorder.stop()
    if not quiet and recorder._backward_calls == 0:
        from . import handoff
        handoff.say("no backward ran while recording: nothing was recorded")
    return recorder


@contextlib.contextmanager
def recording(trace=None, quiet_end=False, **kw):
    """Records the block: `with tunebench_record.recording(): ...`. Yields the recorder. Takes
    enable()'s arguments; `quiet_end`: say nothing when no backward ran in the block."""
    outer = _active
    recorder = enable(trace, **kw)
    try:
        yield recorder
    finally:
        if outer is None and _active is recorder:  # (inside enable(): the outer recording goes on)
            disable(quiet=quiet_end)
