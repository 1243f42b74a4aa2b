"""Tests of the Python recorder (resources/python/tunebench_record): the programs under programs/ run as users run
them, under `python3 -m tunebench_record`, and each test reads the trace file back field by field
(docs/trace-format.md). Run from the repository root:

    /usr/bin/python3 -m unittest discover -s tests/python -v
"""
import contextlib
import io
import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
PYTHON_DIR = os.path.join(ROOT, "resources", "python")
PROGRAMS = os.path.join(HERE, "programs")
sys.path.insert(0, PYTHON_DIR)
sys.path.insert(0, PROGRAMS)

import torch  # noqa: E402

import tunebench_record  # noqa: E402
from tunebench_record import compat  # noqa: E402

INPLACE_TEXT = "one of the variables needed for gradient computation has been modified by an inplace operation"


class Trace:
    """A trace file read back: header, storages by id, ops, saved, unpacks, end."""

    def __init__(self, path):
        with open(path, encoding="utf-8") as f:
            self.lines = [json.loads(line) for line in f]
        self.header = self.lines[0]
        self.end = self.lines[-1]
        self.storages = {l["id"]: l for l in self.lines if l.get("kind") == "storage"}
        self.ops = [l for l in self.lines if l.get("kind") == "op"]
        self.saved = [l for l in self.lines if l.get("kind") == "saved"]
        self.unpacks = [l for l in self.lines if l.get("kind") == "unpack"]

    def storage_named(self, name):
        found = [s["id"] for s in self.storages.values() if s.get("name") == name]
        assert len(found) == 1, (name, found)
        return found[0]

    def writes(self, storage):
        """(op, written input) for each op that writes `storage`, in trace order."""
        out = []
        for op in self.ops:
            for t in op["inputs"]:
                if t["written"] and t["storage"] == storage:
                    out.append((op, t))
        return out

    def first_write_after(self, saved):
        """The first write to the saved tensor's storage that moved its version past the save."""
        for op, t in self.writes(saved["tensor"]["storage"]):
            if op["index"] > saved["saved_by_op"] and t["version_after"] > saved["saved_version"]:
                return op, t
        return None, None

    def node(self, seq, name):
        found = [o for o in self.ops if o["backward_node_op"] and o["seq"] == seq and o["name"] == name]
        return found[0] if found else None


@contextlib.contextmanager
def captured_stderr():
    """The recorder's messages of an in-process recording (they go to stderr), kept for assertions."""
    buf = io.StringIO()
    with contextlib.redirect_stderr(buf):
        yield buf


def code(op):
    return (op.get("source") or {}).get("code")


# Whether this torch lets the recorder switch its dispatch mode off between a backward and the next module
# call ("the gap": 1.13's directly set mode). Where it cannot (torch 2.x), the optimizer's ops are recorded
# like any other, and a NaN they make is named at the op and its line instead of as a write in the gap.
GAP = compat.Features(torch).direct_dispatch_mode


class RecorderCase(unittest.TestCase):
    maxDiff = None

    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="tunebench-record-test.")

    def tearDown(self):
        shutil.rmtree(self.tmp, ignore_errors=True)

    def env(self, **extra):
        env = dict(os.environ)
        env["PYTHONPATH"] = PYTHON_DIR + os.pathsep + env.get("PYTHONPATH", "")
        env["TMPDIR"] = self.tmp
        env.pop("TUNEBENCH_CLI", None)
        env.pop("TUNEBENCH_RECORD_JSON", None)
        env["PATH"] = "/usr/bin:/bin"  # no tunebench CLI unless a test names one
        env["PYTHONWARNINGS"] = "ignore"
        env.update(extra)
        return env

    def run_plain(self, program, *args):
        return subprocess.run([sys.executable, os.path.join(PROGRAMS, program)] + list(args), cwd=ROOT,
                              env=self.env(), capture_output=True, text=True, timeout=300)

    def run_recorded(self, program, *args, options=(), trace="trace.jsonl", env=None):
        path = os.path.join(self.tmp, trace) if trace else None
        cmd = [sys.executable, "-m", "tunebench_record"]
        if path:
            cmd += ["--trace", path]
        cmd += list(options) + [os.path.join(PROGRAMS, program)] + list(args)
        done = subprocess.run(cmd, cwd=ROOT, env=self.env(**(env or {})), capture_output=True, text=True,
                              timeout=300)
        return done, path

    def check_format(self, trace):
        """What every trace must be: a header, records with their required keys, consistent ids."""
        h = trace.header
        self.assertEqual(h["format"], "tunebench-trace")
        self.assertEqual(h["version"], 1)
        self.assertEqual(h["recorder"], "tunebench_record 0.1.0")
        self.assertEqual(h["torch"], torch.__version__)
        for key in ("python", "program", "argv", "created"):
            self.assertIn(key, h)
        self.assertEqual(trace.end["kind"], "end")
        self.assertEqual(sum(1 for l in trace.lines if l.get("kind") == "end"), 1)
        self.assertEqual(sorted(trace.storages), list(range(1, len(trace.storages) + 1)))
        tensor_keys = {"shape", "dtype", "device", "storage", "version_before", "version_after", "written",
                       "non_finite"}
        for i, op in enumerate(trace.ops):
            self.assertEqual(op["index"], i)
            for key in ("name", "phase", "backward_node_op", "depth", "seq", "module", "backward_node",
                        "writes_input", "inputs", "outputs"):
                self.assertIn(key, op)
            self.assertIn(op["phase"], ("forward", "backward"))
            for t in op["inputs"] + op["outputs"]:
                self.assertTrue(tensor_keys <= set(t), t)
                self.assertTrue(t["storage"] == 0 or t["storage"] in trace.storages, t)
                self.assertNotIn("torch.", t["dtype"])
            self.assertEqual(op["writes_input"], any(t["written"] for t in op["inputs"]))
        for i, s in enumerate(trace.saved):
            self.assertEqual(s["id"], i)
            for key in ("tensor", "saved_by_op", "saved_by_op_name", "backward_node", "produced_by_op",
                        "produced_by_op_name", "grad_fn", "saved_version"):
                self.assertIn(key, s)
            self.assertEqual(s["tensor"]["version_before"], s["saved_version"])
            self.assertLess(s["saved_by_op"], len(trace.ops))
        for u in trace.unpacks:
            self.assertLess(u["saved"], len(trace.saved))
            self.assertTrue(trace.ops[u["op"]]["backward_node_op"])
        end = trace.end
        for key in ("outcome", "pytorch_error", "failed_in", "backward_succeeded", "loss", "stale_before_backward",
                    "stale_at_unpack", "silent_mutations", "nan_op", "gradients", "ops_seen", "ops_kept",
                    "ops_dropped", "bytes_used", "byte_limit", "dropped"):
            self.assertIn(key, end)
        self.assertEqual(end["ops_kept"], len(trace.ops))
        self.assertEqual(end["ops_seen"], end["ops_kept"] + end["ops_dropped"])


