"""What this torch offers the recorder, found by feature tests rather than version numbers where a
feature test is possible. Importing this module does not import torch; `load_torch()` does.

Each torch API the recorder uses, and why (the same facts as the C++ recorder, docs/ARCHITECTURE.md):
  TorchDispatchMode (torch.utils._python_dispatch)  every aten op below autograd, with its schema
  torch.autograd.graph.saved_tensors_hooks          every tensor autograd saves, and its unpacking
  Node.register_prehook / register_hook             which backward node runs, and when it ends
  Node.metadata                                     a per-node dict: links a node to the op that made it
  register_module_forward_pre_hook / _forward_hook  module paths ("layers.0.attention")
  Tensor._version                                   the version counter PyTorch's own check reads
"""
import re
import sys
import platform

MIN_TORCH = (1, 13)

# What to install, said once for every "no torch" / "too old" message.
INSTALL_HINT = ("Debian 12 and 13: apt install python3-torch; elsewhere: pip install torch")


def parse_version(text):
    """(major, minor) of a torch version string ("1.13.0a0", "2.6.0+cu124"); (0, 0) if unreadable."""
    m = re.match(r"\s*(\d+)\.(\d+)", str(text))
    return (int(m.group(1)), int(m.group(2))) if m else (0, 0)


def version_problem(version_text):
    """None when this torch version is new enough, else the sentence that says what is needed."""
    if parse_version(version_text) < MIN_TORCH:
        return ("torch %s is too old: tunebench_record needs PyTorch %s or newer (%s)"
                % (version_text, min_text(), INSTALL_HINT))
    return None


def min_text():
    return "%d.%d" % MIN_TORCH


def _missing_features(torch):
    """Names of the torch APIs the recorder needs that this torch lacks."""
    missing = []
    try:
        from torch.utils._python_dispatch import TorchDispatchMode  # noqa: F401 (its presence is the test)
    except Exception:
        missing.append("torch.utils._python_dispatch.TorchDispatchMode")
    graph = getattr(torch.autograd, "graph", None)
    if graph is None or not hasattr(graph, "saved_tensors_hooks"):
        missing.append("torch.autograd.graph.saved_tensors_hooks")
    module = getattr(getattr(torch.nn, "modules", None), "module", None)
    for name in ("register_module_forward_pre_hook", "register_module_forward_hook"):
        if module is None or not hasattr(module, name):
            missing.append("torch.nn.modules.module." + name)
    try:
        x = torch.zeros(1, requires_grad=True)
        node = (x * 1).grad_fn
        for name in ("register_prehook", "register_hook", "metadata", "name", "next_functions"):
            if not hasattr(node, name):
                missing.append("autograd Node." + name)
        if not hasattr(x, "_version"):
            missing.append("Tensor._version")
    except Exception as exc:  # a torch that cannot even build a graph
        missing.append("autograd (%s)" % exc)
    return missing


def load_torch():
    """(torch, None) when the recorder can run here, else (torch or None, the sentence saying why not)."""
    try:
        import torch
    except ImportError as exc:
        return None, ("this Python (%s, %s) has no torch (%s): tunebench_record needs PyTorch %s or newer (%s)"
                      % (sys.executable, platform.python_version(), exc, min_text(), INSTALL_HINT))
    problem = version_problem(getattr(torch, "__version__", "0"))
    if problem:
        return torch, problem
    missing = _missing_features(torch)
    if missing:
        return torch, ("torch %s lacks %s: tunebench_record needs PyTorch %s or newer (%s)"
                       % (torch.__version__, ", ".join(missing), min_text(), INSTALL_HINT))
    return torch, None


class Features:
    """What this torch offers, each found by trying it (see the module's docstring)."""

    def __init__(self, torch):
        import inspect
        C = torch._C
        # 1.13 keeps one C++-level dispatch mode and runs a stack of Python modes through a helper
        # mode that pops and pushes around every op; setting our mode directly skips that helper.
        # 2.x keeps the stack in C++ (no _set_torch_dispatch_mode) and pops the mode itself while
        # its __torch_dispatch__ runs.
        self.direct_dispatch_mode = (hasattr(C, "_set_torch_dispatch_mode")
                                     and hasattr(C, "_len_torch_dispatch_stack"))
        # Excludes the Python dispatch key for as long as the object lives (both 1.13 and 2.x);
        # lets the recorder run its own ops (checksums, finite checks) without recording them.
        self.disable_dispatch = getattr(C, "_DisableTorchDispatch", None)
        x = torch.zeros(1, requires_grad=True)
        node = (x * 1).grad_fn
        # 2.x: the node's autograd sequence number; 1.13 has no Python binding for it.
        self.sequence_nr = hasattr(node, "_sequence_nr")
        module = torch.nn.modules.module
        try:
            params = inspect.signature(module.register_module_forward_hook).parameters
            self.forward_hook_always_call = "always_call" in params
        except (TypeError, ValueError):
            self.forward_hook_always_call = False
        self.untyped_storage = hasattr(torch.Tensor, "untyped_storage")
        self.unpack_error_exact = _unpack_error_passes_unchanged(torch)


_features = {}


def features(torch):
    """Features(torch), found once per process."""
    f = _features.get(id(torch))
    if f is None:
        f = _features[id(torch)] = Features(torch)
    return f


class _Probe(RuntimeError):
    pass


def _unpack_error_passes_unchanged(torch):
    """Whether an exception raised in a saved-tensor unpack hook reaches the caller of backward as
    it was raised. On 1.13 (through pybind11) it arrives as a RuntimeError whose text is
    "_Probe: ...\\n\\nAt:\\n  <traceback>", so the recorder raises PyTorch's version error from the
    node's post hook instead, where exceptions pass unchanged."""
    def unpack(_):
        raise _Probe("tunebench_record probe")
    x = torch.ones(1, requires_grad=True)
    try:
        with torch.autograd.graph.saved_tensors_hooks(lambda t: t, unpack):
            y = (x * x).sum()
        y.backward()
    except _Probe as exc:
        return str(exc) == "tunebench_record probe"
    except Exception:
        return False
    return False
