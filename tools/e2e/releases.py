"""What differs between Airflow majors for ``make e2e``, in one place: components, CLI, REST API, features.

``make e2e`` runs Airflow 3.3.2 from ``.venv``; ``make e2e AIRFLOW=2.11.2`` runs the release from its
``make test-compat`` virtualenv (``.compat/airflow-2.11.2-py3.11/venv``, prepared by ``tools/compat.py``'s
:func:`prepare`, the same installer). The checks in run.py and events_check.py name no release: they ask the
:class:`Release` here for paths, request bodies and the features a check needs, and a check whose feature is
missing is reported as skipped with :attr:`Release.missing`'s reason.
"""

from __future__ import annotations

import base64
import importlib.metadata
import os
import sys
import tempfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from packaging.version import Version

ROOT = Path(__file__).resolve().parents[2]


@dataclass(frozen=True)
class Feature:
    """What some checks need, and the first release that has it (both in the reason printed when skipped)."""

    what: str
    since: str


ASSET_WATCHERS = Feature("asset watchers (event-driven scheduling)", "3.0")
TRIGGER_ON_KILL = Feature("the triggerer calling a trigger's on_kill when its task is killed", "3.3")
HUMAN_IN_THE_LOOP = Feature("human-in-the-loop operators (ApprovalOperator)", "3.1")
CELERY_RUN = Feature("the Celery run of make e2e (written and checked for Airflow 3 only)", "3.0")
TASK_SPANS = Feature("a span current while a task or a trigger runs ([traces] otel_on)", "3.2")


@dataclass(frozen=True)
class Release:
    """One Airflow major as the e2e harness drives it.

    :param major: 2 or 3.
    :param components: the long-running ``airflow`` sub-commands, in start order (workers come on top).
    :param api: the stable REST API's prefix.
    :param health: a path answering once the API serves requests (no credentials needed).
    :param settings: ``AIRFLOW__...`` settings of this major; ``{api_port}`` is filled in.
    :param setup: ``airflow`` command lines run once after ``db migrate`` (a user for basic auth...).
    :param credentials: user and password for HTTP basic auth, or None when the API needs no login here.
    :param no_logical_date: how a run is triggered without a logical date: 3.x sends ``null``; 2.x has no
        such run (every run has one), so the field is left out and Airflow uses the current time.
    :param links_of: the task's extra links ``{name: url}`` from the links endpoint's answer.
    :param mark_body: the PATCH body that sets a task instance's state.
    :param xcom_query: the query string that returns an XCom's value as JSON.
    """

    major: int
    components: tuple[str, ...]
    api: str
    health: str
    settings: Mapping[str, str]
    setup: tuple[str, ...]
    credentials: tuple[str, str] | None
    no_logical_date: str
    links_of: Callable[[Any], dict[str, Any]]
    mark_body: Callable[[str], dict[str, Any]]
    xcom_query: str
    version: str = field(default="")

    def missing(self, feature: Feature) -> str | None:
        """Why a check needing ``feature`` is skipped on this release, or None when it runs."""
        if Version(self.version) >= Version(feature.since):
            return None
        return f"needs {feature.what}: Airflow {feature.since} (this is Airflow {self.version})"

    def trigger_body(self, logical_date: str | None) -> dict[str, Any]:
        if logical_date is None and self.no_logical_date == "omit":
            return {"conf": {}}
        return {"logical_date": logical_date, "conf": {}}

    def headers(self) -> dict[str, str]:
        if self.credentials is None:
            return {}
        token = base64.b64encode(":".join(self.credentials).encode()).decode()
        return {"Authorization": f"Basic {token}"}


AIRFLOW_3 = Release(
    major=3,
    components=("api-server", "scheduler", "dag-processor", "triggerer"),
    api="/api/v2",
    health="/api/v2/monitor/health",
    settings={
        "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_ALL_ADMINS": "True",
        "AIRFLOW__API__PORT": "{api_port}",
        "AIRFLOW__API__BASE_URL": "http://127.0.0.1:{api_port}",
        "AIRFLOW__CORE__EXECUTION_API_SERVER_URL": "http://127.0.0.1:{api_port}/execution/",
        "AIRFLOW__SCHEDULER__TASK_INSTANCE_HEARTBEAT_TIMEOUT": "20",
        "AIRFLOW__DAG_PROCESSOR__REFRESH_INTERVAL": "5",
    },
    setup=(),
    credentials=None,  # the simple auth manager with every user an admin
    no_logical_date="null",
    links_of=lambda answer: dict(answer["extra_links"]),
    mark_body=lambda state: {"new_state": state},
    xcom_query="?deserialize=true",
)