def last_line(text):
    lines = [l for l in text.strip().splitlines() if l.strip()]
    return lines[-1] if lines else ""


class KVCacheTest(RecorderCase):
    """(a) Meta's LLaMA attention: a preallocated cache written in place at each decoding step."""

    def test_first_write_after_the_save_names_the_cache_line(self):
        plain = self.run_plain("kv_cache_decode.py", "--steps", "4")
        done, path = self.run_recorded("kv_cache_decode.py", "--steps", "4")
        self.assertEqual(done.returncode, 1, done.stderr)
        self.assertEqual(plain.returncode, 1)
        self.assertTrue(last_line(plain.stderr).startswith("RuntimeError: " + INPLACE_TEXT))
        self.assertEqual(last_line(done.stderr), last_line(plain.stderr))
        self.assertIn("tunebench_record: backward failed with PyTorch's in-place error: trace written to " + path,
                      done.stderr)
        self.assertIn("read it with: tunebench inspect --trace " + path, done.stderr)
        t = Trace(path)
        self.check_format(t)
        end = t.end
        self.assertEqual(end["outcome"], "inplace_error")
        self.assertEqual(end["failed_in"], "backward")
        self.assertFalse(end["backward_succeeded"])
        self.assertEqual("RuntimeError: " + end["pytorch_error"], last_line(plain.stderr))
        self.assertIsInstance(end["loss"], float)
        self.assertEqual(end["nan_op"], -1)
        self.assertEqual(end["silent_mutations"], [])

        # The saved tensor backward failed on: the values view of layers.1's cache, saved by bmm in
        # the third decoding step, written once more by the fourth.
        self.assertEqual(len(end["stale_at_unpack"]), 1)
        stale = end["stale_at_unpack"][0]
        saved = t.saved[stale["saved"]]
        self.assertEqual((stale["saved_version"], stale["current_version"]), (3, 4))
        self.assertEqual(saved["saved_version"], 3)
        self.assertEqual(saved["saved_by_op_name"], "aten::bmm")
        self.assertEqual(saved["backward_node"], "BmmBackward0")
        self.assertEqual(saved["tensor"]["shape"], [4, 3, 8])
        self.assertEqual(saved["tensor"]["storage"], t.storage_named("layers.1.attention.cache_v"))
        self.assertEqual(t.storages[saved["tensor"]["storage"]]["label"], "[2, 16, 4, 8] float32")
        by = t.ops[saved["saved_by_op"]]
        self.assertEqual(by["name"], "aten::bmm")
        self.assertEqual(by["module"], "layers.1.attention")
        self.assertEqual(code(by), "output = torch.matmul(scores, values)")
        self.assertEqual(by["source"]["function"], "forward")
        self.assertTrue(by["source"]["file"].endswith("programs/kv_cache_decode.py"))
        self.assertEqual(by["backward_node"], "BmmBackward0")
        self.assertEqual(t.ops[saved["produced_by_op"]]["index"], saved["produced_by_op"])
        self.assertLess(saved["produced_by_op"], saved["saved_by_op"])

        # Every write to the cache: aten::copy_ at the user's line, versions 0->1->2->3->4 in order.
        writes = t.writes(saved["tensor"]["storage"])
        self.assertEqual([op["name"] for op, _ in writes], ["aten::copy_"] * 4)
        self.assertEqual([(w["version_before"], w["version_after"]) for _, w in writes],
                         [(0, 1), (1, 2), (2, 3), (3, 4)])
        self.assertEqual([op["index"] for op, _ in writes], sorted(op["index"] for op, _ in writes))
        for op, _ in writes:
            self.assertEqual(code(op), "self.cache_v[:bsz, start_pos : start_pos + seqlen] = xv")
            self.assertEqual(op["module"], "layers.1.attention")
            self.assertEqual(op["backward_node"], "torch::autograd::CopySlices")  # Node::name(), as the engine
            self.assertTrue(op["writes_input"])
        first, w = t.first_write_after(saved)
        self.assertIs(first, writes[3][0])
        self.assertEqual(w["version_after"], stale["current_version"])

        # The forward op and its backward node share seq; the node unpacked the stale tensor.
        unpack = [u for u in t.unpacks if u["saved"] == stale["saved"]]
        self.assertEqual(len(unpack), 1)
        self.assertEqual(unpack[0]["version"], 4)
        self.assertFalse(unpack[0]["checksum_changed"])
        node = t.ops[unpack[0]["op"]]
        self.assertEqual(node["name"], "BmmBackward0")
        self.assertEqual(node["phase"], "backward")
        self.assertEqual(node["seq"], by["seq"])
        self.assertGreaterEqual(by["seq"], 0)
        self.assertEqual(node["module"], "layers.1.attention")
        self.assertEqual(code(node), "output = torch.matmul(scores, values)")

        # Before backward ran, every saved view of a cache written since was found stale; the first
        # decoding step's keys of layers.0 were written three times after their save.
        before = {s["saved"]: s for s in end["stale_before_backward"]}
        self.assertIn(stale["saved"], before)
        self.assertEqual(len(before), 12)  # 2 layers x (keys, values) x 3 earlier steps
        k0 = t.storage_named("layers.0.attention.cache_k")
        first_step = [t.saved[i] for i in before if t.saved[i]["tensor"]["storage"] == k0
                      and t.saved[i]["saved_version"] == 1]
        self.assertEqual(len(first_step), 1)
        s0 = first_step[0]
        self.assertEqual(code(t.ops[s0["saved_by_op"]]),
                         "scores = torch.matmul(xq, keys.transpose(2, 3)) / math.sqrt(self.head_dim)")
        after = [(op, w) for op, w in t.writes(k0) if op["index"] > s0["saved_by_op"]]
        self.assertEqual([w["version_after"] for _, w in after], [2, 3, 4])
        first, w = t.first_write_after(s0)
        self.assertIs(first, after[0][0])
        self.assertEqual(code(first), "self.cache_k[:bsz, start_pos : start_pos + seqlen] = xk")
        self.assertEqual(first["module"], "layers.0.attention")

    def test_cloned_cache_writes_no_trace(self):
        plain = self.run_plain("kv_cache_decode.py", "--clone")
        done, path = self.run_recorded("kv_cache_decode.py", "--clone")
        self.assertEqual(done.returncode, 0, done.stderr)
        self.assertEqual(done.stdout, plain.stdout)
        self.assertFalse(os.path.exists(path))
        self.assertNotIn("trace written", done.stderr)

    def test_cloned_cache_forced_trace_is_ok(self):
        done, path = self.run_recorded("kv_cache_decode.py", "--clone", options=["--always-write"])
        self.assertEqual(done.returncode, 0, done.stderr)
        t = Trace(path)
        self.check_format(t)
        self.assertEqual(t.end["outcome"], "ok")
        self.assertTrue(t.end["backward_succeeded"])
        self.assertEqual(t.end["failed_in"], "")
        self.assertEqual(t.end["stale_before_backward"], [])
        self.assertEqual(t.end["stale_at_unpack"], [])
        self.assertEqual(t.end["pytorch_error"], "")
        # every saved tensor was used once by backward, none changed
        self.assertEqual(sorted(u["saved"] for u in t.unpacks), list(range(len(t.saved))))
        self.assertFalse(any(u["checksum_changed"] for u in t.unpacks))
        # each step writes a fresh clone once; the module's cache_k is now the last clone
        k0 = t.storage_named("layers.0.attention.cache_k")
        writes = t.writes(k0)
        self.assertEqual([(op["name"], w["version_before"], w["version_after"]) for op, w in writes],
                         [("aten::copy_", 0, 1)])
        self.assertEqual(code(writes[0][0]), "self.cache_k[:bsz, start_pos : start_pos + seqlen] = xk")
        clones = [o for o in t.ops if o["name"] == "aten::clone" and o["module"] == "layers.0.attention"
                  and o["phase"] == "forward"]
        self.assertEqual(len(clones), 8)  # keys and values, 4 steps
        self.assertIn(k0, [o["outputs"][0]["storage"] for o in clones])
        on_k0 = [s for s in t.saved if s["tensor"]["storage"] == k0]
        self.assertTrue(on_k0)
        self.assertTrue(all(s["saved_version"] == 1 for s in on_k0))

    def test_trace_over_its_bound_says_what_was_dropped(self):
        done, path = self.run_recorded("kv_cache_decode.py", options=["--max-record-mib", "0.25"])
        self.assertEqual(done.returncode, 1)
        t = Trace(path)
        self.check_format(t)
        end = t.end
        self.assertGreater(end["ops_dropped"], 0)
        self.assertEqual(end["byte_limit"], int(0.25 * (1 << 20)))
        self.assertIn("ops past the 0.25 MiB bound", end["dropped"])
        self.assertIn("%d of %d ops" % (end["ops_dropped"], end["ops_seen"]), end["dropped"])
        self.assertIn("tunebench_record: the trace reached its", done.stderr)
        self.assertIn("%d of %d ops were dropped" % (end["ops_dropped"], end["ops_seen"]), done.stderr)
        # in-place writes are kept past the bound: the culprit is still named
        stale = end["stale_at_unpack"][0]
        saved = t.saved[stale["saved"]]
        writes = t.writes(saved["tensor"]["storage"])
        self.assertEqual([w["version_after"] for _, w in writes], [1, 2, 3, 4])


