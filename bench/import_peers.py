"""The provider's import cost next to peer providers', measured the same way in the same run.

A DAG file pays the import of its operator modules at every parse. Peers are the providers DAG authors put
next to this one for the same kind of work: dbt Cloud, HTTP, Airbyte and Tableau. For each, the modules a DAG
file imports (hook, operator, sensor); for this provider the hook, the two job operators' modules and the
sensor's.

How: one throw-away venv (uv, from the machine's interpreter) holds this provider (built from the checkout,
not editable: as a wheel installs) and the peers, with every package ``.venv`` has pinned to its version there;
its bytecode is cached in a temp folder (``PYTHONPYCACHEPREFIX``), as an installed wheel's is. Each run is a
fresh interpreter pinned to CPU 0 that imports ``airflow.sdk``, then times the set's modules in-process; runs
alternate across the sets so drift hits all alike. The figure per set is the median of its runs; the ratio
is this provider's median over the median of the four peers' medians. On a shared machine one set's runs
spread over a factor of two (this provider's: 6 to 12 ms), so a median of 9 runs moved by 2 ms between two
runs of the same code; the comparison takes 25 runs per set by default and shows each set's quartiles.
"""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from benchlib import ROOT, median, percentile

UV = ROOT / ".tools" / "bin" / "uv"
OURS = "this provider"
SETS: dict[str, tuple[str, tuple[str, ...]]] = {
    OURS: (
        "airflow-provider-analytics",
        (
            "airflow_provider_analytics.hooks.analytics",
            "airflow_provider_analytics.operators.workflows",
            "airflow_provider_analytics.operators.reports",
            "airflow_provider_analytics.sensors.data_sources",
        ),
    ),
    "dbt Cloud": (
        "apache-airflow-providers-dbt-cloud",
        tuple(f"airflow.providers.dbt.cloud.{kind}.dbt" for kind in ("hooks", "operators", "sensors")),
    ),
    "HTTP": (
        "apache-airflow-providers-http",
        tuple(f"airflow.providers.http.{kind}.http" for kind in ("hooks", "operators", "sensors")),
    ),
    "Airbyte": (
        "apache-airflow-providers-airbyte",
        tuple(f"airflow.providers.airbyte.{kind}.airbyte" for kind in ("hooks", "operators", "sensors")),
    ),
    "Tableau": (
        "apache-airflow-providers-tableau",
        tuple(f"airflow.providers.tableau.{kind}.tableau" for kind in ("hooks", "operators", "sensors")),
    ),
}
TIMED = """
import json, os, time
os.sched_setaffinity(0, {{0}})
import airflow.sdk
started = time.perf_counter()
for name in {modules!r}:
    __import__(name)
print(json.dumps(time.perf_counter() - started))
"""


@dataclass(frozen=True)
class PeerFigures:
    """Per set: the median ms of its runs, their quartiles and the installed version; the ratio of ours to the
    peers' median."""

    medians_ms: dict[str, float]
    quartiles_ms: dict[str, tuple[float, float]]
    versions: dict[str, str]
    ratio: float


def peer_venv(folder: Path) -> Path:
    """A venv with this provider and the peers, every other package at ``.venv``'s version; its python."""
    pins = subprocess.run(
        [UV, "pip", "freeze", "--python", sys.executable], capture_output=True, text=True, check=True
    ).stdout.splitlines()
    folder.mkdir(parents=True, exist_ok=True)
    constraints = folder / "constraints.txt"
    pinned = [line for line in pins if "==" in line and not line.startswith("airflow-provider-analytics")]
    constraints.write_text("\n".join(pinned))
    subprocess.run([UV, "venv", "--quiet", "--python", sys.executable, folder / "venv"], check=True)
    python = folder / "venv" / "bin" / "python"
    packages = [distribution for name, (distribution, _) in SETS.items() if name != OURS]
    subprocess.run(
        [UV, "pip", "install", "--quiet", "--python", python, "-c", constraints, "-r", constraints, ROOT, *packages],
        check=True,
    )
    return python


def versions_of(python: Path) -> dict[str, str]:
    """The installed version of each set's distribution."""
    code = (
        "import json, importlib.metadata as m; "
        f"print(json.dumps({{d: m.version(d) for d in {[d for d, _ in SETS.values()]!r}}}))"
    )
    installed: dict[str, str] = json.loads(subprocess.check_output([python, "-c", code], text=True))
    return {name: installed[distribution] for name, (distribution, _) in SETS.items()}


def compare(folder: Path, env: dict[str, str], runs: int) -> PeerFigures:
    """Install the venv in ``folder``, warm its bytecode, then time each set ``runs`` times, alternating.

    :param folder: a private temporary folder (the venv and its bytecode cache go there).
    :param env: the Airflow environment of the other measurements (a throw-away home, test mode).
    :param runs: interpreters per set.
    """
    python = peer_venv(folder)
    env = {**env, "PYTHONPYCACHEPREFIX": str(folder / "pycache")}
    env.pop("PYTHONDONTWRITEBYTECODE", None)

    def one(modules: tuple[str, ...]) -> float:
        done = subprocess.run(
            [python, "-c", TIMED.format(modules=modules)], env=env, capture_output=True, text=True, timeout=300
        )
        if done.returncode:
            raise SystemExit(f"the peer import run failed ({done.returncode}):\n{done.stderr[-2000:]}")
        return float(json.loads(done.stdout.strip().splitlines()[-1]))

    for _, modules in SETS.values():
        one(modules)  # fills the bytecode cache; not counted
    samples: dict[str, list[float]] = {name: [] for name in SETS}
    for _ in range(runs):
        for name, (_, modules) in SETS.items():
            samples[name].append(1000 * one(modules))
    medians = {name: median(values) for name, values in samples.items()}
    quartiles = {name: (percentile(values, 0.25), percentile(values, 0.75)) for name, values in samples.items()}
    peers = median([value for name, value in medians.items() if name != OURS])
    return PeerFigures(medians, quartiles, versions_of(python), medians[OURS] / peers)
