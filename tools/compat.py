"""``make test-compat``: the test suite on the Airflow and Python versions the README claims, beyond ``make test``.

``make test`` runs the suite in ``.venv`` (Airflow 3.3.2 on the machine's Python 3.11, from ``uv.lock``).
This script proves the rest of the support line in the README: each combination in :data:`MATRIX` whose
``suite`` is set gets its own virtualenv under ``.compat/``, the same ``pytest`` runs there, and a table of
passed / failed / skipped counts is printed (a combination whose release and Python the suite already ran on
elsewhere runs only with ``--only``; ``make dist-releases`` runs the wheel on every one). It exits non-zero
when any combination fails or cannot be set up.

Resolution is reproducible: Airflow is pinned, every other package prefers its ``uv.lock`` version (the
lock is exported as the starting point of ``uv pip compile``, which keeps a pin unless the pinned Airflow
needs another version), and nothing uploaded after the newest file in ``uv.lock`` is considered. The
resolved pins are kept in ``.compat/<combination>/requirements.txt`` for inspection.

Interpreters come from the machine, never from a download (``UV_PYTHON_DOWNLOADS=never``): pyenv's
builds (``$PYENV_ROOT/versions/X.Y.*``), then ``pythonX.Y`` on ``PATH`` or in ``/usr/bin``.

Only the tests that touch Airflow run here (``pytest --airflow-free=exclude``): the tests of the layers that
import no Airflow (wire, the sandbox, ...: ``tests/support/airflow_free.py`` lists them) run once, in
``make test``, which proves each run with Airflow unimportable, so a listed test that reaches Airflow fails
there instead of losing its releases. The table says how many tests were left to ``make test``
(``pytest --collect-only --airflow-free=only`` in ``.venv``): a release's passed + failed + skipped + left is
the whole suite (counted when no pytest arguments narrow the run). ``--airflow-free=all`` after ``--`` runs
every test here too.

Set-up overlaps: every combination's virtualenv is prepared at once before the first suite runs (most of a
resolution is waiting on the package index), and a resolution whose inputs have not changed since the last
one (``.compat/<combination>/resolved-from``) is not repeated (``make e2e AIRFLOW=2.11.2`` after this).
"""

from __future__ import annotations

import argparse
import hashlib
import os
import re
import shutil
import subprocess
import sys
import time
import xml.etree.ElementTree as ElementTree
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
COMPAT = ROOT / ".compat"
# Airflow's own distributions: pinned per combination, so their uv.lock versions must not leak in.
AIRFLOW_DISTRIBUTIONS = ("apache-airflow", "apache-airflow-core", "apache-airflow-task-sdk")
LOG_TAIL_LINES = 40


@dataclass(frozen=True)
class Combination:
    """One Airflow release on one Python minor version.

    :param airflow: the exact ``apache-airflow`` version to install.
    :param python: the Python minor version, as ``"3.11"``.
    :param holds: bounds on Airflow's own dependencies that the release needs but does not declare
        (docs/compatibility.md says why each is there); the provider itself pins none of them.
    :param suite: whether ``make test-compat`` runs the suite here; ``False`` where every test already ran on the
        release (``make test``) and on the Python (another release): the built wheel still runs the example DAGs
        there (``make dist-releases``), and ``--only`` still runs the suite on it.
    """

    airflow: str
    python: str
    holds: tuple[str, ...] = ()
    suite: bool = True

    @property
    def name(self) -> str:
        return f"airflow-{self.airflow}-py{self.python}"


# Every supported release, each Python minor of the support line at least once (``make test`` is 3.3.2 on 3.11).
MATRIX = (
    Combination(airflow="2.11.2", python="3.11"),
    # 3.0.6's `dags test` needs an older FastAPI and Cadwyn than it allows, and its ObjectStoragePath refuses
    # every protocol on universal-pathlib 0.3, which it also allows. Its connection form shows a hook's extra
    # fields only when wtforms imports (the FAB provider brings it): installed as a user would.
    Combination(
        airflow="3.0.6", python="3.12", holds=("fastapi<0.118", "cadwyn<6", "universal-pathlib<0.3", "wtforms")
    ),
    Combination(airflow="3.1.8", python="3.13"),
    # svcs 26.2 breaks 3.2's in-process execution API; 3.2.2 does not bound FastAPI (0.165 fails in pydantic).
    Combination(airflow="3.2.2", python="3.12", holds=("svcs<26.2", "fastapi<0.137")),
    # The suite ran on 3.3.2 in make test (Python 3.11) and on Python 3.13 with 3.1.8: a third run of it here took
    # 205 s of CI's 37 minutes and checked no release or Python the others had not. The wheel's examples run here.
    Combination(airflow="3.3.2", python="3.13", suite=False),
)