class BoundTest(RecorderCase):
    """Forwards without backward (an evaluation loop that forgot no_grad) stay within the bound."""

    def test_forward_only_loop_is_bounded(self):
        path = os.path.join(self.tmp, "bound.jsonl")
        model = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.Tanh(), torch.nn.Linear(8, 1))
        with captured_stderr() as err, tunebench_record.recording(path, max_record_mib=0.05,
                                                                  quiet_end=True) as r:
            for _ in range(300):
                out = model(torch.randn(2, 8))
            limit = r.options.max_bytes
            self.assertLessEqual(r._bytes, 4 * limit + 2000)
            self.assertGreater(r._ops_dropped, 0)
            self.assertGreater(r._saved_dropped, 0)
            kept = len(r._saved)
            h = torch.tanh(out)
            h.add_(1)  # written after tanh saved it: still caught although past the bound
            with self.assertRaises(RuntimeError) as caught:
                h.sum().backward()
        self.assertIn("is at version 1; expected version 0 instead.", str(caught.exception))
        self.assertLess(kept, 4 * limit // 400)
        t = Trace(path)
        self.assertIn("saved tensors past four times the 0.05 MiB bound", t.end["dropped"])
        self.assertIn("ops past the 0.05 MiB bound", t.end["dropped"])
        self.assertIn("saved tensors were past four times the bound", err.getvalue())


class NanTest(RecorderCase):
    """(c) torch.log of a prediction that can be negative."""

    def test_nan_first_at_log_in_forward(self):
        done, path = self.run_recorded("log_nan.py")
        self.assertEqual(done.returncode, 0, done.stderr)
        self.assertEqual(done.stdout, "step 0 loss nan\nstep 1 loss nan\n")
        self.assertIn("tunebench_record: NaN first appeared at aten::log (forward): trace written to " + path,
                      done.stderr)
        t = Trace(path)
        self.check_format(t)
        end = t.end
        self.assertEqual(end["outcome"], "nan")
        self.assertEqual(end["failed_in"], "", "the program raised nothing; the NaN's phase is its op's")
        self.assertTrue(end["backward_succeeded"])
        self.assertEqual(end["loss"], "nan")
        op = t.ops[end["nan_op"]]
        self.assertEqual(op["name"], "aten::log")
        self.assertEqual(op["phase"], "forward")
        self.assertEqual(op["module"], "")
        self.assertEqual(op["backward_node"], "LogBackward0")
        self.assertEqual(op["source"]["function"], "log_likelihood")
        self.assertEqual(code(op), "return torch.log(pred)")
        self.assertEqual(len(op["inputs"]), 1)
        x = op["inputs"][0]
        self.assertLess(x["min"], 0.0)
        self.assertGreater(x["max"], 0.0)
        self.assertIsInstance(x["max"], float)
        self.assertEqual(x["shape"], [32])
        self.assertTrue(op["outputs"][0]["non_finite"])
        # nothing before it held NaN or Inf; the input came from the model's last linear layer
        self.assertFalse(any(o["non_finite"] for prev in t.ops[:end["nan_op"]] for o in prev["outputs"]))
        producer = [p for p in t.ops[:end["nan_op"]] if any(o["storage"] == x["storage"] for o in p["outputs"])]
        self.assertTrue(producer)
        self.assertEqual(producer[0]["module"], "body.2")
        # min/max only for the NaN op's inputs
        self.assertFalse(any("min" in i for o in t.ops if o is not op for i in o["inputs"]))

    def test_queued_checks_find_the_same_origin(self):
        """On a GPU the finite checks are queued (no sync per op) and read in batches: the same op."""
        import log_nan
        path = os.path.join(self.tmp, "queued.jsonl")
        torch.manual_seed(0)
        model = log_nan.Scorer()
        with captured_stderr() as err, tunebench_record.recording(path, quiet_end=True) as recorder:
            recorder._defer_nan = True
            for _ in range(40):  # past one batch of queued checks before the NaN
                model(torch.randn(4, 8)).abs().sum().backward()
            pred = model(torch.randn(32, 8))
            loss = -log_nan.log_likelihood(pred, False).mean()
            loss.backward()
        self.assertIn("NaN first appeared at aten::log (forward)", err.getvalue())
        t = Trace(path)
        op = t.ops[t.end["nan_op"]]
        self.assertEqual(op["name"], "aten::log")
        self.assertEqual(code(op), "return torch.log(pred)")
        self.assertLess(op["inputs"][0]["min"], 0.0)
        self.assertTrue(op["outputs"][0]["non_finite"])

    def test_no_nan_check(self):
        done, path = self.run_recorded("log_nan.py", options=["--no-nan-check"])
        self.assertEqual(done.returncode, 0)
        self.assertFalse(os.path.exists(path))

    def test_clamped_log_and_attention_mask_are_no_nan(self):
        done, path = self.run_recorded("log_nan.py", "--clamp")
        self.assertEqual(done.returncode, 0)
        self.assertFalse(os.path.exists(path), done.stderr)

    def test_inf_mask_is_no_origin(self):
        with captured_stderr(), tunebench_record.recording(os.path.join(self.tmp, "mask.jsonl"), always_write=True,
                                                           quiet_end=True):
            x = torch.randn(2, 4, 4, requires_grad=True)
            mask = torch.full((4, 4), float("-inf")).triu(1)
            p = torch.softmax(x + mask, dim=-1)
            p.sum().backward()
        t = Trace(os.path.join(self.tmp, "mask.jsonl"))
        self.assertEqual(t.end["outcome"], "ok")
        self.assertEqual(t.end["nan_op"], -1)
        full = [o for o in t.ops if o["name"] == "aten::full"]
        self.assertTrue(full and full[0]["outputs"][0]["non_finite"])


class InplaceActivationTest(RecorderCase):
    """(d) an in-place activation on a tensor the next layer saved."""

    def check(self, act, op_name, line):
        plain = self.run_plain("inplace_activation.py", "--act", act)
        done, path = self.run_recorded("inplace_activation.py", "--act", act)
        self.assertEqual(done.returncode, 1)
        self.assertEqual(last_line(done.stderr), last_line(plain.stderr))
        t = Trace(path)
        self.check_format(t)
        end = t.end
        self.assertEqual(end["outcome"], "inplace_error")
        self.assertEqual(end["stale_before_backward"], end["stale_at_unpack"])
        stale = end["stale_at_unpack"][0]
        self.assertEqual((stale["saved_version"], stale["current_version"]), (0, 1))
        saved = t.saved[stale["saved"]]
        self.assertEqual(saved["saved_by_op_name"], "aten::addmm")
        self.assertEqual(saved["backward_node"], "AddmmBackward0")
        self.assertEqual(saved["grad_fn"], "AddmmBackward0")
        self.assertEqual(saved["produced_by_op_name"], "aten::addmm")
        self.assertEqual(t.ops[saved["produced_by_op"]]["module"], "block.fc1")
        self.assertEqual(t.ops[saved["saved_by_op"]]["module"], "block.fc2")
        self.assertEqual(code(t.ops[saved["saved_by_op"]]), "out = self.fc2(h)")
        writes = t.writes(saved["tensor"]["storage"])
        self.assertEqual(len(writes), 1)
        op, w = writes[0]
        self.assertEqual(op["name"], op_name)
        self.assertEqual(op["module"], "block")
        self.assertEqual(code(op), line)
        self.assertEqual((w["version_before"], w["version_after"]), (0, 1))
        self.assertGreater(op["index"], saved["saved_by_op"])
        self.assertEqual(t.first_write_after(saved)[0], op)
        # the in-place op's output is the tensor it wrote (same storage, version after)
        self.assertEqual(op["outputs"][0]["storage"], w["storage"])
        self.assertEqual(op["outputs"][0]["version_after"], 1)
        unpack = [u for u in t.unpacks if u["saved"] == stale["saved"]]
        self.assertEqual(t.ops[unpack[0]["op"]]["name"], "AddmmBackward0")
        self.assertEqual(t.ops[unpack[0]["op"]]["module"], "block.fc2")

    def test_sigmoid_(self):
        self.check("sigmoid_", "aten::sigmoid_", "g = getattr(h, self.act)()")

    def test_relu_(self):
        self.check("relu_", "aten::relu_", "g = torch.relu_(h)")

    def test_out_of_place_is_fine(self):
        done, path = self.run_recorded("inplace_activation.py", "--out-of-place")
        self.assertEqual(done.returncode, 0, done.stderr)
        self.assertFalse(os.path.exists(path))


class NoGradWorkTest(RecorderCase):
    """No-grad work outside backward is recorded only when it writes a storage autograd saved: the
    optimizer's update of a weight a retained graph saved is named; its other updates are not kept."""

    def test_optimizer_step_between_backwards_is_named(self):
        done, path = self.run_recorded("step_between_backwards.py")
        self.assertNotEqual(done.returncode, 0)
        self.assertIn("modified by an inplace operation", done.stderr)
        t = Trace(path)
        self.check_format(t)
        self.assertEqual(t.end["outcome"], "inplace_error")
        stale = t.end["stale_at_unpack"][0]
        saved = t.saved[stale["saved"]]
        op, w = t.first_write_after(saved)
        self.assertIsNotNone(op)
        self.assertEqual(code(op), "opt.step()")
        self.assertGreater(w["version_after"], saved["saved_version"])
        # AdamW's moments and temporaries (never saved by autograd) left no records.
        written = {x["storage"] for o in t.ops if o["writes_input"] for x in o["inputs"] if x["written"]}
        saved_storages = {s["tensor"]["storage"] for s in t.saved}
        self.assertTrue(written <= saved_storages, (written, saved_storages))

    def test_no_step_runs_both_backwards(self):
        done, path = self.run_recorded("step_between_backwards.py", "--no-step")
        self.assertEqual(done.returncode, 0, done.stderr)

    def test_optimizer_nan_is_named_with_the_weight(self):
        """Between backward and the next module call the recorder keeps out of the optimizer's ops; a
        NaN its step writes into a parameter is still the origin, named as that parameter's write."""
        done, path = self.run_recorded("optimizer_nan.py")
        self.assertEqual(done.returncode, 0, done.stderr)
        t = Trace(path)
        self.check_format(t)
        end = t.end
        self.assertEqual(end["outcome"], "nan")
        if not GAP:
            # No gap and no NaN search in no-grad work: the origin is the first forward op that reads the
            # NaN weight, at the line calling the model, with that weight among its inputs.
            op = t.ops[end["nan_op"]]
            self.assertEqual((op["name"], op["phase"], op["module"]), ("aten::addmm", "forward", "0"))
            self.assertEqual(code(op), "loss = model(x).pow(2).mean()")
            self.assertIn("nan", [i.get("min") for i in op["inputs"]])
            return
        self.assertEqual(end["nan_op"], 0)
        op = t.ops[0]
        self.assertEqual(op["name"], "write to 0.bias between backward and forward (optimizer step or program code)")
        self.assertEqual(op["phase"], "forward")
        self.assertEqual(op["module"], "0")
        self.assertNotIn("source", op)  # the optimizer's ops ran unrecorded: no line is claimed
        self.assertTrue(op["writes_input"])
        w = op["inputs"][0]
        self.assertTrue(w["written"])
        self.assertEqual(w["shape"], [16])
        self.assertEqual(w["min"], "nan")
        self.assertEqual(t.storages[w["storage"]].get("name"), "0.bias")
        self.assertTrue(op["outputs"][0]["non_finite"])
        # the first forward op reading it made NaN too
        addmm = [o for o in t.ops if o["name"] == "aten::addmm"][0]
        self.assertEqual(addmm["inputs"][0]["storage"], w["storage"])
        self.assertTrue(addmm["outputs"][0]["non_finite"])
        # the optimizer's updates left no records
        self.assertFalse(any(o["phase"] == "forward" and o["name"] in ("aten::add_", "aten::zero_") for o in t.ops))

    def test_tensor_made_in_the_gap_points_at_the_module_call(self):
        done, path = self.run_recorded("optimizer_nan.py", "--data-nan")
        self.assertEqual(done.returncode, 0, done.stderr)
        t = Trace(path)
        self.check_format(t)
        op = t.ops[t.end["nan_op"]]
        if not GAP:  # the program's log was recorded: it is the origin, at its line
            self.assertEqual(op["name"], "aten::log")
            self.assertIn("x = x.log()", code(op))
            return
        self.assertEqual(op["name"], "tensor made between backward and forward (program code, not recorded)")
        self.assertEqual(code(op), "loss = model(x).pow(2).mean()")
        self.assertEqual(op["inputs"][0]["shape"], [4, 8])
        self.assertEqual(op["inputs"][0]["min"], "nan")

    def test_nan_in_backward_after_gaps_is_named_inside_its_node(self):
        """Steps after the first run their optimizer in a gap and their backward with the dispatch
        mode on only inside hooked nodes: a NaN that first appears in backward is still the aten op
        inside the node that made it."""

        class Root(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.lin = torch.nn.Linear(4, 4)

            def forward(self, x, zero):
                return (self.lin(x).tanh() + (x * zero).sqrt() * zero).sum()

        path = os.path.join(self.tmp, "bwnan.jsonl")
        torch.manual_seed(0)
        model = Root()
        opt = torch.optim.SGD(model.parameters(), lr=0.01)
        with captured_stderr() as err, tunebench_record.recording(path, quiet_end=True):
            for zero in (1.0, 1.0, 0.0):  # sqrt(0) in the third step: its backward divides 0 by 0
                loss = model(torch.rand(2, 4, requires_grad=True), torch.tensor(zero))
                loss.backward()
                opt.step()
        self.assertIn("NaN first appeared at aten::div (backward)", err.getvalue())
        t = Trace(path)
        self.check_format(t)
        self.assertEqual(t.end["outcome"], "nan")
        self.assertEqual(t.end["failed_in"], "", "nothing raised")
        op = t.ops[t.end["nan_op"]]
        self.assertEqual((op["name"], op["phase"], op["depth"]), ("aten::div", "backward", 1))
        node = [o for o in t.ops[:t.end["nan_op"]] if o["backward_node_op"]][-1]
        self.assertEqual(node["name"], "SqrtBackward0")

    def test_graph_outside_modules_keeps_recording(self):
        """A program that builds its graph outside module calls: the dispatch mode never leaves."""
        path = os.path.join(self.tmp, "functional.jsonl")
        torch.manual_seed(0)
        w = torch.randn(8, 8, requires_grad=True)
        with tunebench_record.recording(path, quiet_end=True) as recorder:
            for _ in range(3):
                (torch.randn(4, 8) @ w).tanh().sum().backward()
                with torch.no_grad():
                    w -= 0.1 * w.grad
                self.assertFalse(recorder._off)
            n = len(recorder._ops)
            y = (torch.randn(4, 8) @ w).tanh()
            self.assertGreater(len(recorder._ops), n)

    @unittest.skipUnless(GAP, "this torch keeps the dispatch mode on between steps (no gap to leave)")
    def test_mode_leaves_only_without_a_live_graph(self):
        path = os.path.join(self.tmp, "retained.jsonl")
        torch.manual_seed(0)
        model = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.Tanh(), torch.nn.Linear(8, 1))
        with tunebench_record.recording(path, quiet_end=True) as recorder:
            model(torch.randn(4, 8)).sum().backward()
            self.assertTrue(recorder._off)  # the graph is gone: the optimizer would run unrecorded
            loss = model(torch.randn(4, 8)).sum()
            self.assertFalse(recorder._off)  # the module call brought the mode back
            loss.backward(retain_graph=True)
            self.assertFalse(recorder._off)  # the graph keeps saved tensors: the mode stays
            del loss


class SilentMutationTest(RecorderCase):
    """(e) a .data write to a saved tensor: no version bump, so only the checksum sees it."""

    def test_data_write_is_a_silent_mutation(self):
        plain = self.run_plain("data_mutation.py")
        done, path = self.run_recorded("data_mutation.py")
        self.assertEqual(done.returncode, 0)
        self.assertEqual(done.stdout, plain.stdout)
        self.assertIn("a saved tensor changed without a version bump", done.stderr)
        t = Trace(path)
        self.check_format(t)
        end = t.end
        self.assertEqual(end["outcome"], "ok")
        self.assertTrue(end["backward_succeeded"])
        self.assertEqual(end["stale_before_backward"], [])
        self.assertEqual(end["stale_at_unpack"], [])
        self.assertEqual(len(end["silent_mutations"]), 1)
        sid = end["silent_mutations"][0]
        saved = t.saved[sid]
        self.assertEqual(saved["saved_by_op_name"], "aten::addmm")
        self.assertEqual(t.ops[saved["saved_by_op"]]["module"], "mix")
        self.assertEqual(code(t.ops[saved["saved_by_op"]]), "y = self.mix(h)")
        self.assertEqual(saved["backward_node"], "AddmmBackward0")
        self.assertEqual(saved["tensor"]["shape"], [5, 24])
        unpacks = [u for u in t.unpacks if u["saved"] == sid]
        self.assertEqual(len(unpacks), 1)
        self.assertTrue(unpacks[0]["checksum_changed"])
        self.assertEqual(unpacks[0]["version"], saved["saved_version"])
        self.assertEqual(t.ops[unpacks[0]["op"]]["name"], "AddmmBackward0")
        self.assertFalse(any(u["checksum_changed"] for u in t.unpacks if u["saved"] != sid))
        # the .data write is in the trace: same storage, its own version counter
        writes = t.writes(saved["tensor"]["storage"])
        self.assertEqual([op["name"] for op, _ in writes], ["aten::div_"])
        self.assertEqual(code(writes[0][0]), "h.data.div_(h.data.norm())")


class GradientsTest(RecorderCase):
    """(f) a clean program's gradients are bitwise the same with and without the recorder."""

    def grads(self, record):
        import kv_cache_decode as kv
        import inplace_activation as ia
        torch.manual_seed(1)
        model = kv.Transformer(clone_cache=True)
        mlp = ia.Net("sigmoid_", out_of_place=True)
        tokens = torch.randint(kv.VOCAB, (1, 5))
        x = torch.randn(4, 16)
        ctx = tunebench_record.recording(os.path.join(self.tmp, "g.jsonl"), quiet_end=True) if record else None
        if ctx:
            ctx.__enter__()
        try:
            losses = [torch.nn.functional.cross_entropy(model(tokens[:, p:p + 1], p).view(-1, kv.VOCAB),
                                                        tokens[:, p + 1]) for p in range(4)]
            loss = torch.stack(losses).mean() + mlp(x).pow(2).mean()
            loss.backward()
        finally:
            if ctx:
                ctx.__exit__(None, None, None)
        named = list(model.named_parameters()) + [("mlp." + n, p) for n, p in mlp.named_parameters()]
        return loss.detach(), {n: p.grad.clone() for n, p in named}

    def test_bitwise_equal(self):
        loss_a, plain = self.grads(False)
        loss_b, recorded = self.grads(True)
        self.assertEqual(loss_a.view(torch.int32).item(), loss_b.view(torch.int32).item())
        self.assertEqual(sorted(plain), sorted(recorded))
        for name in plain:
            a, b = plain[name], recorded[name]
            self.assertTrue(torch.equal(a.view(torch.int32), b.view(torch.int32)), name)
        self.assertFalse(os.path.exists(os.path.join(self.tmp, "g.jsonl")))


class ExceptionTest(RecorderCase):
    """(g) PyTorch's own exception text and the program's exit status pass through unchanged."""

    def message(self, build, record):
        """The text of the exception `build()`'s backward raises, with or without the recorder."""
        ctx = tunebench_record.recording(os.path.join(self.tmp, "e.jsonl"), quiet_end=True) if record else None
        with captured_stderr() as err:
            if ctx:
                ctx.__enter__()
            try:
                try:
                    build().backward()
                except RuntimeError as exc:
                    return type(exc), str(exc)
                return None, None
            finally:
                if ctx:
                    ctx.__exit__(None, None, None)
                    self.assertIn("tunebench_record: backward failed with PyTorch's in-place error: trace written to",
                                  err.getvalue())

    def test_messages_match_pytorch(self):
        def output_saved():          # sigmoid saves its result; the result is written
            x = torch.randn(3, requires_grad=True)
            y = x.sigmoid()
            y.mul_(2)
            return y.sum()

        def input_saved():           # mul saves its input; the input is written afterwards
            x = torch.randn(3, requires_grad=True)
            h = x * 2
            z = h * h
            h.add_(1)
            return z.sum()

        def view_of_written_base():  # a saved view whose base is written: AsStridedBackward0
            w = torch.randn(4, requires_grad=True)
            base = torch.zeros(2, 4)
            base[0] = w * 2
            v = base[0]
            z = (v * w).sum()
            base[1] = w
            return z

        def leaf_saved():            # a leaf buffer saved by matmul, then written
            w = torch.randn(3, 3, requires_grad=True)
            buf = torch.ones(3, 3)
            z = (w @ buf).sum()
            buf.zero_()
            return z

        def second_output_saved():   # an op's output 1 saved as an input, then written
            x = torch.randn(4, requires_grad=True)
            std, mean = torch.std_mean(x * 1)
            z = mean * mean * std
            mean.add_(1)
            return z

        def sort_indices_written():  # sort saves its indices (output 1, no grad), then written
            x = torch.randn(5, requires_grad=True)
            values, indices = (x * 1).sort()
            z = values.sum()
            indices.add_(0)
            return z

        def residual_relu_():        # a residual stream made non-finite in place... relu_ on a saved sum
            x = torch.randn(3, 4, requires_grad=True)
            w = torch.randn(4, 4, requires_grad=True)
            h = x @ w + x
            z = (h @ w).sum()
            torch.relu_(h)
            return z

        def anomaly():
            with torch.autograd.set_detect_anomaly(True):
                return output_saved()

        for build in (output_saved, input_saved, view_of_written_base, leaf_saved, second_output_saved,
                      sort_indices_written, residual_relu_, anomaly):
            with self.subTest(build.__name__):
                torch.manual_seed(0)
                plain = self.message(build, False)
                torch.manual_seed(0)
                recorded = self.message(build, True)
                self.assertIsNotNone(plain[0])
                self.assertTrue(plain[1].startswith(INPLACE_TEXT), plain[1])
                self.assertEqual(recorded, plain)

    def test_notebook_api_raises_the_same_exception(self):
        path = os.path.join(self.tmp, "nb.jsonl")
        tunebench_record.enable(trace=path)
        caught = None
        with captured_stderr() as err:
            try:
                x = torch.randn(3, requires_grad=True)
                y = x.exp()
                y.add_(1)
                y.sum().backward()
            except RuntimeError as exc:
                caught = exc
            finally:
                tunebench_record.disable(quiet=True)
        self.assertEqual(err.getvalue(), "tunebench_record: backward failed with PyTorch's in-place error: trace "
                         "written to %s; read it with: tunebench inspect --trace %s\n" % (path, path))
        self.assertIsNotNone(caught)
        self.assertIn("which is output 0 of ExpBackward0, is at version 1; expected version 0 instead.", str(caught))
        # the recorder's hooks are not in the traceback (only its backward wrapper)
        frames = []
        tb = caught.__traceback__
        while tb is not None:
            frames.append((tb.tb_frame.f_code.co_filename, tb.tb_frame.f_code.co_name))
            tb = tb.tb_next
        torch_dir = os.path.dirname(os.path.realpath(torch.__file__))
        self.assertTrue(os.path.realpath(frames[-1][0]).startswith(torch_dir), frames)  # where PyTorch raises
        for hook in ("_unpack", "_node_post", "__call__"):
            self.assertNotIn(hook, [name for _, name in frames])
        t = Trace(path)
        self.assertEqual(t.end["outcome"], "inplace_error")
        self.assertEqual(t.header["program"], os.path.basename(sys.argv[0]) or "notebook")
        op, w = t.first_write_after(t.saved[t.end["stale_at_unpack"][0]["saved"]])
        self.assertEqual(op["name"], "aten::add_")
        self.assertEqual(code(op), "y.add_(1)")
        self.assertFalse(tunebench_record._active)

    def test_exit_status_passes_through(self):
        done, path = self.run_recorded("no_backward.py")
        self.assertEqual(done.returncode, 3)
        self.assertEqual(done.stdout, "out (3, 2)\n")

    def test_uncaught_exception_traceback_starts_at_the_program(self):
        plain = self.run_plain("kv_cache_decode.py")
        done, _ = self.run_recorded("kv_cache_decode.py")
        self.assertEqual(done.returncode, plain.returncode)
        tb = done.stderr[done.stderr.index("Traceback (most recent call last):"):]
        first_frame = tb.splitlines()[1]
        self.assertIn("kv_cache_decode.py", first_frame)
        self.assertNotIn("runpy", tb)
        self.assertNotIn("tunebench_record/__main__.py", tb)
        self.assertNotIn("_node_post", tb)


class CornersTest(RecorderCase):
    """The recorder leaves a program's results exactly as they are, whatever autograd features it uses."""

    def test_autograd_corners_unchanged(self):
        plain = self.run_plain("autograd_corners.py")
        done, path = self.run_recorded("autograd_corners.py", options=["--always-write"])
        self.assertEqual(plain.returncode, 0, plain.stderr)
        self.assertEqual(done.returncode, 0, done.stderr)
        self.assertEqual(done.stdout, plain.stdout)
        self.assertIn("x.grad twice", done.stdout)
        self.assertNotIn("internal error", done.stderr)
        t = Trace(path)  # the last completed step: the gradient penalty's backward
        self.check_format(t)
        self.assertEqual(t.end["outcome"], "ok")
        self.assertIn("PowBackward0", [o["name"] for o in t.ops if o["backward_node_op"]])


class BadInputTest(RecorderCase):
    """(h) one clear message each; the program's output and status pass through."""

    def test_missing_script(self):
        done, _ = self.run_recorded("no_such_program.py")
        self.assertEqual(done.returncode, 2)
        self.assertEqual(done.stderr.strip(),
                         "tunebench_record: no such script: " + os.path.join(PROGRAMS, "no_such_program.py"))

    def run_with_patched(self, prelude, program, *args):
        code = (prelude + "; import sys, runpy; sys.argv = ['tunebench_record', '--trace', %r, %r] + %r; "
                "runpy.run_module('tunebench_record', run_name='__main__')"
                % (os.path.join(self.tmp, "trace.jsonl"), os.path.join(PROGRAMS, program), list(args)))
        return subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=self.env(), capture_output=True,
                              text=True, timeout=300)

    def test_torch_too_old(self):
        done = self.run_with_patched("import tunebench_record.compat as c; c.MIN_TORCH = (99, 1)", "no_backward.py")
        self.assertEqual(done.returncode, 3)
        self.assertEqual(done.stdout, "out (3, 2)\n")
        self.assertIn("tunebench_record: not recording: torch %s is too old: tunebench_record needs PyTorch 99.1 "
                      "or newer" % torch.__version__, done.stderr)
        self.assertIn("Running %s unrecorded." % os.path.join(PROGRAMS, "no_backward.py"), done.stderr)
        self.assertEqual(done.stderr.count("tunebench_record:"), 1)

    def test_python_without_torch(self):
        script = os.path.join(self.tmp, "hello.py")
        with open(script, "w") as f:
            f.write("import sys\nprint('hello', sys.argv[1:])\nsys.exit(5)\n")
        code = ("import sys; sys.modules['torch'] = None; import runpy; "
                "sys.argv = ['tunebench_record', %r, 'a', '--b']; runpy.run_module('tunebench_record', "
                "run_name='__main__')" % script)
        done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=self.env(), capture_output=True,
                              text=True, timeout=120)
        self.assertEqual(done.returncode, 5)
        self.assertEqual(done.stdout, "hello ['a', '--b']\n")
        self.assertIn("tunebench_record: not recording: this Python (%s" % sys.executable, done.stderr)
        self.assertIn("has no torch", done.stderr)
        self.assertIn("needs PyTorch 1.13 or newer", done.stderr)
        self.assertEqual(done.stderr.count("\n"), 1)

    def test_version_check(self):
        self.assertIsNone(compat.version_problem("1.13.0a0"))
        self.assertIsNone(compat.version_problem("2.6.0+debian"))
        self.assertIsNone(compat.version_problem("2.10.0+cu128"))
        self.assertIn("needs PyTorch 1.13 or newer", compat.version_problem("1.12.1"))
        self.assertIn("torch 1.12.1 is too old", compat.version_problem("1.12.1"))

    def test_notebook_enable_with_old_torch(self):
        old = compat.MIN_TORCH
        compat.MIN_TORCH = (99, 0)
        try:
            with self.assertRaises(tunebench_record.RecorderUnavailable) as caught:
                tunebench_record.enable()
        finally:
            compat.MIN_TORCH = old
        self.assertIn("needs PyTorch 99.0 or newer", str(caught.exception))
        self.assertIsNone(tunebench_record._active)

    def test_program_without_backward(self):
        done, path = self.run_recorded("no_backward.py")
        self.assertEqual(done.returncode, 3)
        self.assertEqual(done.stdout, "out (3, 2)\n")
        self.assertEqual(done.stderr.strip(),
                         "tunebench_record: the program ended without running backward: nothing was recorded")
        self.assertFalse(os.path.exists(path))


