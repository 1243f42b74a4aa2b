#!/usr/bin/env python3
"""Every path inside the repository that a comment or a document cites must exist.

Scans the tracked sources, scripts, CMake files and Markdown for paths that start with one of the
repository's top-level folders (engine/, bridge/, ui/, app/, tests/, scripts/, docs/, bench/,
packaging/, resources/) and reports those that name neither a file nor a folder of the checkout.
Names of build outputs (executables and test binaries that CMake makes, e.g. app/tunebench) are not
files of the checkout and are skipped.

usage: check_references.py [REPOSITORY]   (default: the checkout this script is in)
"""

import pathlib
import re
import subprocess
import sys

TOP = ("engine", "bridge", "ui", "app", "tests", "scripts", "docs", "bench", "packaging", "resources")
# A path: a top-level folder, then path characters; not part of a longer path or word before it.
PATH = re.compile(r"(?<![\w./~-])((?:%s)/[A-Za-z0-9_./-]*[A-Za-z0-9_])" % "|".join(TOP))
SOURCES = re.compile(r"(\.(h|cpp|py|sh|md|cmake|txt)$)|(^|/)CMakeLists\.txt$|^\.ci/")


def build_outputs(root):
    """Executable targets CMake makes (their build paths mirror the source folders)."""
    names = set()
    for cmake in root.rglob("CMakeLists.txt"):
        text = cmake.read_text(encoding="utf-8", errors="replace")
        for match in re.finditer(r"(?:add_executable|tunebench_test)\(\s*(?:NAME\s+)?([A-Za-z0-9_-]+)", text):
            names.add(match.group(1))
    return names


def main():
    root = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else pathlib.Path(__file__).resolve().parents[2])
    files = subprocess.run(["git", "ls-files"], cwd=root, capture_output=True, text=True, check=True).stdout.split()
    outputs = build_outputs(root)
    missing = []
    for name in files:
        if not SOURCES.search(name):
            continue
        path = root / name
        if not path.is_file():
            continue
        for number, line in enumerate(path.read_text(encoding="utf-8", errors="replace").splitlines(), 1):
            for match in PATH.finditer(line):
                cited = match.group(1).rstrip(".")
                if re.match(r"[\w.-]*[*<{]", line[match.end():]):
                    continue  # a pattern (docs/widgets-*.png), not one path
                if (root / cited).exists() or (root / "tests" / cited).exists():
                    continue  # tests include their helpers relative to tests/
                if "." not in pathlib.PurePath(cited).name and pathlib.PurePath(cited).name in outputs:
                    continue  # a build output, e.g. build/bench/plan_bench
                missing.append(f"{name}:{number}: {cited}")
    for entry in missing:
        print(entry)
    print(f"{len(missing)} cited path(s) missing")
    return 1 if missing else 0


if __name__ == "__main__":
    sys.exit(main())
