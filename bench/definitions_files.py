"""The worst definitions files one can write in 100 KB: peak memory and time of ``load_definitions`` on each.

Each file is loaded in a fresh interpreter with its address space capped (``RLIMIT_AS``, ``--memory-mib``) and a
deadline (``--timeout``), so a file that crashes, hangs or eats the machine ends only its own process. The
figures are the child's peak RSS (``ru_maxrss`` from ``wait4``), the time ``load_definitions`` took inside the
child (wall time of the whole child when it did not finish), the peak of what Python allocated during a second
load under ``tracemalloc`` (a second load, since tracing slows it; "-" when the first did not end), and how it
ended: loaded, the first line of the error it raised, or the signal or deadline that ended it. ``--checkout DIR``
loads another checkout's package (``--checkout /work/main`` gives the figures before a change). The files that
load are the worst ones found against the budgets: the most values (1,000,000), the most text (10 MiB), both, and
merges that copy the most pairs. Prints a Markdown table; asserts nothing.

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
import sys, time, tracemalloc
from airflow_provider_analytics.definitions._load import load_definitions

def load():
    try:
        load_definitions(sys.argv[1])
        return "loaded"
    except Exception as error:
        lines = [line.strip() for line in str(error).splitlines() if line.strip()]
        return type(error).__name__ + ": " + (lines[-1] if lines else "")

began = time.perf_counter()
outcome = load()
seconds = time.perf_counter() - began
print(f"{seconds:.3f} - {outcome}", flush=True)  # kept if the traced load below does not end
tracemalloc.start()
load()
peak = tracemalloc.get_traced_memory()[1] / 1024 / 1024
print(f"{seconds:.3f} {peak:.1f} {outcome}", flush=True)
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


def text_aliases(count: int, length: int) -> Callable[[], str]:
    """``count`` aliases of one text of ``length`` characters: one value each, but all that text each."""

    def build() -> str:
        return HEAD + f"      big: &big {'x' * length}\n      many: [{', '.join(['*big'] * count)}]\n"

    return build


def chained_merges() -> str:
    """Twelve anchors, each merging the one before through 95 nested merge keys, merged from a shallower mapping:
    PyYAML's constructor recursed once per merge in a merge."""
    rows = ["      defs:\n"]
    for number in range(12):
        merged = "{x: 0}" if number == 0 else f"*a{number - 1}"
        for _ in range(95):
            merged = f"{{<<: {merged}}}"
        rows.append(f"        a{number}: &a{number} {merged}\n")
    return HEAD + "".join(rows) + "      top: {<<: *a11, y: 1}\n"


def objects_aliasing(objects: int, values: int, length: int) -> Callable[[], str]:
    """``objects`` workflows, each holding an alias of one list of ``values`` aliases of one text of ``length``
    characters: the budgets filled across objects, each small enough to send."""

    def build() -> str:
        anchor = HEAD + f"      text: &t {'x' * length}\n      big: &big [{', '.join(['*t'] * values)}]\n"
        rows = "".join(f"  - {{name: w{number}, configuration: {{v: *big}}}}\n" for number in range(objects))
        return anchor + rows

    return build


def wide_merges() -> str:
    """One mapping merging a 1,000-pair anchor 900 times: 900,000 pairs copied for a mapping of 1,000 keys."""
    pairs = ", ".join(f"k{number}: {number}" for number in range(1000))
    return HEAD + f"      base: &b {{{pairs}}}\n      wide: {{<<: [{', '.join(['*b'] * 900)}]}}\n"


def bad_tags() -> str:
    """Tags on the wrong kind of node, which PyYAML's constructors met with a bare TypeError or ValueError."""
    return HEAD + "      a: !!map [1, 2]\n"


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
    "100,000 aliases of a 50,000-character text (650 KB: the finding, over 100 KB)": text_aliases(100_000, 50_000),
    "8,000 aliases of a 50,000-character text": text_aliases(8_000, 50_000),
    "chained merges, 12 anchors x 95": chained_merges,
    "!!map on a list": bad_tags,
    "990 objects, each an alias of 1,000 values (the most values, loads)": objects_aliasing(990, 1000, 1),
    "990 objects, each an alias of 1,000 ten-character texts (the most values and text)": objects_aliasing(
        990, 1000, 10
    ),
    "9 objects, each an alias of 1,000 texts of 1,000 characters (the most text, loads)": objects_aliasing(
        9, 1000, 1000
    ),
    "a mapping merging a 1,000-pair anchor 900 times": wide_merges,
}
# Files over LIMIT, kept to show the finding they reproduce.
OVER_LIMIT = {"100,000 aliases of a 50,000-character text (650 KB: the finding, over 100 KB)"}


def run(path: Path, env: dict[str, str], timeout: float, memory: int, checkout: Path) -> tuple[str, float, str, float]:
    """Load ``path`` in a child: how it ended, seconds, tracemalloc's peak in MiB ("-" if unknown), peak RSS in MiB."""

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
        return ended or f"exit {child.returncode}", wall, "-", usage.ru_maxrss / 1024
    seconds, traced, outcome = report.splitlines()[-1].split(" ", 2)
    return outcome, float(seconds), traced, usage.ru_maxrss / 1024


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
    print("| file | bytes | outcome | seconds | traced peak MiB | peak RSS MiB |")
    print("|---|---:|---|---:|---:|---:|")
    with tempfile.TemporaryDirectory() as folder:
        baseline = Path(folder) / "empty.yaml"
        baseline.write_text("", encoding="utf-8")
        outcome, seconds, traced, rss = run(baseline, env, args.timeout, args.memory_mib * 1024 * 1024, checkout)
        print(f"| (empty file: the interpreter alone) | 0 | {outcome} | {seconds:.2f} | {traced} | {rss:.0f} |")
        for number, (name, build) in enumerate(FILES.items()):
            if args.only and args.only not in name:
                continue
            text = build()
            assert len(text.encode()) <= LIMIT or name in OVER_LIMIT, name
            path = Path(folder) / f"{number}.yaml"
            path.write_text(text, encoding="utf-8")
            outcome, seconds, traced, rss = run(path, env, args.timeout, args.memory_mib * 1024 * 1024, checkout)
            outcome = outcome.replace(f"{path}: ", "")
            shown = outcome if len(outcome) <= 110 else outcome[:107] + "..."
            print(f"| {name} | {len(text):,} | {shown} | {seconds:.2f} | {traced} | {rss:.0f} |", flush=True)


if __name__ == "__main__":
    main()
