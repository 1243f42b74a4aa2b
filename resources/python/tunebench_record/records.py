"""The recorder's in-memory records: plain values only, never a tensor, so that keeping a window of
them keeps no activation alive. The trace writer (trace.py) turns them into the trace's JSON."""

# A tensor as it was when an op ran: a list indexed by these constants (cheaper than an object).
SHAPE, DTYPE, DEVICE, STORAGE, VERSION_BEFORE, VERSION_AFTER, WRITTEN, NON_FINITE, RANGE = range(9)

# Bytes one op or saved tensor costs the recording, as counted against --max-record-mib: about what
# its trace line takes (its in-memory form is of the same order).
OP_BYTES = 260
TENSOR_BYTES = 170
SOURCE_BYTES = 160


class OpRec:
    """One op of the trace: an aten op (forward or backward) or a backward node."""
    __slots__ = ("gidx", "name", "phase", "is_node", "depth", "seq", "module", "node_name",
                 "writes", "inputs", "outputs", "frame")

    def __init__(self, gidx, name, phase, is_node, depth, module, frame):
        self.gidx = gidx            # recorder-wide op counter (the trace index is the position)
        self.name = name            # "aten::copy_" or "BmmBackward0"
        self.phase = phase          # "forward" / "backward"
        self.is_node = is_node
        self.depth = depth
        self.seq = -1               # the node id shared by a forward op and its backward node
        self.module = module
        self.node_name = ""         # forward ops: the backward node the op created
        self.writes = False
        self.inputs = ()
        self.outputs = ()
        self.frame = frame          # index into the recorder's frame table, or None


class SavedInfo:
    """A tensor autograd saved: what the trace's `saved` record says (no tensor reference)."""
    __slots__ = ("sid", "window", "tensor", "version", "pack_node", "grad_fn", "output_nr",
                 "owner_node", "owner_name", "owner_op", "owner_op_name", "produced_op", "produced_op_name",
                 "checksum", "is_output", "guess_op")

    def __init__(self):
        self.sid = -1               # recorder-wide saved counter
        self.window = -1
        self.tensor = None          # tensor info list (see SHAPE...)
        self.version = 0            # the version when saved
        self.pack_node = -1         # node id of the tensor's grad_fn when saved (-1: none)
        self.grad_fn = ""           # its name
        self.output_nr = 0
        self.owner_node = -1        # node id of the node that saved it (from the graph walk)
        self.owner_name = ""
        self.owner_op = -1          # gidx of the forward op that created the owner node
        self.owner_op_name = ""
        self.produced_op = -1       # gidx of the op that made the tensor
        self.produced_op_name = ""
        self.checksum = None        # 0-dim tensor (sum at save) or None
        self.is_output = False      # saved as an output of its own node (PyTorch's is_output)
        self.guess_op = -1          # the op the pack was attributed to while forward ran


class UnpackRec:
    __slots__ = ("saved", "op", "version", "checksum_changed", "checksum")

    def __init__(self, saved, op, version, checksum):
        self.saved = saved          # SavedInfo
        self.op = op                # gidx of the backward node that used it (-1: none)
        self.version = version
        self.checksum = checksum    # 0-dim tensor at unpack, compared when backward ends
        self.checksum_changed = False