class HandoffTest(RecorderCase):
    """The trace goes to `tunebench inspect --trace FILE` ($TUNEBENCH_CLI, else tunebench on PATH)."""

    def fake_cli(self, name="tunebench"):
        path = os.path.join(self.tmp, "bin", name)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as f:
            f.write("#!/bin/sh\necho \"diagnosis: $*\"\necho \"(stderr too)\" >&2\nexit 1\n")
        os.chmod(path, 0o755)
        return path

    def test_cli_from_env_with_json(self):
        cli = self.fake_cli("my-tunebench")
        done, path = self.run_recorded("inplace_activation.py", env={"TUNEBENCH_CLI": cli, "TUNEBENCH_RECORD_JSON": "1"})
        self.assertEqual(done.returncode, 1)
        self.assertIn("diagnosis: inspect --trace %s --json\n(stderr too)\n" % path, done.stderr)
        self.assertLess(done.stderr.index("diagnosis:"), done.stderr.index("Traceback"))
        self.assertNotIn("read it with", done.stderr)

    def test_cli_on_path(self):
        cli = self.fake_cli()
        done, path = self.run_recorded("inplace_activation.py",
                                       env={"PATH": os.path.dirname(cli) + os.pathsep + "/usr/bin:/bin"})
        self.assertIn("diagnosis: inspect --trace %s\n" % path, done.stderr)

    def test_default_trace_path(self):
        done, _ = self.run_recorded("log_nan.py", trace=None)
        self.assertEqual(done.returncode, 0)
        names = [n for n in os.listdir(self.tmp) if n.startswith("tunebench-log_nan-")]
        self.assertEqual(len(names), 1, os.listdir(self.tmp))
        self.assertRegex(names[0], r"^tunebench-log_nan-\d+\.trace\.jsonl$")
        path = os.path.join(self.tmp, names[0])
        self.assertIn("trace written to %s; read it with: tunebench inspect --trace %s" % (path, path), done.stderr)
        self.assertEqual(Trace(path).end["outcome"], "nan")