@dataclass
class Result:
    """What one combination's run came to.

    :param combination: the Airflow and Python it ran on.
    :param passed: tests that passed.
    :param failed: tests that failed, errors included.
    :param skipped: tests skipped (on older releases: the missing Airflow feature is in each reason).
    :param setup_seconds: wall time of the virtualenv's preparation (all combinations prepare at once).
    :param seconds: wall time of the suite's run.
    :param problem: why the combination could not run at all, if it could not.
    """

    combination: Combination
    passed: int = 0
    failed: int = 0
    skipped: int = 0
    setup_seconds: float = 0.0
    seconds: float = 0.0
    problem: str | None = None

    @property
    def ok(self) -> bool:
        return self.problem is None and self.failed == 0 and self.passed > 0


class SetupError(Exception):
    """A combination could not be prepared (no interpreter, unresolvable dependencies)."""


def find_python(minor: str) -> Path:
    """Return an interpreter of the given minor version that is on this machine.

    :param minor: ``"3.11"`` and the like.
    :raises SetupError: when none is found; the message says where it looked.
    """
    pyenv_root = Path(os.environ.get("PYENV_ROOT", Path.home() / ".pyenv"))
    # Highest patch release first; a pyenv shim on PATH only works for the active version, so check each.
    builds = sorted(
        (pyenv_root / "versions").glob(f"{minor}.*/bin/python{minor}"),
        key=lambda path: [int(part) for part in re.findall(r"\d+", path.parts[-3])],
        reverse=True,
    )
    on_path = shutil.which(f"python{minor}")
    candidates = [*builds, *([Path(on_path)] if on_path else []), Path(f"/usr/bin/python{minor}")]
    for candidate in candidates:
        if candidate.is_file() and _reports_version(candidate, minor):
            return candidate
    raise SetupError(
        f"no Python {minor} here (looked in {pyenv_root}/versions, PATH and /usr/bin); install one "
        f"(pyenv, or Debian's python{minor} where the release has it) or drop {minor} from the support claim"
    )


def _reports_version(interpreter: Path, minor: str) -> bool:
    check = [str(interpreter), "-c", "import sys; print('%d.%d' % sys.version_info[:2])"]
    answer = subprocess.run(check, capture_output=True, text=True, check=False)
    return answer.returncode == 0 and answer.stdout.strip() == minor


def newest_upload(lock: Path) -> str:
    """The upload time just after the newest file in ``uv.lock``: nothing newer may enter a resolution.

    :param lock: the project's ``uv.lock``.
    """
    times = re.findall(r'upload-time = "([^"]+)"', lock.read_text())
    if not times:
        raise SetupError(f"{lock} records no upload times; cannot bound the resolution")
    newest = max(datetime.fromisoformat(stamp.replace("Z", "+00:00")) for stamp in times)
    return (newest + timedelta(seconds=1)).strftime("%Y-%m-%dT%H:%M:%SZ")


def locked_pins(uv: Path) -> str:
    """``uv.lock`` as requirement lines (all groups, every Python), less Airflow's own distributions.

    :param uv: the tools' uv binary.
    """
    export = _uv(uv, "export", "--frozen", "--no-hashes", "--no-emit-project", "--all-groups", "--no-header")
    pattern = re.compile(rf"^({'|'.join(map(re.escape, AIRFLOW_DISTRIBUTIONS))})==", re.IGNORECASE)
    return "".join(line + "\n" for line in export.splitlines() if not pattern.match(line))


def prepare(combination: Combination, uv: Path, pins: str, exclude_newer: str) -> Path:
    """Create or update the combination's virtualenv and return its Python.

    :param combination: what to install.
    :param uv: the tools' uv binary.
    :param pins: :func:`locked_pins`' text, the preferred versions.
    :param exclude_newer: the :func:`newest_upload` bound.
    """
    interpreter = find_python(combination.python)
    folder = COMPAT / combination.name
    folder.mkdir(parents=True, exist_ok=True)
    venv_python = folder / "venv" / "bin" / "python"
    if not venv_python.exists() or not _reports_version(venv_python, combination.python):
        _uv(uv, "venv", "--quiet", "--clear", "--python", str(interpreter), str(folder / "venv"))
    requested = folder / "requirements.in"
    holds = "".join(f"{hold}\n" for hold in combination.holds)
    requested.write_text(f"apache-airflow=={combination.airflow}\n{holds}-e {ROOT}[sandbox]\n")
    resolved = folder / "requirements.txt"
    # --no-config: the project's [tool.uv] pins Airflow 3.3.2 for .venv, which is exactly what varies here.
    common = ("--no-config", "--python", str(venv_python), "--exclude-newer", exclude_newer)
    dev_group = f"{ROOT / 'pyproject.toml'}:dev"  # the test tools `make test` uses
    inputs = _resolution_inputs(uv, requested.read_text(), pins, exclude_newer)
    stamp = folder / "resolved-from"
    if not resolved.exists() or not stamp.exists() or stamp.read_text() != inputs:
        stamp.unlink(missing_ok=True)
        # An existing output file is uv's list of preferred versions: start each resolution from the lock.
        resolved.write_text(pins)
        compile_ = ("pip", "compile", "--quiet", *common, str(requested), "--group", dev_group)
        _uv(uv, *compile_, "--output-file", str(resolved))
        stamp.write_text(inputs)
    _uv(uv, "pip", "sync", "--quiet", *common[:3], str(resolved))
    return venv_python


