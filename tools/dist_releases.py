"""``make dist-releases``, part two: the built wheel next to each supported Airflow release, running the example DAGs.

For each combination of tools/compat.py's ``MATRIX`` (release, Python minor, the release's holds), in a folder
of ``make dist-releases``'s private temporary folder that is removed as soon as the combination is done:

1. a clean virtualenv on that Python (compat.py's :func:`~compat.find_python`) gets ``apache-airflow==<release>``,
   the holds and the built wheel with the ``sandbox`` extra (not the checkout), resolved as ``make test-compat``
   resolves: every other package keeps its ``uv.lock`` version (:func:`~compat.locked_pins`) unless that release
   needs another, and nothing uploaded after the lock's newest file is considered (:func:`~compat.newest_upload`);
2. a throw-away ``AIRFLOW_HOME`` is migrated, with ``DAGS_FOLDER`` on a copy of ``example_dags/``, and the DAGs are
   registered as a deployment's DAG processor would register them (``airflow dags reserialize``);
3. the sandbox starts from that venv, and ``airflow dags test`` runs ``analytics_sync_report_download`` (sync
   sensor, deferred report generation, download) and ``analytics_workflow_outputs`` (deferred execution, its
   outputs downstream) against it; each must exit 0, every task of each run must have succeeded, and the
   downloaded file must exist with the sha256 and size the platform reports for the report;
4. the sandbox is stopped by SIGTERM to its pid.

Every combination's resolution (step 1's ``uv pip compile``, which mostly waits on the package index) starts at
once, before the first combination installs; each combination then installs and runs as soon as its own
resolution is done, :data:`SIDE_BY_SIDE` at a time. Two at once: an ``airflow dags test`` spends much of its
time waiting (on deferrals, the sandbox's state machines, SQLite), so on the 2-core CI machine two
combinations take about what one did before. Each has its own folder, ``AIRFLOW_HOME``, SQLite database and
sandbox on a port of its own; its lines are printed together when it is done.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import time
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from compat import MATRIX, Combination, SetupError, find_python, locked_pins, newest_upload
from dist_support import DISTRIBUTION, PACKAGE, ROOT, CheckFailed, clean_env, run, sandbox, sha256

# dag id -> the tasks each run must have, all succeeded.
DAG_RUNS = {
    "analytics_sync_report_download": {"warehouse_fresh", "generate", "download"},
    "analytics_workflow_outputs": {"enrich", "check_volume"},
}
# Fast state machines, and a sync of every data source each 2 s for the sensor (it needs one after the run's
# data interval).
SANDBOX_OPTIONS = ("--speed", "fast", "--auto-sync", "2")
DAG_TEST_TIMEOUT = 900
SIDE_BY_SIDE = 2  # combinations installed and run at once (the module's docstring says why two)

PROBE_MARK = "dist-check-facts:"  # Airflow's own logging may share the probe's stdout
# Run by the combination's Python in its AIRFLOW_HOME: what the metadata DB says about each run, and the
# platform's own view of the generated report. Airflow 2.11 and 3.x differ only in the XCom model's name.
PROBE = f"""
import json, sys
import airflow, {PACKAGE}
from airflow.models.dagrun import DagRun
from airflow.utils.session import create_session
try:
    from airflow.models.xcom import XComModel as XCom
except ImportError:
    from airflow.models.xcom import XCom
from {PACKAGE}.hooks.analytics import AnalyticsHook

def plain(row):
    try:
        value = XCom.deserialize_value(row)
    except Exception:
        value = row.value
    if isinstance(value, bytes):
        value = value.decode()
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            pass
    return value

runs = []
with create_session() as session:
    for run in session.query(DagRun).order_by(DagRun.id):
        rows = session.query(XCom).filter(XCom.dag_id == run.dag_id, XCom.run_id == run.run_id)
        tis = run.get_task_instances(session=session)
        runs.append({{
            "dag_id": run.dag_id,
            "state": str(run.state),
            "tasks": {{ti.task_id: [str(ti.state), ti.try_number] for ti in tis}},
            "xcom": {{f"{{row.task_id}}.{{row.key}}": plain(row) for row in rows}},
        }})