class NotebookApiTest(RecorderCase):
    def test_recording_block_inside_enable_leaves_it_on(self):
        path = os.path.join(self.tmp, "nb.jsonl")
        outer = tunebench_record.enable(trace=path)
        try:
            with tunebench_record.recording() as inner:
                self.assertIs(inner, outer)
            self.assertIs(tunebench_record._active, outer)
        finally:
            with captured_stderr() as err:
                self.assertIs(tunebench_record.disable(), outer)
        self.assertEqual(err.getvalue(), "tunebench_record: no backward ran while recording: nothing was recorded\n")
        self.assertIsNone(tunebench_record.disable())
        self.assertEqual(tunebench_record.__version__, "0.1.0")


class WindowTest(RecorderCase):
    """Records since the last completed backward: a clean step clears the window."""

    def test_second_step_only(self):
        path = os.path.join(self.tmp, "w.jsonl")
        with captured_stderr(), tunebench_record.recording(path, quiet_end=True):
            w = torch.randn(3, 3, requires_grad=True)
            (w @ w).sum().backward()              # a clean step: forgotten
            x = torch.randn(3, requires_grad=True)
            y = x.tanh()
            y.mul_(2)
            try:
                y.sum().backward()
            except RuntimeError:
                pass
        t = Trace(path)
        self.check_format(t)
        self.assertNotIn("aten::mm", [o["name"] for o in t.ops if o["phase"] == "forward"])
        forward = [o["name"] for o in t.ops if o["phase"] == "forward"]
        self.assertEqual(forward[-3:], ["aten::tanh", "aten::mul_", "aten::sum"])
        tanh = [s for s in t.saved if s["saved_by_op_name"] == "aten::tanh"]
        self.assertEqual(len(tanh), 1)
        self.assertEqual(tanh[0]["backward_node"], "TanhBackward0")
        self.assertEqual(tanh[0]["grad_fn"], "TanhBackward0")  # saved as the op's own output
        self.assertEqual(tanh[0]["produced_by_op_name"], "aten::tanh")
        # 1.13 also hands the scalar 2 of mul_(2) (a wrapped number) to the hooks; 2.x does not
        self.assertTrue(all(s["saved_by_op_name"] in ("aten::tanh", "aten::mul_") for s in t.saved))


if __name__ == "__main__":
    unittest.main()
