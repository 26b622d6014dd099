"""The processes of a real deployment on loopback: Postgres, Redis, the sandbox and Airflow's components.

Everything lives in one private temporary folder (``AIRFLOW_HOME``, the Postgres data directory, logs) and
every process is started here, remembered by its pid and stopped by it, also when a check fails.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

from releases import Release

ROOT = Path(__file__).resolve().parents[2]
KEPT_LOGS = ROOT / ".e2e-logs"
# The rate limit store every process on the token shares its limiter through (the analytics connection's extra
# rate_limit_redis_conn_id): the Celery broker's Redis server, in a database of its own (the broker uses db 0).
STORE_CONN_ID = "analytics_rate_limits"
STORE_DB = 1
STORE_EXTRA = "rate_limit_redis_conn_id"
PG_BIN = next(
    (Path(p) for p in ("/usr/lib/postgresql/15/bin", "/usr/local/bin") if (Path(p) / "initdb").exists()), None
)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def exit_on_sigterm() -> None:
    """Make SIGTERM end the script as Ctrl-C does, so that its deployment's clean-up runs (every process stopped)."""

    def stop(signum: int, frame: object) -> None:
        raise SystemExit(128 + signum)

    signal.signal(signal.SIGTERM, stop)


def wait_for(what: str, check: Any, seconds: float, interval: float = 0.5) -> Any:
    """Call ``check`` until it returns something truthy; fail naming ``what`` after ``seconds``."""
    deadline = time.monotonic() + seconds
    while True:
        try:
            result = check()
        except (OSError, ValueError):
            result = None
        if result:
            return result
        if time.monotonic() > deadline:
            raise TimeoutError(f"{what} did not happen within {seconds:g} s")
        time.sleep(interval)


class Process:
    """One started program: its own process group, output to a log file, stopped by pid."""

    def __init__(self, name: str, argv: list[str], env: dict[str, str], logs: Path, user: str | None = None) -> None:
        self.name = name
        self.log_path = logs / f"{name}.log"
        if user and os.geteuid() == 0:
            argv = ["runuser", "-u", user, "--", *argv]
        with self.log_path.open("ab") as log:
            self.popen = subprocess.Popen(argv, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)

    @property
    def pid(self) -> int:
        return self.popen.pid

    def alive(self) -> bool:
        return self.popen.poll() is None

    def stop(self, sig: int = signal.SIGTERM, seconds: float = 20.0) -> None:
        """Signal the whole process group, wait, then SIGKILL what is left."""
        if not self.alive():
            return
        try:
            os.killpg(self.pid, sig)
            self.popen.wait(seconds)
        except subprocess.TimeoutExpired:
            os.killpg(self.pid, signal.SIGKILL)
            self.popen.wait(10)
        except ProcessLookupError:
            pass

    def tail(self, lines: int = 30) -> str:
        text = self.log_path.read_text(errors="replace") if self.log_path.exists() else ""
        return "\n".join(text.splitlines()[-lines:])