reports = {{}}
with AnalyticsHook() as hook:
    for run in runs:
        generated = run["xcom"].get("generate.return_value")
        if isinstance(generated, dict):
            reports[generated["id"]] = dict(hook.get_report(generated["id"]))
print({PROBE_MARK!r}, json.dumps({{
    "airflow": airflow.__version__,
    "provider_file": {PACKAGE}.__file__,
    "prefix": sys.prefix,
    "runs": runs,
    "reports": reports,
}}, default=str))
"""


@dataclass
class ReleaseResult:
    """What one combination came to.

    :param combination: the release, its Python and holds.
    :param install_seconds: wall time from the combination's turn to its installed venv: the rest of its
        resolution (all started together, before the first install) and the install.
    :param runs_ok: ``airflow dags test`` runs that exited 0 with every task succeeded.
    :param seconds: wall time of the whole combination.
    :param problem: the first check that did not hold, if one did not.
    :param notes: what was seen (retries, the report file), for the summary.
    """

    combination: Combination
    install_seconds: float | None = None
    runs_ok: int = 0
    seconds: float = 0.0
    problem: str | None = None
    notes: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.problem is None and self.runs_ok == len(DAG_RUNS)


def choose_combinations(only: list[str]) -> list[Combination]:
    """The MATRIX entries named ``AIRFLOW/PYTHON`` in ``only`` (all of them when it is empty).

    :raises ValueError: a name that matches nothing; the message lists the valid ones.
    """
    names = {f"{combination.airflow}/{combination.python}": combination for combination in MATRIX}
    unknown = [name for name in only if name not in names]
    if unknown:
        raise ValueError(f"--only {', '.join(unknown)} matches nothing in {sorted(names)}")
    return [combination for name, combination in names.items() if not only or name in only]


class ReleaseCheck:
    """Runs the example DAGs with the built wheel on each chosen release.

    :param uv: the uv executable.
    :param work: ``make dist-releases``'s private temporary folder; each combination gets a folder in it.
    :param wheel: the built wheel.
    """

    def __init__(self, uv: Path, work: Path, wheel: Path) -> None:
        self.uv = uv
        self.work = work
        self.wheel = wheel
        try:
            self.pins = locked_pins(uv)
            self.exclude_newer = newest_upload(ROOT / "uv.lock")
        except SetupError as error:
            raise CheckFailed(str(error)) from error

    def check_all(self, combinations: list[Combination]) -> list[ReleaseResult]:
        """Resolve every combination at once, then :meth:`check` each as soon as its resolution is done.

        :param combinations: the releases to check, in order.
        """
        folders = [self.work / "releases" / combination.name for combination in combinations]
        for folder in folders:
            folder.mkdir(parents=True)
        with ThreadPoolExecutor(max_workers=max(1, len(combinations))) as resolving:
            resolutions = [resolving.submit(self.resolve, *pair) for pair in zip(combinations, folders, strict=True)]
            with ThreadPoolExecutor(max_workers=SIDE_BY_SIDE) as checking:
                jobs = zip(combinations, folders, resolutions, strict=True)
                return list(checking.map(lambda job: self.check(*job), jobs))

    def check(self, combination: Combination, folder: Path, resolution: Future[Path]) -> ReleaseResult:
        """Install, migrate, run both DAGs, verify; never raises: a failure is the result's ``problem``.

        :param combination: the release, its Python and holds.
        :param folder: the combination's own folder, removed at the end.
        :param resolution: :meth:`resolve`'s venv Python, under way or done.
        """
        result = ReleaseResult(combination)
        started = time.monotonic()
        try:
            python = resolution.result()
            run(
                [self.uv, "pip", "sync", "--quiet", "--no-config", "--python", python, folder / "requirements.txt"],
                cwd=folder,
            )
            result.install_seconds = time.monotonic() - started
            self.run_dags(combination, python, folder, result)
        except (CheckFailed, SetupError, subprocess.TimeoutExpired) as error:
            result.problem = str(error)
        except (KeyError, IndexError, ValueError, OSError) as error:  # unexpected facts: this release's problem
            result.problem = f"{type(error).__name__}: {error}"
        finally:
            shutil.rmtree(folder, ignore_errors=True)
            result.seconds = time.monotonic() - started
        # One print of the whole block: the combination running beside this one must not cut into it.
        lines = ["ok" if result.ok else f"FAILED: {result.problem}", *result.notes]
        print(f"== Airflow {combination.airflow} on Python {combination.python}\n   " + "\n   ".join(lines), flush=True)
        return result

    def resolve(self, combination: Combination, folder: Path) -> Path:
        """A clean venv for the release, its holds and the wheel, resolved like tools/compat.py (not yet
        installed: ``folder/requirements.txt``); its Python.

        :param combination: the release, its Python and holds.
        :param folder: the combination's own folder.
        """
        venv = folder / "venv"
        run([self.uv, "venv", "--quiet", "--python", find_python(combination.python), venv], cwd=folder)
        python = venv / "bin" / "python"
        wheel = f"{DISTRIBUTION}[sandbox] @ {self.wheel.as_uri()}"
        requested = folder / "requirements.in"
        requested.write_text(
            "".join(f"{line}\n" for line in (f"apache-airflow=={combination.airflow}", *combination.holds, wheel))
        )
        resolved = folder / "requirements.txt"
        # An existing output file is uv's list of preferred versions: each keeps its lock version if it can.
        resolved.write_text(self.pins)
        # --no-config: the project's [tool.uv] pins Airflow 3.3.2, which is exactly what varies here.
        common: list[str | Path] = ["--no-config", "--python", python]
        compile_ = [self.uv, "pip", "compile", "--quiet", *common, "--exclude-newer", self.exclude_newer]
        run([*compile_, requested, "--output-file", resolved], cwd=folder)
        return python

    def run_dags(self, combination: Combination, python: Path, folder: Path, result: ReleaseResult) -> None:
        """Migrate a throw-away home, start the sandbox, ``airflow dags test`` each DAG, verify what they did."""
        airflow = python.parent / "airflow"
        dags, exports, tmp = folder / "dags", folder / "exports", folder / "tmp"
        shutil.copytree(ROOT / "example_dags", dags, ignore=shutil.ignore_patterns("__pycache__"))
        tmp.mkdir()
        env = clean_env(
            AIRFLOW_HOME=str(folder / "airflow-home"),
            AIRFLOW__CORE__LOAD_EXAMPLES="False",
            AIRFLOW__CORE__DAGS_FOLDER=str(dags),
            AIRFLOW_VAR_ANALYTICS_EXPORT_DIR=str(exports),
            TMPDIR=str(tmp),  # anything Airflow or the sandbox puts in a temporary file goes away with the folder
        )
        env["PATH"] = f"{python.parent}:{env.get('PATH', '')}"
        run([airflow, "db", "migrate"], cwd=folder, env=env)
        # As a deployment's DAG processor would: Airflow 3.0's `dags test` registers no assets, so the download
        # task (outlets) would fail there with "inactive assets" (docs/compatibility.md, note 7).
        run([airflow, "dags", "reserialize"], cwd=folder, env=env)
        with sandbox(python, *SANDBOX_OPTIONS, cwd=folder, env=env, log=folder / "sandbox.log") as (pid, connection):
            env["AIRFLOW_CONN_ANALYTICS_DEFAULT"] = connection
            failures = {dag_id: self.dags_test(airflow, dag_id, folder, env, result) for dag_id in DAG_RUNS}
            output = run([python, "-c", PROBE], cwd=folder, env=env, timeout=300).splitlines()
            facts = json.loads([line for line in output if line.startswith(PROBE_MARK)][-1].removeprefix(PROBE_MARK))
        result.notes.append(f"the sandbox (pid {pid}) stopped on SIGTERM")
        self.verify(combination, facts, failures, exports, result)

    @staticmethod
    def dags_test(airflow: Path, dag_id: str, folder: Path, env: dict[str, str], result: ReleaseResult) -> str:
        """``airflow dags test <dag_id>``, its output in a log file; "" when it exited 0, else the log's tail."""
        log = folder / f"{dag_id}.log"
        begun = time.monotonic()
        with log.open("w") as output:
            code = subprocess.run(
                [airflow, "dags", "test", dag_id], cwd=folder, env=env, stdout=output, stderr=subprocess.STDOUT,
                timeout=DAG_TEST_TIMEOUT, check=False,
            ).returncode  # fmt: skip
        result.notes.append(f"airflow dags test {dag_id}: exit {code}, {time.monotonic() - begun:.0f} s")
        if code == 0:
            return ""
        tail = log.read_text(errors="replace").strip().splitlines()[-25:]
        return f"airflow dags test {dag_id} exited {code}:\n  " + "\n  ".join(tail)

    def verify(
        self,
        combination: Combination,
        facts: dict[str, Any],
        failures: dict[str, str],
        exports: Path,
        result: ReleaseResult,
    ) -> None:
        """The installed Airflow and wheel, each run's tasks, and the report file against the platform's report."""
        if facts["airflow"] != combination.airflow:
            raise CheckFailed(f"the venv runs Airflow {facts['airflow']}, not {combination.airflow}")
        if not facts["provider_file"].startswith(facts["prefix"]):
            raise CheckFailed(f"the provider was imported from {facts['provider_file']}, not the installed wheel")
        runs = {run["dag_id"]: run for run in facts["runs"]}
        problems = []
        for dag_id, tasks in DAG_RUNS.items():
            dag_run = runs.get(dag_id, {"state": "missing", "tasks": {}})
            states = {task: state for task, (state, _) in dag_run["tasks"].items()}
            retried = [f"{task} (try {tries})" for task, (_, tries) in dag_run["tasks"].items() if tries > 1]
            if retried:
                result.notes.append(f"{dag_id}: retried {', '.join(retried)}")
            succeeded = dag_run["state"] == "success" and states == dict.fromkeys(tasks, "success")
            if not succeeded:
                problems.append(f"{dag_id}: run {dag_run['state']}, tasks {dag_run['tasks']}")
            if failures[dag_id]:
                problems.append(failures[dag_id])
            result.runs_ok += succeeded and not failures[dag_id]
        if problems:
            raise CheckFailed("\n".join(problems))
        report_run, workflow_run = runs["analytics_sync_report_download"], runs["analytics_workflow_outputs"]
        xcom = report_run["xcom"]
        download, generated = xcom.get("download.download"), xcom.get("generate.return_value")
        if not isinstance(download, dict) or not isinstance(generated, dict) or generated["id"] not in facts["reports"]:
            raise CheckFailed(f"{report_run['dag_id']} left no report and download in XCom: {xcom}")
        platform = facts["reports"][generated["id"]]
        path = Path(str(download["uri"]).removeprefix("file://"))
        if not path.is_file() or not path.is_relative_to(exports):
            raise CheckFailed(f"the downloaded report {download['uri']} is not a file under {exports}")
        digest, size = sha256(path), path.stat().st_size
        if (digest, size) != (platform["sha256"], platform["size_bytes"]) or digest != download["sha256"]:
            raise CheckFailed(
                f"{path.name}: sha256 {digest}, {size} bytes; the task said {download['sha256']}, the platform says"
                f" {platform['sha256']}, {platform['size_bytes']} bytes"
            )
        result.notes.append(
            f"report {generated['id']} -> {path.relative_to(exports)}: {size} bytes, sha256"
            f" {platform['sha256'][:16]}... as the platform reports it"
        )
        result.notes.append(f"check_volume returned {workflow_run['xcom'].get('check_volume.return_value')!r}")


def print_release_table(results: list[ReleaseResult]) -> None:
    """One row per combination: release, Python, install seconds, dag runs ok."""
    print(f"\n{'release':<9} {'python':<7} {'install':>8} {'dag runs ok':>12} {'total':>7}  result")
    for result in results:
        install = f"{result.install_seconds:.0f} s" if result.install_seconds is not None else "-"
        verdict = "ok" if result.ok else (result.problem or "FAILED").splitlines()[0]
        runs = f"{result.runs_ok}/{len(DAG_RUNS)}"
        print(
            f"{result.combination.airflow:<9} {result.combination.python:<7} {install:>8} {runs:>12}"
            f" {result.seconds:>5.0f} s  {verdict}"
        )
