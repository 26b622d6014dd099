"""The soak's deployment: ``make e2e``'s cluster (tools/e2e/cluster.py) with Celery, chaos and moto's S3 server.

What the soak adds to the e2e cluster: the sandbox runs with seeded chaos and work of random length; moto's
S3 server runs as one more process of the cluster (its own log, stopped by pid); the ``analytics`` and
``soak_s3`` connections are created in the metadata database through the REST API (so the token can be rotated
there, as an operator of a real deployment would), and so is, unless ``--no-store``, the Redis connection the
analytics connection names as its rate limit store (the broker's Redis: store_accounting.py); and the settings are
sized for two cores.
"""

from __future__ import annotations

import json
import shutil
import sys
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

SOAK = Path(__file__).resolve().parent
ROOT = SOAK.parents[1]
sys.path.insert(0, str(ROOT / "tools" / "e2e"))
sys.path.insert(0, str(ROOT))

from accounting import Request  # noqa: E402
from cluster import STORE_CONN_ID, STORE_EXTRA, Cluster, Process, free_port, wait_for  # noqa: E402  (tools/e2e)
from metrics_check import Listeners  # noqa: E402
from releases import release_of  # noqa: E402

from tests.support.s3 import CREDENTIALS, REGION  # noqa: E402

CONN_ID = "analytics_default"
S3_CONN_ID = "soak_s3"
S3_BUCKET = "soak-exports"
LOAD_DAGS = ("soak_workflow", "soak_report_local", "soak_report_s3", "soak_fire_and_forget", "soak_as_code")
EVENT_DAG = "soak_events"
CANARY_DAG = "canary_loop_lag"
SYNCED_SOURCES = ("ds_warehouse", "ds_crm", "ds_events")
# The client's timeout (connection extra); a slow answer comes later than that.
CLIENT_TIMEOUT = 10.0
# The platform's per-second limit in the limited phase (limit_phase.py), per token: about two thirds of what the
# deployment sends at its busiest when nothing limits it, so that it binds (docs/deployment.md, "make soak", has
# the measurement: a 5-minute soak sends 2 to 3 requests per second on average, about 5 in its busiest 10 s; the
# last full run sent about 4 per second on average, its waits being longer and more of them deferred at once).
RATE_LIMIT = 3.0
# moto is started again on another port if it exits (its port taken between the probe and its bind).
MOTO_ATTEMPTS = 3
# The sandbox logs every /v1 request with its headers and body, and GET /_sandbox/requests answers with all that
# match its ``path`` pattern at once: about 500 bytes of JSON a request, some 10 MB for the 20,000 requests of the
# last full run. It is read in slices, by the last character of the path (together they match every path once),
# each slice cut down to the few fields the accounting reads before the next is fetched.
REQUEST_LOG_SLICES = ("[0-1]$", "[2-3]$", "[4-5]$", "[6-7]$", "[8-9]$", "[a-b]$", "[c]$", "[d-f]$", "[^0-9a-f]$")


@dataclass(frozen=True)
class SoakPlan:
    """Everything the soak's length decides, by one rule (docs/deployment.md, "make soak").

    :param minutes: how long the load runs (``SOAK_MINUTES``).
    :param seed: the chaos seed.
    :param store: every process paces the token through the rate limit store (else each alone: ``--no-store``).
    """

    minutes: float
    seed: int = 17
    store: bool = True
    limit: float | None = None  # the limited phase's requests per second (``--rate-limit``); None: RATE_LIMIT; 0: off
    in_flight: int = 60  # target; at least 50 must be in flight at every sample
    min_in_flight: int = 50
    rates: dict[str, float] = field(
        default_factory=lambda: {"rate_limited": 0.05, "server_error": 0.03, "reset": 0.01, "slow": 0.01,
                                 "execution_failure": 0.05, "report_failure": 0.05}
    )  # fmt: skip

    @property
    def seconds(self) -> float:
        return self.minutes * 60

    @property
    def work_seconds(self) -> tuple[float, float]:
        """The issue's one to ten minutes of platform work at 60 minutes, scaled down (at least 10-60 s)."""
        return max(10.0, self.minutes), max(60.0, 10.0 * self.minutes)

    @property
    def poll_seconds(self) -> float:
        return 5.0 if self.minutes < 30 else 10.0

    @property
    def rate_limit(self) -> float:
        """Requests per second per token in the limited phase (0: no phase): ``--rate-limit``, else ``RATE_LIMIT``."""
        return RATE_LIMIT if self.limit is None else self.limit

    @property
    def sync_every(self) -> float:
        """Seconds between syncs: a sensor waits for the next one, so a short soak syncs more often."""
        return 10.0 if self.minutes < 30 else 20.0

    @property
    def sample_every(self) -> float:
        """Health samples each minute; a short soak samples more often so it still has a series."""
        return min(60.0, max(10.0, self.seconds / 20))

    @property
    def drain_seconds(self) -> float:
        """How long the runs in flight at the end may take to finish: a few of the longest pieces of work."""
        return max(300.0, 3 * self.work_seconds[1] + 120)

    def sandbox_args(self) -> list[str]:
        low, high = self.work_seconds
        args = ["--speed", "demo", "--auto-sync", "0", "--work-seconds", f"{low:g}-{high:g}"]
        args += ["--chaos-seed", str(self.seed), "--chaos-slow-seconds", str(CLIENT_TIMEOUT + 2)]
        for name, rate in self.rates.items():
            args += [f"--chaos-{name.replace('_', '-')}", str(rate)]
        return args