def _resolution_inputs(uv: Path, requested: str, pins: str, exclude_newer: str) -> str:
    """A digest of what a resolution depends on: equal digests resolve alike, so the second is skipped.

    :param uv: the tools' uv binary (its version decides too).
    :param requested: the combination's ``requirements.in``.
    :param pins: :func:`locked_pins`' text.
    :param exclude_newer: the :func:`newest_upload` bound.
    """
    digest = hashlib.sha256()
    uv_version = _uv(uv, "--version")
    for part in (uv_version, requested, pins, exclude_newer, (ROOT / "pyproject.toml").read_text()):
        digest.update(part.encode() + b"\0")
    return digest.hexdigest()


def prepare_all(combinations: list[Combination], uv: Path, pins: str, exclude_newer: str) -> dict[str, Path | str]:
    """Prepare every combination at once: each name maps to its venv's Python, or to why it could not be made.

    A resolution mostly waits on the package index, so preparing them side by side takes about as long as
    the slowest one instead of the sum.

    :param combinations: the chosen combinations.
    :param uv: the tools' uv binary.
    :param pins: :func:`locked_pins`' text.
    :param exclude_newer: the :func:`newest_upload` bound.
    """

    def one(combination: Combination) -> Path | str:
        try:
            return prepare(combination, uv, pins, exclude_newer)
        except SetupError as error:
            return str(error)

    with ThreadPoolExecutor(max_workers=max(1, len(combinations))) as pool:
        outcomes = list(pool.map(one, combinations))
    return {combination.name: outcome for combination, outcome in zip(combinations, outcomes, strict=True)}


def left_to_make_test(pytest_args: list[str]) -> int | None:
    """How many tests ``make test`` runs instead (Airflow-free), counted by collecting them in ``.venv``.

    :param pytest_args: the arguments given to each release's pytest; with any of them (a selection, ``-x``)
        nothing is counted, since the count is of the whole suite's Airflow-free part.
    :returns: None when not counted or when the collection fails (its output is printed).
    """
    pytest_only = {"-n", "--dist"}  # the Makefile's own: they select nothing
    given = [arg for arg in pytest_args if arg not in pytest_only and not arg.isdigit() and arg != "worksteal"]
    if given:
        return None
    command = [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:xdist", "--airflow-free=only"]
    answer = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, check=False)
    counted = re.search(r"^(\d+) tests? collected", answer.stdout, re.MULTILINE)
    if answer.returncode != 0 or counted is None:
        print(f"compat: counting the Airflow-free tests failed:\n{answer.stdout[-2000:]}{answer.stderr[-2000:]}")
        return None
    return int(counted.group(1))


def _uv(uv: Path, *arguments: str) -> str:
    answer = subprocess.run([str(uv), *arguments], cwd=ROOT, capture_output=True, text=True, check=False)
    if answer.returncode != 0:
        raise SetupError(f"uv {' '.join(arguments[:2])} failed:\n{answer.stderr.strip()}")
    return answer.stdout


def run_suite(combination: Combination, venv_python: Path, pytest_args: list[str]) -> Result:
    """Run ``pytest`` (the same as ``make test``'s) with the combination's Python and count the outcomes.

    :param combination: the combination being run.
    :param venv_python: its virtualenv's interpreter.
    :param pytest_args: extra arguments for pytest (a test selection, ``-x``...).
    """
    folder = COMPAT / combination.name
    report, log = folder / "junit.xml", folder / "pytest.log"
    report.unlink(missing_ok=True)
    env = {**os.environ, "VIRTUAL_ENV": str(venv_python.parent.parent)}
    env["PATH"] = f"{venv_python.parent}{os.pathsep}{env.get('PATH', '')}"  # tests that start `airflow`
    # The Airflow-free tests ran in make test; a later --airflow-free in pytest_args (=all) overrides this.
    command = [str(venv_python), "-m", "pytest", f"--junitxml={report}", "--airflow-free=exclude", *pytest_args]
    with log.open("w") as output:
        code = subprocess.run(command, cwd=ROOT, env=env, stdout=output, stderr=subprocess.STDOUT, check=False)
    result = Result(combination)
    if not report.exists():
        result.problem = f"pytest exited {code.returncode} without a report; see {log.relative_to(ROOT)}"
        return result
    suite = ElementTree.parse(report).getroot()
    suites = [suite] if suite.tag == "testsuite" else list(suite.iter("testsuite"))
    for part in suites:
        total, skipped = int(part.get("tests", 0)), int(part.get("skipped", 0))
        failed = int(part.get("failures", 0)) + int(part.get("errors", 0))
        result.passed += total - skipped - failed
        result.failed += failed
        result.skipped += skipped
    if code.returncode != 0 and result.failed == 0:
        result.problem = f"pytest exited {code.returncode}; see {log.relative_to(ROOT)}"
    return result


