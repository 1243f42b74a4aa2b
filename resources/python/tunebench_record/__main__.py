"""python3 -m tunebench_record [--trace FILE] [--no-nan-check] [--max-record-mib N] [--always-write]
                              SCRIPT [ARGS...]

Runs SCRIPT as `python3 SCRIPT ARGS...` would, under the recorder. The program's own output, exception
and exit status pass through; the recorder's messages go to stderr, each on a line of its own that
starts with "tunebench_record:"."""
import argparse
import os
import runpy
import sys

from . import __version__

_HERE = os.path.dirname(os.path.abspath(__file__))


def _parser():
    p = argparse.ArgumentParser(
        prog="python3 -m tunebench_record",
        description="Run a PyTorch program under tunebench's recorder. When backward fails with PyTorch's "
                    "in-place error, a NaN/Inf first appears or a saved tensor changes without a version "
                    "bump, the recorder writes a trace and runs `tunebench inspect --trace FILE` on it.")
    p.add_argument("--trace", metavar="FILE",
                   help="where to write the trace (default: tunebench-SCRIPT-PID.trace.jsonl in $TMPDIR)")
    p.add_argument("--no-nan-check", action="store_true",
                   help="do not look for the first op whose output holds NaN or Inf")
    p.add_argument("--max-record-mib", type=float, default=64, metavar="N",
                   help="bound on the recording of one step, in MiB (default 64); ops past it are counted "
                        "as dropped")
    p.add_argument("--always-write", action="store_true",
                   help="also write a trace (outcome ok) of the last completed step when the program ends")
    p.add_argument("--no-checksums", action="store_true",
                   help="do not checksum saved tensors (finds writes that bump no version, e.g. through .data)")
    p.add_argument("--version", action="version", version="tunebench_record " + __version__)
    p.add_argument("script", metavar="SCRIPT", nargs="?", help="the Python program to run")
    p.add_argument("args", nargs=argparse.REMAINDER, metavar="ARGS", help="its arguments")
    return p


def _say(text):
    sys.stderr.write("tunebench_record: %s\n" % text)
    sys.stderr.flush()


def _trim(tb):
    """The traceback from the program's own first frame on (no runpy or recorder frames before it)."""
    runpy_file = os.path.abspath(runpy.__file__)
    while tb is not None:
        raw = tb.tb_frame.f_code.co_filename
        name = os.path.abspath(raw)
        if name.startswith(_HERE + os.sep) or name == runpy_file or raw == "<frozen runpy>":
            tb = tb.tb_next
            continue
        break
    return tb


def _run(script, argv):
    """Runs the script as __main__; returns its exit status (an uncaught exception: printed, 1)."""
    sys.argv = [script] + list(argv)
    sys.path[0] = os.path.dirname(os.path.abspath(script))
    try:
        runpy.run_path(os.path.abspath(script), run_name="__main__")
    except SystemExit as exc:
        code = exc.code
        if code is None:
            return 0
        if isinstance(code, int):
            return code
        sys.stderr.write("%s\n" % (code,))
        return 1
    except KeyboardInterrupt:
        raise
    except BaseException as exc:
        tb = _trim(exc.__traceback__)
        exc = exc.with_traceback(tb)  # the default hook prints the exception's own traceback
        sys.excepthook(type(exc), exc, tb)
        return 1
    return 0


def main(argv=None):
    parser = _parser()
    args = parser.parse_args(argv)
    script = args.script
    if not script:
        parser.error("which program to run? (python3 -m tunebench_record [options] SCRIPT [ARGS...])")
    if not os.path.exists(script):
        _say("no such script: %s" % script)
        return 2
    if os.path.isdir(script) and not os.path.exists(os.path.join(script, "__main__.py")):
        _say("%s is a folder without __main__.py, not a script" % script)
        return 2
    if args.max_record_mib <= 0:
        _say("--max-record-mib must be positive (got %g)" % args.max_record_mib)
        return 2
    from . import compat
    torch, problem = compat.load_torch()
    if problem:
        _say("not recording: %s. Running %s unrecorded." % (problem, script))
        return _run(script, args.args)
    import tunebench_record
    try:
        recorder = tunebench_record.enable(trace=args.trace, nan_check=not args.no_nan_check,
                                           max_record_mib=args.max_record_mib, always_write=args.always_write,
                                           checksums=not args.no_checksums, program=script,
                                           argv=[script] + list(args.args), where="program")
    except tunebench_record.RecorderUnavailable as exc:
        _say("not recording: %s. Running %s unrecorded." % (exc, script))
        return _run(script, args.args)
    status = 0
    try:
        status = _run(script, args.args)
    finally:
        tunebench_record.disable(quiet=True)
        try:
            sys.stdout.flush()
        except Exception:
            pass
        if recorder._backward_calls == 0:
            _say("the program ended without running backward: nothing was recorded")
    return status


if __name__ == "__main__":
    sys.exit(main())
