"""The worst definitions files one can write in 100 KB: peak memory and time of ``load_definitions`` on each.

Each file is loaded in a fresh interpreter with its address space capped (``RLIMIT_AS``, ``--memory-mib``) and a
deadline (``--timeout``), so a file that crashes, hangs or eats the machine ends only its own process. The
figures are the child's peak RSS (``ru_maxrss`` from ``wait4``), the time ``load_definitions`` took inside the
child (wall time of the whole child when it did not finish), and how it ended: loaded, the first line of the
error it raised, or the signal or deadline that ended it. ``--checkout DIR`` loads another checkout's package
(``--checkout /work/main`` gives the figures before a change). Prints a Markdown table; asserts nothing.

    .venv/bin/python bench/definitions_files.py [--checkout DIR] [--timeout 120] [--memory-mib 4096]
"""

from __future__ import annotations

import argparse
import os
import resource
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

LIMIT = 100 * 1024
HEAD = "workflows:\n  - name: hostile\n    configuration:\n"
CHILD = """
import sys, time
from airflow_provider_analytics.definitions._load import load_definitions
began = time.perf_counter()
try:
    load_definitions(sys.argv[1])
    outcome = "loaded"
except Exception as error:
    lines = [line.strip() for line in str(error).splitlines() if line.strip()]
    outcome = type(error).__name__ + ": " + (lines[-1] if lines else "")
print(f"{time.perf_counter() - began:.3f} {outcome}")
"""


def nested_brackets() -> str:
    """Flow sequences opened and never closed: libyaml's composer recursed once per ``[``."""
    opening = HEAD + "      deep: "
    return opening + "[" * (LIMIT - len(opening))


def nested_mappings() -> str:
    """Block mappings nested as deep as 100 KB allows (two spaces more per level)."""
    lines, depth = [HEAD], 0
    while sum(map(len, lines)) + 2 * depth + 10 < LIMIT:
        lines.append("  " * (depth + 3) + "a:\n")
        depth += 1
    return "".join(lines)


def merge_keys(levels: int) -> Callable[[], str]:
    """Merge keys (``<<``) ten wide, ``levels`` deep: each level holds ten copies of the one before."""

    def build() -> str:
        rows = ["      m0: &m0 {a: 1, b: 2, c: 3, d: 4, e: 5, f: 6, g: 7, h: 8, i: 9, j: 10}\n"]
        for level in range(1, levels + 1):
            merged = ", ".join([f"*m{level - 1}"] * 10)
            rows.append(f"      m{level}: &m{level} {{<<: [{merged}], k{level}: 0}}\n")
        return HEAD + "".join(rows)

    return build


def list_aliases(levels: int) -> Callable[[], str]:
    """Sequences of ten aliases, ``levels`` deep: ten to the power ``levels`` values from a few lines."""

    def build() -> str:
        rows = ["      a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n"]
        rows += [f"      a{n}: &a{n} [{', '.join([f'*a{n - 1}'] * 10)}]\n" for n in range(1, levels + 1)]
        return HEAD + "".join(rows)

    return build


def many_anchors() -> str:
    """Every value of a long list an alias of the one big anchor: the most expansion the budget lets through."""
    anchor = "      big: &big [" + ", ".join(["x"] * 1000) + "]\n"
    aliases = "      many: [" + ", ".join(["*big"] * 990) + "]\n"
    return HEAD + anchor + aliases


def flat_values() -> str:
    """A flat list of as many small values as fit: the most nodes a file without aliases can hold."""
    opening = HEAD + "      wide: ["
    count = (LIMIT - len(opening) - 1) // 2
    return opening + ",".join(["0"] * count) + "]"


def long_integer() -> str:
    """A 5,000-digit integer (over CPython's 4,300-digit conversion limit)."""
    return HEAD + "      n: " + "7" * 5000 + "\n"