def settings(plan: SoakPlan, dags: Path, exports: Path) -> dict[str, str]:
    """Airflow settings for two cores and the soak DAGs' own knobs."""
    return {
        "AIRFLOW__CORE__PARALLELISM": "8",
        "AIRFLOW__CORE__MAX_ACTIVE_RUNS_PER_DAG": "200",
        "AIRFLOW__CORE__MAX_ACTIVE_TASKS_PER_DAG": "64",
        "AIRFLOW__API__WORKERS": "2",
        "AIRFLOW__CELERY__WORKER_PREFETCH_MULTIPLIER": "1",
        # A task a SIGKILLed worker had taken from Redis but not started stays unacknowledged until the broker's
        # visibility timeout (6 h): the scheduler queues it again after this long instead (default 600 s, past
        # the drain's 300 s). Tasks wait seconds in the queue here (parallelism 8, six worker slots).
        "AIRFLOW__SCHEDULER__TASK_QUEUED_TIMEOUT": "150",
        "SOAK_POLL_SECONDS": str(plan.poll_seconds),
        "SOAK_EXPORTS": str(exports),
        "SOAK_CANARY_SECONDS": str(max(5.0, plan.sample_every - 5)),
        # hostnames.py for the workers' names; the canary's trigger class (dags/soak_canary.py) for the triggerer
        "PYTHONPATH": f"{ROOT / 'tools' / 'e2e'}:{dags}",
        **CREDENTIALS,
    }