AIRFLOW_2 = Release(
    major=2,
    # No dag-processor: the 2.x scheduler parses the DAG files itself ([scheduler] standalone_dag_processor).
    components=("webserver", "scheduler", "triggerer"),
    api="/api/v1",
    health="/api/v1/health",
    settings={
        "AIRFLOW__WEBSERVER__WEB_SERVER_HOST": "127.0.0.1",
        "AIRFLOW__WEBSERVER__WEB_SERVER_PORT": "{api_port}",
        "AIRFLOW__WEBSERVER__BASE_URL": "http://127.0.0.1:{api_port}",
        "AIRFLOW__WEBSERVER__WORKERS": "2",
        # the webserver reads task logs from the scheduler's log server: one key for both
        "AIRFLOW__WEBSERVER__SECRET_KEY": "e2e-only-secret",
        "AIRFLOW__API__AUTH_BACKENDS": "airflow.providers.fab.auth_manager.api.auth.backend.basic_auth",
        "AIRFLOW__API__ENABLE_XCOM_DESERIALIZE_SUPPORT": "True",
        "AIRFLOW__SCHEDULER__SCHEDULER_ZOMBIE_TASK_THRESHOLD": "20",
        "AIRFLOW__SCHEDULER__MIN_FILE_PROCESS_INTERVAL": "5",
        "AIRFLOW__SCHEDULER__DAG_DIR_LIST_INTERVAL": "10",
    },
    setup=("users create -u e2e -p e2e -r Admin -e e2e@example.invalid -f e2e -l e2e",),
    credentials=("e2e", "e2e"),
    no_logical_date="omit",
    links_of=lambda answer: dict(answer),
    mark_body=lambda state: {"dry_run": False, "new_state": state},  # 2.x defaults dry_run to true
    xcom_query="?deserialize=true&stringify=false",
)

RELEASES = {2: AIRFLOW_2, 3: AIRFLOW_3}


def release_of(version: str) -> Release:
    """The :class:`Release` for an ``apache-airflow`` version such as ``"2.11.2"`` (empty: ``.venv``'s)."""
    version = version or importlib.metadata.version("apache-airflow")
    major = int(version.split(".")[0])
    if major not in RELEASES:
        raise SystemExit(f"make e2e knows Airflow {sorted(RELEASES)}.x, not {version}")
    return replace(RELEASES[major], version=version)


def airflow_bin(version: str, uv: Path) -> Path:
    """The ``bin`` folder holding that Airflow's ``airflow`` command.

    :param version: empty for ``.venv``'s Airflow (this interpreter's); else a release of ``tools/compat.py``'s
        ``MATRIX``, whose virtualenv is created or brought up to date by its :func:`prepare`.
    :param uv: the tools' uv binary (for :func:`prepare`).
    """
    if not version:
        return Path(sys.executable).parent
    sys.path.insert(0, str(ROOT / "tools"))
    import compat

    matches = [c for c in compat.MATRIX if c.airflow == version]
    if not matches:
        raise SystemExit(f"AIRFLOW={version} is not in tools/compat.py's MATRIX: {[c.airflow for c in compat.MATRIX]}")
    combination, uv = matches[0], uv.resolve()  # compat runs uv from the repository root
    print(f"== preparing {compat.COMPAT.relative_to(ROOT)}/{combination.name} (tools/compat.py)", flush=True)
    os.environ["UV_PYTHON_DOWNLOADS"] = "never"  # as make test-compat: interpreters come from the machine
    # uv leaves lock files in the temporary folder when it builds the editable package: keep them out of /tmp.
    compat.COMPAT.mkdir(exist_ok=True)  # a fresh clone has no .compat/ until a venv is made in it
    with tempfile.TemporaryDirectory(dir=compat.COMPAT, prefix="e2e-tmp-") as private:
        saved = os.environ.get("TMPDIR")
        os.environ["TMPDIR"] = private
        try:
            pins, exclude_newer = compat.locked_pins(uv), compat.newest_upload(ROOT / "uv.lock")
            venv_python = compat.prepare(combination, uv, pins, exclude_newer)
        except compat.SetupError as error:
            raise SystemExit(f"cannot prepare Airflow {version}: {error}") from error
        finally:
            if saved is None:
                del os.environ["TMPDIR"]
            else:
                os.environ["TMPDIR"] = saved
    return venv_python.parent
