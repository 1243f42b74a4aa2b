"""The innermost frame of the user's code that led to an op, cheaply.

An op's source is only needed for the few ops a diagnosis names, and which those are is known only
when the trace is written; so each op keeps (code object, line number), found by walking from the
caller's frame past torch's and the recorder's own frames (one dict lookup per frame), and the file
name, function and the line's text are read when the trace is written (linecache)."""
import linecache
import os
import sys

_skip_dirs = []
_skip_by_code = {}  # code object -> True when the frame is torch's or the recorder's


def add_skipped_dir(path):
    """Frames whose file lies under `path` are never a user's (torch's package, this package)."""
    path = os.path.realpath(path)
    if path not in _skip_dirs:
        _skip_dirs.append(path)
        _skip_by_code.clear()


def _is_skipped(code):
    name = code.co_filename
    if not name or name.startswith("<frozen "):
        return True
    if name.startswith("<"):  # <stdin>, <string>, a notebook cell (<ipython-input-...>) is the user's
        return False
    real = os.path.realpath(name)
    return any(real == d or real.startswith(d + os.sep) for d in _skip_dirs)


def capture(depth=1):
    """(code, line) of the innermost user frame above the caller's `depth`-th frame; None if none."""
    try:
        frame = sys._getframe(depth + 1)
    except ValueError:
        return None
    cache = _skip_by_code
    while frame is not None:
        code = frame.f_code
        skip = cache.get(code)
        if skip is None:
            skip = cache[code] = _is_skipped(code)
        if not skip:
            return (code, frame.f_lineno)
        frame = frame.f_back
    return None


def resolve(captured):
    """The trace's `source` object for a captured frame, or None."""
    if captured is None:
        return None
    code, line = captured
    text = linecache.getline(code.co_filename, line).strip() if line else ""
    return {"file": code.co_filename, "line": line, "function": code.co_name, "code": text}