class Cluster:
    """A sandbox and a real Airflow (the release's components, workers) on Postgres.

    :param release: what differs by Airflow major (releases.py): components, settings, REST API.
    :param bin_dir: the virtualenv's ``bin`` holding that Airflow's ``airflow`` command.
    :param executor: ``local`` or ``celery`` (then Redis and two Celery workers are started too).
    :param dags: the folder Airflow parses.
    :param sandbox_args: extra options for the sandbox CLI (durations).
    :param name: names the private folder (``apa-<name>-...``) and the folder a failed run's logs are kept in.
    :param connection_env: give every component the ``analytics_default`` connection as an environment
        variable; without it, the caller creates the connection in the metadata database (REST API).
    :param settings: more environment variables for every Airflow component (``AIRFLOW__...`` settings).
    :param component_settings: more still for one component (by its name: ``triggerer``, ``worker_a``...), over
        ``settings``; a component restarted gets them again.
    :param worker_concurrency: task slots of each Celery worker.
    :param rate_limit_store: the deployment's Redis (Celery only) is the connection's rate limit store: the
        Redis connection :data:`STORE_CONN_ID` (:meth:`store_connection`) and, with ``connection_env``, the
        analytics connection's extra naming it, both as environment variables of every component.
    """

    def __init__(
        self,
        release: Release,
        bin_dir: Path,
        executor: str,
        dags: Path,
        sandbox_args: list[str],
        *,
        name: str = "e2e",
        connection_env: bool = True,
        settings: dict[str, str] | None = None,
        component_settings: dict[str, dict[str, str]] | None = None,
        worker_concurrency: int = 2,
        rate_limit_store: bool = False,
    ) -> None:
        if rate_limit_store and executor != "celery":
            raise ValueError("the rate limit store is the Celery broker's Redis: it needs executor celery")
        self.release = release
        self.bin = bin_dir
        self.executor = executor
        self.dags = dags
        self.sandbox_args = sandbox_args
        self.connection_env = connection_env
        self.settings = dict(settings or {})
        self.component_settings = dict(component_settings or {})
        self.worker_concurrency = worker_concurrency
        self.rate_limit_store = rate_limit_store
        # One folder per release: CI runs the 3.3 and 2.11 deployments side by side, and both may fail.
        self.kept_logs = KEPT_LOGS / release.version if name == "e2e" else ROOT / f".{name}" / "logs"
        self.home = Path(tempfile.mkdtemp(prefix=f"apa-{name}-"))
        os.chmod(self.home, 0o755)  # the postgres user must reach its data directory
        self.logs = self.home / "logs"
        self.logs.mkdir()
        self.exports = self.home / "exports"
        self.processes: dict[str, Process] = {}
        # The sandbox's /_sandbox control routes take this, never an API token; handed to it at start.
        self.sandbox_admin_token = secrets.token_urlsafe(32)
        names = ("api", "postgres", "sandbox", "redis", "worker_logs", "trigger_logs")
        self.ports = {name: free_port() for name in names}
        self.pg_data = self.home / "pg"
        self.tmp = self.home / "tmp"
        self.tmp.mkdir()
        self.keep_logs = False

    # --- start ----------------------------------------------------------------------------------

    def __enter__(self) -> Cluster:
        try:
            self._start_postgres()
            if self.executor == "celery":
                self._start_redis()
            self._start_sandbox()
            self.airflow("db", "migrate", timeout=300)
            for command in self.release.setup:
                self.airflow(*command.split())
            for component in self.release.components:
                self.start_component(component)
            if self.executor == "celery":
                for worker in ("worker_a", "worker_b"):
                    self.start_component(worker)
            health = f"http://127.0.0.1:{self.ports['api']}{self.release.health}"
            wait_for(f"the {self.release.components[0]} answering", lambda: _http("GET", health), 180)
        except BaseException:
            self.__exit__()
            raise
        return self

    def __exit__(self, *exc_info: object) -> None:
        for process in reversed(list(self.processes.values())):  # Postgres, started first, stops last
            process.stop()
        if self.keep_logs:  # every component's log, for a failed run (the folder is git-ignored)
            shutil.rmtree(self.kept_logs, ignore_errors=True)
            shutil.copytree(self.logs, self.kept_logs)
        shutil.rmtree(self.home, ignore_errors=True)

    def _start_postgres(self) -> None:
        if PG_BIN is None:
            raise RuntimeError("Postgres 15 (initdb, postgres) is not installed: apt-get install postgresql-15")
        if os.geteuid() == 0:
            self.pg_data.mkdir()
            shutil.chown(self.pg_data, "postgres", "postgres")
        user = "postgres" if os.geteuid() == 0 else None
        run = ["runuser", "-u", "postgres", "--"] if user else []
        subprocess.run([*run, str(PG_BIN / "initdb"), "-D", str(self.pg_data), "-U", "postgres", "--auth=trust"],
                       check=True, capture_output=True, timeout=120)  # fmt: skip
        options = f"-p {self.ports['postgres']} -k {self.pg_data} -c listen_addresses=127.0.0.1 -c fsync=off"
        self.processes["postgres"] = Process(
            "postgres", [str(PG_BIN / "postgres"), "-D", str(self.pg_data), *options.split()], dict(os.environ),
            self.logs, user,
        )  # fmt: skip
        wait_for("postgres accepting connections", self._postgres_ready, 60)
        subprocess.run(["psql", "-h", "127.0.0.1", "-p", str(self.ports["postgres"]), "-U", "postgres", "-c",
                        "CREATE DATABASE airflow"], check=True, capture_output=True, timeout=60)  # fmt: skip

    def _postgres_ready(self) -> bool:
        probe = ["psql", "-h", "127.0.0.1", "-p", str(self.ports["postgres"]), "-U", "postgres", "-c", "select 1"]
        return subprocess.run(probe, capture_output=True, timeout=10).returncode == 0

    def _start_redis(self) -> None:
        server = shutil.which("redis-server")
        if server is None:
            raise RuntimeError(
                "redis-server is not installed: make e2e EXECUTOR=celery installs it (apt-get install redis-server)"
            )
        argv = [server, "--port", str(self.ports["redis"]), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"]
        self.processes["redis"] = Process("redis", argv, dict(os.environ), self.logs)
        wait_for(
            "redis accepting connections", lambda: socket.create_connection(("127.0.0.1", self.ports["redis"]), 1), 30
        )

    def _start_sandbox(self) -> None:
        argv = [sys.executable, "-m", "airflow_provider_analytics.sandbox", "--port", str(self.ports["sandbox"]),
                *self.sandbox_args]  # fmt: skip
        env = {**os.environ, "ANALYTICS_SANDBOX_ADMIN_TOKEN": self.sandbox_admin_token}
        self.processes["sandbox"] = Process("sandbox", argv, env, self.logs)
        wait_for("the sandbox answering", lambda: self.sandbox("GET", "/_sandbox/health"), 60)

    # --- Airflow --------------------------------------------------------------------------------

    @property
    def sandbox_url(self) -> str:
        return f"http://127.0.0.1:{self.ports['sandbox']}"

    def store_connection(self) -> dict[str, Any]:
        """The Redis connection of the rate limit store, as Airflow's Redis provider reads it (``extra`` a dict)."""
        return {"conn_type": "redis", "host": "127.0.0.1", "port": self.ports["redis"], "extra": {"db": STORE_DB}}

    def env(self, hostname: str | None = None) -> dict[str, str]:
        """The environment every Airflow component shares: the same connection, DB and settings."""
        env = {k: v for k, v in os.environ.items() if not k.startswith(("AIRFLOW_", "AIRFLOW__"))}
        extra = {"ui_url": f"{self.sandbox_url}/ui"}
        if self.rate_limit_store:
            extra[STORE_EXTRA] = STORE_CONN_ID
        connection = {"conn_type": "analytics", "host": self.sandbox_url, "password": "sandbox-token", "extra": extra}
        executor = "CeleryExecutor" if self.executor == "celery" else "LocalExecutor"
        redis = f"redis://127.0.0.1:{self.ports['redis']}/0"
        env.update({
            "AIRFLOW_HOME": str(self.home / "airflow"),
            # Task and trigger logs kept with the components' logs; their log servers on ports of their own.
            "AIRFLOW__LOGGING__BASE_LOG_FOLDER": str(self.logs / "airflow"),
            "AIRFLOW__LOGGING__WORKER_LOG_SERVER_PORT": str(self.ports["worker_logs"]),
            "AIRFLOW__LOGGING__TRIGGER_LOG_SERVER_PORT": str(self.ports["trigger_logs"]),
            # Nothing outside the private folder: temporary files (2.x's web server caches in the temporary
            # folder), and gunicorn's control socket (start_component) rather than ~/.gunicorn.
            "TMPDIR": str(self.tmp),
            "AIRFLOW__CORE__DAGS_FOLDER": str(self.dags),
            "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
            "AIRFLOW__CORE__EXECUTOR": executor,
            "AIRFLOW__CORE__PARALLELISM": "8",
            "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN":
                f"postgresql+psycopg2://postgres@127.0.0.1:{self.ports['postgres']}/airflow",
            "AIRFLOW__SCHEDULER__SCHEDULER_HEARTBEAT_SEC": "2",
            "AIRFLOW__CELERY__BROKER_URL": redis,
            "AIRFLOW__CELERY__RESULT_BACKEND":
                f"db+postgresql+psycopg2://postgres@127.0.0.1:{self.ports['postgres']}/airflow",
            "AIRFLOW_VAR_ANALYTICS_EXPORT_DIR": str(self.exports),
            "PYTHONPATH": str(ROOT / "tools" / "e2e"),
        })  # fmt: skip
        if self.connection_env:
            env["AIRFLOW_CONN_ANALYTICS_DEFAULT"] = json.dumps(connection)
            if self.rate_limit_store:
                env[f"AIRFLOW_CONN_{STORE_CONN_ID.upper()}"] = json.dumps(self.store_connection())
        env.update({name: value.format(api_port=self.ports["api"]) for name, value in self.release.settings.items()})
        env.update(self.settings)
        if hostname:
            env["AIRFLOW__CORE__HOSTNAME_CALLABLE"] = f"hostnames.{hostname}"  # tools/e2e/hostnames.py
        return env

    def airflow(self, *args: str, timeout: float = 120) -> str:
        done = subprocess.run([str(self.bin / "airflow"), *args], env=self.env(), capture_output=True, text=True,
                              timeout=timeout)  # fmt: skip
        if done.returncode != 0:
            raise RuntimeError(f"airflow {' '.join(args)} failed:\n{done.stdout[-2000:]}\n{done.stderr[-3000:]}")
        return done.stdout

    def start_component(self, component: str) -> Process:
        runtime = self.home / "run" / component  # gunicorn's control socket, one per component
        runtime.mkdir(parents=True, exist_ok=True)
        if component.startswith("worker_"):
            concurrency = str(self.worker_concurrency)
            argv = [str(self.bin / "airflow"), "celery", "worker", "--concurrency", concurrency, "-H", component]
            env = self.env(hostname=component)
        else:
            argv, env = [str(self.bin / "airflow"), component], self.env()
        env.update(self.component_settings.get(component, {}))
        process = Process(component, argv, {**env, "XDG_RUNTIME_DIR": str(runtime)}, self.logs)
        self.processes[component] = process
        return process

    def restart(self, component: str, sig: int) -> None:
        """Stop a component with ``sig`` (SIGTERM: a clean stop; SIGKILL: a crash), then start it again."""
        self.processes[component].stop(sig)
        self.start_component(component)

    # --- HTTP -----------------------------------------------------------------------------------

    def api(self, method: str, path: str, body: Any = None) -> Any:
        """Call the release's stable REST API: ``path`` comes after its prefix (``/dags/...``)."""
        url = f"http://127.0.0.1:{self.ports['api']}{self.release.api}{path}"
        return _http(method, url, body, self.release.headers())

    @property
    def sandbox_admin_headers(self) -> dict[str, str]:
        """What opens the sandbox's ``/_sandbox`` control routes: its admin token (not the API token)."""
        return {"Authorization": f"Bearer {self.sandbox_admin_token}"}

    def sandbox(self, method: str, path: str, body: Any = None) -> Any:
        """Call the sandbox: a ``/_sandbox`` control route with the admin token, its ``/v1`` API with the API token."""
        headers = {"Authorization": "Bearer sandbox-token"} if path.startswith("/v1/") else self.sandbox_admin_headers
        return _http(method, f"{self.sandbox_url}{path}", body, headers)


def _http(method: str, url: str, body: Any = None, headers: dict[str, str] | None = None) -> Any:
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(url, data=data, method=method, headers={"Content-Type": "application/json",
                                                                            **(headers or {})})  # fmt: skip
    with urllib.request.urlopen(request, timeout=30) as response:
        raw = response.read()
    return json.loads(raw) if raw else {}
