"""Hands a written trace to the engine's diagnosis: `tunebench inspect --trace FILE` (the executable
named by $TUNEBENCH_CLI, else `tunebench` on PATH), with `--json` when $TUNEBENCH_RECORD_JSON=1. Its
output goes to stderr, so that it appears beside the program's own error (under the failing cell in
a notebook). The recorder itself never diagnoses."""
import os
import shutil
import subprocess
import sys

CLI_TIMEOUT_S = 300


def say(text):
    sys.stderr.write("tunebench_record: %s\n" % text)
    sys.stderr.flush()


def find_cli():
    """The tunebench executable to run, or None."""
    named = os.environ.get("TUNEBENCH_CLI")
    if named:
        if os.path.isfile(named) and os.access(named, os.X_OK):
            return named
        found = shutil.which(named)
        if found:
            return found
        say("TUNEBENCH_CLI names %s, which is not an executable file" % named)
        return None
    return shutil.which("tunebench")


def command(cli, path):
    cmd = [cli, "inspect", "--trace", path]
    if os.environ.get("TUNEBENCH_RECORD_JSON") == "1":
        cmd.append("--json")
    return cmd


def report(path, recorder=None, state=None, summary=""):
    """Runs the diagnosis on the trace at `path` and prints it to stderr; or says where the trace is."""
    lead = summary + ": " if summary else ""
    if state is not None and state.get("ops_dropped"):
        say("the trace reached its %g MiB bound (--max-record-mib): %d of %d ops were dropped from trace "
            "position %d on (their tensors and sources are missing; writes, backward nodes and saved "
            "tensors were kept)" % (recorder.options.max_record_mib, state["ops_dropped"],
                                     state["ops_seen"], state["first_dropped"]))
    if state is not None and state.get("saved_dropped"):
        say("%d saved tensors were past four times the bound (forwards without backward) and are not in "
            "the trace; their versions were still checked" % state["saved_dropped"])
    cli = find_cli()
    if cli is None:
        say("%strace written to %s; read it with: tunebench inspect --trace %s" % (lead, path, path))
        return None
    say("%strace written to %s; the diagnosis (tunebench %s):" % (lead, path, " ".join(command("tunebench", path)[1:])))
    try:
        done = subprocess.run(command(cli, path), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                              timeout=CLI_TIMEOUT_S, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.SubprocessError) as exc:
        say("could not run %s (%s); read the trace with: tunebench inspect --trace %s" % (cli, exc, path))
        return None
    text = done.stdout.decode("utf-8", "replace")
    sys.stderr.write(text)
    if text and not text.endswith("\n"):
        sys.stderr.write("\n")
    if done.returncode != 0 and not text.strip():
        say("%s inspect exited with status %d and printed nothing" % (cli, done.returncode))
    sys.stderr.flush()
    return done.returncode