def print_table(results: list[Result], left: int | None) -> None:
    """Print one row per combination, then one closing line with the totals.

    :param results: each combination's outcome.
    :param left: the Airflow-free tests left to ``make test`` (None: they could not be counted).
    """
    print()
    header = f"{'Airflow':<9} {'Python':<7} {'passed':>7} {'failed':>7} {'skipped':>8} {'left':>6} {'suite':>6}"
    print(f"{header} {'setup':>6} {'tests':>6}  result")
    for result in results:
        verdict = "ok" if result.ok else (result.problem or "FAILED").splitlines()[0]
        where = f"{result.combination.airflow:<9} {result.combination.python:<7}"
        ran = result.passed + result.failed + result.skipped
        shares = ("?", "?") if left is None else (str(left), str(ran + left))
        counts = f"{result.passed:>7} {result.failed:>7} {result.skipped:>8} {shares[0]:>6} {shares[1]:>6}"
        print(f"{where} {counts} {result.setup_seconds:>5.0f}s {result.seconds:>5.0f}s  {verdict}")
    print("(Airflow 3.3.2 on Python 3.11 is `make test`, in .venv; setups ran side by side, before the first suite)")
    for combination in MATRIX:
        if not combination.suite and all(result.combination != combination for result in results):
            print(
                f"(Airflow {combination.airflow} on Python {combination.python}: the suite ran on that release in "
                "make test and on that Python with another; make dist-releases runs the wheel's examples there)"
            )
    print("(left: the Airflow-free tests, run once in make test with Airflow unimportable; suite: all four summed)")
    passed, failed, skipped = (sum(getattr(r, count) for r in results) for count in ("passed", "failed", "skipped"))
    print(f"compat: {passed} passed, {failed} failed, {skipped} skipped, {left} left to make test")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--uv", type=Path, default=ROOT / ".tools" / "bin" / "uv", help="the uv binary to use")
    parser.add_argument(
        "--only", action="append", default=[], metavar="AIRFLOW/PYTHON", help="run only these, e.g. 3.1.8/3.13"
    )
    parser.add_argument("pytest_args", nargs="*", help="passed to pytest (after --), e.g. tests/operators -x")
    options = parser.parse_args()
    chosen = [c for c in MATRIX if f"{c.airflow}/{c.python}" in options.only or (not options.only and c.suite)]
    if not chosen:
        parser.error(f"--only matches nothing in {[f'{c.airflow}/{c.python}' for c in MATRIX]}")
    os.environ["UV_PYTHON_DOWNLOADS"] = "never"  # interpreters come from the machine, as in the Makefile
    try:
        pins, exclude_newer = locked_pins(options.uv), newest_upload(ROOT / "uv.lock")
    except SetupError as error:
        print(f"compat: {error}", file=sys.stderr)
        return 2
    started = time.monotonic()
    print(f"== preparing {', '.join(c.name for c in chosen)} side by side", flush=True)
    with ThreadPoolExecutor(max_workers=1) as counter:
        left = counter.submit(left_to_make_test, options.pytest_args)
        prepared = prepare_all(chosen, options.uv, pins, exclude_newer)
    setup_seconds = time.monotonic() - started
    results = []
    for combination in chosen:
        started = time.monotonic()
        print(f"== Airflow {combination.airflow} on Python {combination.python}", flush=True)
        venv_python = prepared[combination.name]
        if isinstance(venv_python, Path):
            result = run_suite(combination, venv_python, options.pytest_args)
        else:
            result = Result(combination, problem=venv_python)
        result.setup_seconds, result.seconds = setup_seconds, time.monotonic() - started
        if not result.ok:
            log = COMPAT / combination.name / "pytest.log"
            tail = log.read_text().splitlines()[-LOG_TAIL_LINES:] if log.exists() and not result.problem else []
            print("\n".join([result.problem or "", *tail]).strip(), flush=True)
        results.append(result)
    print_table(results, left.result())
    return 0 if all(result.ok for result in results) else 1


if __name__ == "__main__":
    sys.exit(main())