FILES: dict[str, Callable[[], str]] = {
    "50,000+ nested [": nested_brackets,
    "nested block mappings": nested_mappings,
    "merge keys, 6 levels": merge_keys(6),
    "merge keys, 7 levels": merge_keys(7),
    "list aliases, 7 levels": list_aliases(7),
    "990 aliases of a 1,000-value anchor": many_anchors,
    "merge keys, 4 levels (the most the budget lets through)": merge_keys(4),
    "flat list of small values": flat_values,
    "a 5,000-digit integer": long_integer,
}


def run(path: Path, env: dict[str, str], timeout: float, memory: int, checkout: Path) -> tuple[str, float, float]:
    """Load ``path`` in a child: how it ended, seconds, peak RSS in MiB."""

    def cap() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (memory, memory))

    out_path = path.with_suffix(".out")
    began = time.monotonic()
    with out_path.open("w") as out:
        child = subprocess.Popen(  # reaped below with wait4, for its rusage
            [sys.executable, "-c", CHILD, str(path)],
            stdout=out,
            stderr=subprocess.DEVNULL,
            env=env,
            cwd=checkout,  # "python -c" puts its working folder first on sys.path, before PYTHONPATH
            preexec_fn=cap,
        )
    ended = ""
    while True:
        pid, status, usage = os.wait4(child.pid, os.WNOHANG)
        if pid:
            break
        if time.monotonic() - began > timeout:
            os.kill(child.pid, signal.SIGKILL)
            _, status, usage = os.wait4(child.pid, 0)
            ended = f"killed after {timeout:.0f} s"
            break
        time.sleep(0.02)
    child.returncode = os.waitstatus_to_exitcode(status)  # reaped here: Popen must not wait for it again
    wall = time.monotonic() - began
    report = out_path.read_text().strip()
    if not ended and os.WIFSIGNALED(status):
        ended = f"killed by {signal.Signals(os.WTERMSIG(status)).name}"
    if ended or not report:
        return ended or f"exit {child.returncode}", wall, usage.ru_maxrss / 1024
    seconds, _, outcome = report.partition(" ")
    return outcome, float(seconds), usage.ru_maxrss / 1024


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--checkout", type=Path, help="load this checkout's package (e.g. /work/main)")
    parser.add_argument("--timeout", type=float, default=120.0, help="seconds each file may take")
    parser.add_argument("--memory-mib", type=int, default=4096, help="address space each child may use")
    parser.add_argument("--only", help="run the files whose name contains this")
    args = parser.parse_args()
    env = dict(os.environ)
    checkout = (args.checkout or Path(__file__).resolve().parent.parent).resolve()
    env["PYTHONPATH"] = str(checkout)
    import yaml  # type: ignore[import-untyped]  # PyYAML ships no type information

    print(f"PyYAML {yaml.__version__}, libyaml: {yaml.__with_libyaml__}; checkout: {args.checkout or 'this one'}\n")
    print("| file | bytes | outcome | seconds | peak RSS MiB |")
    print("|---|---:|---|---:|---:|")
    with tempfile.TemporaryDirectory() as folder:
        baseline = Path(folder) / "empty.yaml"
        baseline.write_text("", encoding="utf-8")
        outcome, seconds, rss = run(baseline, env, args.timeout, args.memory_mib * 1024 * 1024, checkout)
        print(f"| (empty file: the interpreter alone) | 0 | {outcome} | {seconds:.2f} | {rss:.0f} |", flush=True)
        for number, (name, build) in enumerate(FILES.items()):
            if args.only and args.only not in name:
                continue
            text = build()
            assert len(text.encode()) <= LIMIT, name
            path = Path(folder) / f"{number}.yaml"
            path.write_text(text, encoding="utf-8")
            outcome, seconds, rss = run(path, env, args.timeout, args.memory_mib * 1024 * 1024, checkout)
            outcome = outcome.replace(f"{path}: ", "")
            shown = outcome if len(outcome) <= 110 else outcome[:107] + "..."
            print(f"| {name} | {len(text):,} | {shown} | {seconds:.2f} | {rss:.0f} |", flush=True)


if __name__ == "__main__":
    main()
