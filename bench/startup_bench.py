#!/usr/bin/env python3
"""Start-up time of the commands that need no tensors, through the front (`tunebench`, no libtorch)
and through tunebench-full (libtorch linked), side by side in one run.

    python3 bench/startup_bench.py [BUILD_DIR [ROUNDS]]     (default: build 10)

Prints, per command, the first (cold-ish: the page cache may hold the files already) and the
median of the warm runs, in milliseconds, and the ratio full / front.

Then the GUI (`tunebench` with no command, offscreen, TUNEBENCH_STARTUP_PROBE=1): the time until its
window has been painted, and until the engine module (libtorch) it loads in the background after that
is ready - which is when the window appeared before the GUI left libtorch to the module."""
import os
import statistics
import subprocess
import sys
import tempfile
import time

build = sys.argv[1] if len(sys.argv) > 1 else "build"
rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 10
front = os.path.join(build, "app", "tunebench")
full = os.path.join(build, "app", "tunebench-full")
home = tempfile.mkdtemp(prefix="tunebench-startup-")
env = dict(os.environ, HOME=home, XDG_DATA_HOME=home + "/data", XDG_CONFIG_HOME=home + "/config")
db = os.path.join(home, "runs.sqlite3")
commands = {
    "--help": ["--help"],
    "--version": ["--version"],
    "runs list": ["--db", db, "runs", "list"],
    "tokenize": ["tokenize", "--tokenizer", "resources/base", "--text", "Call me Ishmael."],
    "plan": ["plan", "--model", "resources/base", "--max-memory", "cpu=1GiB"],
}


def timed(binary, args):
    start = time.perf_counter()
    subprocess.run([binary] + args, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    return (time.perf_counter() - start) * 1000.0


print(f"{'command':<12} {'front first':>12} {'front warm':>11} {'full first':>11} {'full warm':>10} {'full/front':>11}")
for name, args in commands.items():
    row = {}
    for label, binary in (("front", front), ("full", full)):
        first = timed(binary, args)
        warm = statistics.median(timed(binary, args) for _ in range(rounds))
        row[label] = (first, warm)
    print(f"{name:<12} {row['front'][0]:>10.1f}ms {row['front'][1]:>9.1f}ms {row['full'][0]:>9.1f}ms "
          f"{row['full'][1]:>8.1f}ms {row['full'][1] / row['front'][1]:>10.1f}x")


def gui_times():
    """Milliseconds from exec to the window's first paint and to the engine loaded, by the probe's lines."""
    gui_env = dict(env, QT_QPA_PLATFORM="offscreen", TUNEBENCH_STARTUP_PROBE="1")
    start = time.perf_counter()
    child = subprocess.Popen([front], env=gui_env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    marks = {}
    for line in child.stdout:
        marks[line.split(" (")[0].strip()] = (time.perf_counter() - start) * 1000.0
    child.wait()
    if "window shown" not in marks or "engine loaded" not in marks:
        sys.exit(f"the GUI's start-up probe printed {sorted(marks)}; is this a build with the GUI?")
    return marks["window shown"], marks["engine loaded"]


if os.path.exists(os.path.join(build, "app", "tunebench-gui")):
    first = gui_times()
    warm = [gui_times() for _ in range(rounds)]
    window = statistics.median(w for w, _ in warm)
    engine = statistics.median(e for _, e in warm)
    print()
    print(f"{'GUI (offscreen)':<16} {'first':>9} {'warm median':>12}")
    print(f"{'window shown':<16} {first[0]:>7.1f}ms {window:>10.1f}ms")
    print(f"{'engine loaded':<16} {first[1]:>7.1f}ms {engine:>10.1f}ms   (window / engine: {window / engine:.2f})")