class SoakDeployment:
    """The running cluster plus moto, and the REST calls the soak makes in its words.

    :param plan: the soak's plan.
    """

    def __init__(self, plan: SoakPlan) -> None:
        self.plan = plan
        self.staging = Path(__import__("tempfile").mkdtemp(prefix="apa-soak-dags-"))
        self.dags = self.staging / "dags"
        shutil.copytree(SOAK / "dags", self.dags, ignore=shutil.ignore_patterns("__pycache__"))
        self.cluster: Cluster | None = None
        self.s3_port = 0  # picked when moto starts
        self.token = ""
        self.tokens: list[str] = []  # every token the connection held, for the log check
        # StatsD on for every component: one listener per worker, one for the triggerer, one for the rest.
        self.listeners = Listeners("celery")

    def __enter__(self) -> SoakDeployment:
        release = release_of("")
        bin_dir = Path(sys.executable).parent
        cluster = Cluster(release, bin_dir, "celery", self.dags, self.plan.sandbox_args(), name="soak",
                          connection_env=False, worker_concurrency=3, rate_limit_store=self.plan.store)  # fmt: skip
        cluster.settings = {**settings(self.plan, self.dags, cluster.exports), **self.listeners.settings()}
        cluster.component_settings = self.listeners.component_settings()
        self.cluster = cluster
        try:
            self.listeners.__enter__()
            cluster.__enter__()
            self._start_moto()
            self._connections()
        except BaseException:
            self.__exit__()
            raise
        return self

    def __exit__(self, *exc_info: object) -> None:
        if self.cluster is not None:
            self.cluster.__exit__()
        self.listeners.__exit__()
        shutil.rmtree(self.staging, ignore_errors=True)

    @property
    def c(self) -> Cluster:
        assert self.cluster is not None
        return self.cluster

    def _start_moto(self) -> None:
        # The port is picked just before moto binds it, and again if moto could not: between a free port's
        # probe and the bind, any process of the deployment may take it for an outgoing connection.
        for attempt in range(1, MOTO_ATTEMPTS + 1):
            self.s3_port = free_port()
            argv = [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(self.s3_port)]
            moto = self.c.processes["moto"] = Process("moto", argv, self.c.env(), self.c.logs)

            def answered(moto: Process = moto) -> bool:
                return not moto.alive() or _get(f"{self.s3_url}/moto-api/")

            wait_for("moto's S3 server", answered, 60)
            if moto.alive():
                break
            if attempt == MOTO_ATTEMPTS:
                raise RuntimeError(f"moto's S3 server exited {MOTO_ATTEMPTS} times; its log:\n{moto.tail()}")
        self.s3().create_bucket(Bucket=S3_BUCKET)

    @property
    def s3_url(self) -> str:
        return f"http://127.0.0.1:{self.s3_port}"

    def s3(self) -> Any:
        import boto3

        return boto3.client("s3", endpoint_url=self.s3_url, region_name=REGION,
                            aws_access_key_id=CREDENTIALS["AWS_ACCESS_KEY_ID"],
                            aws_secret_access_key=CREDENTIALS["AWS_SECRET_ACCESS_KEY"])  # fmt: skip

    def _connections(self) -> None:
        # The token printed by the sandbox at start is retired at once: the connection only ever holds tokens
        # that appear nowhere else, so finding one in a log line means the deployment leaked it.
        self.token = self.rotate_token(grace_seconds=0)
        extra: dict[str, Any] = {"timeout": CLIENT_TIMEOUT, "ui_url": f"{self.c.sandbox_url}/ui"}
        if self.plan.store:  # the Redis connection first: the analytics connection names it
            store = self.c.store_connection()
            self.c.api("POST", "/connections", {**store, "connection_id": STORE_CONN_ID,
                                                "extra": json.dumps(store["extra"])})  # fmt: skip
            extra[STORE_EXTRA] = STORE_CONN_ID
        self.c.api("POST", "/connections", {"connection_id": CONN_ID, "conn_type": "analytics",
                                            "host": self.c.sandbox_url, "password": self.token,
                                            "extra": json.dumps(extra)})  # fmt: skip
        s3_extra = {"endpoint_url": self.s3_url, "region_name": REGION}
        self.c.api("POST", "/connections", {"connection_id": S3_CONN_ID, "conn_type": "aws",
                                            "login": CREDENTIALS["AWS_ACCESS_KEY_ID"],
                                            "password": CREDENTIALS["AWS_SECRET_ACCESS_KEY"],
                                            "extra": json.dumps(s3_extra)})  # fmt: skip

    def rotate_token(self, grace_seconds: float) -> str:
        """A new token on the platform (the old one valid for ``grace_seconds``); returns it."""
        body = {"grace_seconds": grace_seconds}
        if self.token:
            body["old"] = self.token  # type: ignore[assignment]
        token = str(self.c.sandbox("POST", "/_sandbox/tokens/rotate", body)["token"])
        self.tokens.append(token)
        return token

    def update_connection_token(self, token: str) -> None:
        """Put the new token in the connection, through the REST API (only the password changes)."""
        body = {"connection_id": CONN_ID, "conn_type": "analytics", "password": token}
        self.c.api("PATCH", f"/connections/{CONN_ID}?update_mask=password", body)
        self.token = token

    # --- REST, in the soak's words ----------------------------------------------------------------

    def wait_parsed(self, dag_ids: set[str]) -> None:
        def parsed() -> bool:
            errors = self.c.api("GET", "/importErrors")["import_errors"]
            if errors:
                raise AssertionError("; ".join(f"{e['filename']}: {e['stack_trace'][-800:]}" for e in errors))
            return dag_ids <= {dag["dag_id"] for dag in self.c.api("GET", "/dags?limit=100")["dags"]}

        wait_for("the soak DAGs parsed", parsed, 240, 2)

    def unpause(self, dag_id: str, paused: bool = False) -> None:
        self.c.api("PATCH", f"/dags/{dag_id}", {"is_paused": paused})

    def trigger(self, dag_id: str, logical_date: str | None = None) -> str:
        return str(
            self.c.api("POST", f"/dags/{dag_id}/dagRuns", {"logical_date": logical_date, "conf": {}})["dag_run_id"]
        )

    def in_flight(self) -> int:
        """DAG runs of the soak's DAGs queued or running now (the canary's are not load)."""
        path = "/dags/~/dagRuns?dag_id_pattern=soak_&state=queued&state=running&limit=1"
        return int(self.c.api("GET", path)["total_entries"])

    def runs(self) -> list[dict[str, Any]]:
        return _pages(self.c, "/dags/~/dagRuns?dag_id_pattern=soak_&order_by=run_after", "dag_runs")

    def task_instances(self) -> list[dict[str, Any]]:
        return [t for t in _pages(self.c, "/dags/~/dagRuns/~/taskInstances?order_by=id", "task_instances")
                if t["dag_id"].startswith("soak_")]  # fmt: skip

    def xcom(self, ti: dict[str, Any], key: str = "return_value") -> Any:
        path = f"/dags/{ti['dag_id']}/dagRuns/{ti['dag_run_id']}/taskInstances/{ti['task_id']}/xcomEntries/{key}"
        try:
            return self.c.api("GET", path + "?deserialize=true")["value"]
        except urllib.error.HTTPError as error:
            if error.code == 404:
                return None
            raise

    def failed_tries(self, ti: dict[str, Any]) -> list[tuple[int, str]]:
        """The earlier tries of a task instance that failed, each with the error its log ends on."""
        base = f"/dags/{ti['dag_id']}/dagRuns/{ti['dag_run_id']}/taskInstances/{ti['task_id']}"
        found = []
        for attempt in self.c.api("GET", base + "/tries")["task_instances"]:
            if attempt["state"] in ("failed", "up_for_retry") and attempt["try_number"] != ti["try_number"]:
                found.append((int(attempt["try_number"]), self._last_error(f"{base}/logs/{attempt['try_number']}")))
        return found

    def _last_error(self, path: str) -> str:
        try:
            events = self.c.api("GET", path + "?full_content=true")["content"]
        except (urllib.error.URLError, KeyError, ValueError) as error:
            return f"(log unreadable: {error})"
        errors = [e for e in events if isinstance(e, dict) and e.get("level") in ("error", "critical")]
        if not errors:
            return "(no error in the log: the try's process was lost)"
        last = errors[-1]
        details = last.get("error_detail") or []
        exception = details[-1] if details and isinstance(details[-1], dict) else {}
        what = f"{exception.get('exc_type', '')}: {exception.get('exc_value', '')}" if exception else ""
        return f"{last.get('event', '')} {what}".strip()[:300]

    def sandbox(self, path: str) -> Any:
        return self.c.sandbox("GET", path)

    def requests(self) -> tuple[list[Request], dict[str, float]]:
        """Every /v1 request the sandbox logged, oldest first, in the accounting's few fields; and how much was
        read (entries, MB of JSON in all, MB of the largest slice): ``REQUEST_LOG_SLICES``."""
        found: list[Request] = []
        sizes = []
        for pattern in REQUEST_LOG_SLICES:
            url = f"{self.c.sandbox_url}/_sandbox/requests?path={urllib.parse.quote(pattern)}"
            request = urllib.request.Request(url, headers=self.c.sandbox_admin_headers)
            with urllib.request.urlopen(request, timeout=120) as answer:
                raw = answer.read()
            sizes.append(len(raw) / 1e6)
            found += [Request.of(entry) for entry in json.loads(raw)["data"]]
            del raw
        found.sort(key=lambda request: request.at)
        return found, {"entries": len(found), "mb": sum(sizes), "largest_mb": max(sizes)}

    def asset_events(self, asset: str) -> list[dict[str, Any]]:
        return _pages(self.c, f"/assets/events?name_pattern={asset}&order_by=timestamp", "asset_events")


def _pages(cluster: Cluster, path: str, key: str) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = []
    while True:
        page = cluster.api("GET", f"{path}&limit=100&offset={len(found)}")
        found += page[key]
        if not page[key] or len(found) >= page["total_entries"]:
            return found


def _get(url: str) -> bool:
    import urllib.request

    with urllib.request.urlopen(url, timeout=5) as answer:
        return bool(answer.status == 200)
