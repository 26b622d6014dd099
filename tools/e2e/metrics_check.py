"""``make e2e``'s metrics: StatsD on for every Airflow component, a listener per kind of process, and the checks.

Every component sends Airflow's metrics (``[metrics] statsd_on``, tags after the name: ``statsd_influxdb_enabled``)
to a real UDP listener that this script runs (tests/support/statsd.py, the metrics tests' listener, reading in a
thread): the
processes that run tasks to one port each (LocalExecutor: the scheduler, whose executor starts the task processes;
Celery: each worker), the triggerer to another, everything else (api-server or webserver, dag-processor, the
``airflow`` commands, a Celery deployment's scheduler) to a third. So a check can tell *where* a metric came from.

The checks run last. First a wait held on a worker and a deferred wait (tools/e2e/dags/e2e_waits.py) each get two
429s with ``Retry-After: 3`` on their polls (a fault queued on the sandbox for their own execution's path, queued
once both tasks poll: one on the worker, one deferred in the triggerer), so that the rate limiter of each process
is throttled by the platform and reports it; the sandbox has no other 429 in ``make e2e``. Then what arrived is
read. (Three seconds, longer than two of the waits' one-second polls: with a rate limit store, store_check.py
shows that each 429's pause held the other process's polls, which without a store would go on through it.)
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable
from typing import Any

from cluster import ROOT, wait_for
from deployment import Checks, Deployment, expect

sys.path.insert(0, str(ROOT))

from airflow_provider_analytics.wire._observer import RETRY_CAUSES, PauseSource
from tests.support.statsd import AIRFLOW_PREFIX, Metric, StatsdListener, statsd_environment

WORKER_WAIT, DEFERRED_WAIT = "analytics_e2e_worker_wait", "analytics_e2e_deferred_wait"
WORKFLOW = "wf_sessionize_events"
POLL_ROUTE = "/v1/workflows/WORKFLOW_ID/executions/EXECUTION_ID"
INJECTED_429 = 2
RETRY_AFTER = 3  # seconds, the injected 429s' Retry-After
# The e2e sandbox's executions take 15 s (run.py: --execution-seconds 15), by its own timestamps.
EXECUTION_SECONDS = 15.0
PROVIDERS = f"{AIRFLOW_PREFIX}.analytics_platform."
NAMES = ("requests", "request_duration", "retries", "rate_limited", "limiter.queued", "limiter.pace",
         "limiter.queue_depth", "limiter.share", "limiter.pauses", "waits_in_flight", "work_duration",
         "downloaded_bytes")  # fmt: skip
# Every tag's values are from a bounded set (docs/metrics.md, "Tags"): a route is its template with its parameters
# in capitals, each other segment a word of the contract's paths (lower case and hyphens: no id has that shape).
ROUTE = re.compile(r"^/v1(/([a-z-]+|[A-Z_]+))+$")
TAG_VALUES: dict[str, Callable[[str], bool]] = {
    "conn_id": lambda value: value == "analytics_default",
    "method": lambda value: value in ("GET", "POST", "PUT"),
    "route": lambda value: bool(ROUTE.match(value)),
    "status_class": lambda value: value in ("2xx", "3xx", "4xx", "5xx", "no_answer"),
    "cause": lambda value: value in RETRY_CAUSES,
    "source": lambda value: value in {source.value for source in PauseSource},
    "kind": lambda value: value in ("execution", "report", "sync"),
    "scope": lambda value: value in ("process", "store"),
    "outcome": lambda value: value in ("success", "failure"),
}


class Listeners:
    """One StatsD listener per kind of process, and the ``[metrics]`` settings that point at them.

    Each reads in a thread from ``__enter__`` until :meth:`read`, which is called once, when every check has sent
    what it sends (``__exit__`` reads too, if nothing did, to stop the threads), then closes the sockets.

    :param executor: ``local`` (one listener for the task side: the scheduler) or ``celery`` (one per worker).
    """

    def __init__(self, executor: str) -> None:
        self.workers = ("worker_a", "worker_b") if executor == "celery" else ("scheduler",)
        self.listeners = {name: StatsdListener() for name in (*self.workers, "triggerer", "others")}
        self.others: dict[str, int] = {}  # Airflow's own metrics each listener got (not kept)
        self._read: dict[str, list[Metric]] | None = None

    def __enter__(self) -> Listeners:
        for listener in self.listeners.values():
            listener.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        try:
            self.read()
        finally:
            for listener in self.listeners.values():
                listener.close()

    def settings(self) -> dict[str, str]:
        """``[metrics]`` for every Airflow process: the components below have a port of their own."""
        return statsd_environment(self.listeners["others"].port)

    def component_settings(self) -> dict[str, dict[str, str]]:
        """The port of each component that has a listener of its own (the triggerer, the task side)."""
        return {name: {"AIRFLOW__METRICS__STATSD_PORT": str(self.listeners[name].port)}
                for name in (*self.workers, "triggerer")}  # fmt: skip

    def read(self) -> dict[str, list[Metric]]:
        """The provider's metrics each listener got, by its name; read once (it stops the threads)."""
        if self._read is None:
            self._read = {}
            for name, listener in self.listeners.items():
                every = listener.read()
                self._read[name] = [metric for metric in every if metric.name.startswith(PROVIDERS)]
                self.others[name] = len(every) - len(self._read[name])
        return self._read


def named(metrics: list[Metric], name: str, **tags: str) -> list[Metric]:
    """The metrics of ``name`` (without Airflow's prefix) whose tags include ``tags``."""
    wanted = f"{AIRFLOW_PREFIX}.{name}"
    return [m for m in metrics if m.name == wanted and all(m.tags.get(k) == v for k, v in tags.items())]


def _path(execution: dict[str, Any]) -> str:
    return f"/v1/workflows/{execution['workflow_id']}/executions/{execution['id']}"


def _polled(deployment: Deployment, path: str) -> bool:
    answers = deployment.cluster.sandbox("GET", f"/_sandbox/requests?path={re.escape(path)}$")["data"]
    return any(entry["method"] == "GET" for entry in answers)


def _throttle(deployment: Deployment, execution: dict[str, Any]) -> str:
    """Queue two 429s with ``Retry-After: 3`` for the polls of this execution only; returns its path."""
    path = _path(execution)
    fault = {"kind": "status", "code": 429, "retry_after": RETRY_AFTER, "method": "GET", "path": f"{path}$",
             "times": INJECTED_429}  # fmt: skip
    deployment.cluster.sandbox("POST", "/_sandbox/faults", fault)
    return path


def _refused(deployment: Deployment, path: str) -> int:
    answers = deployment.cluster.sandbox("GET", f"/_sandbox/requests?path={re.escape(path)}$")["data"]
    return sum(1 for entry in answers if entry["status"] == 429)


def provoke(deployment: Deployment) -> dict[str, str]:
    """A wait held on a worker and a deferred one, each refused twice by the platform; both must succeed."""
    runs = {}
    for dag_id in (WORKER_WAIT, DEFERRED_WAIT):
        deployment.unpause(dag_id)
        runs[dag_id] = deployment.trigger(dag_id)
    executions = {}
    for dag_id, state in ((WORKER_WAIT, "running"), (DEFERRED_WAIT, "deferred")):
        deployment.wait_task_state(dag_id, runs[dag_id], "wait", state)
        run_id = runs[dag_id]
        [executions[dag_id]] = wait_for(
            f"{dag_id}'s execution", lambda r=run_id: deployment.executions_of_run(WORKFLOW, r), 60
        )
    # Both polls are armed only once both processes poll, so that the 429s of each land while the other polls:
    # store_check.py reads whether the other process was held around them, which it cannot tell from idle. A task
    # deferred is not yet a trigger polling (the triggerer picks it up, then staggers its first poll): each
    # execution's path must have been polled first, or a CI run saw the worker's 429s before the triggerer's first poll.
    for execution in executions.values():
        path = _path(execution)
        wait_for(f"a poll of {path}", lambda p=path: _polled(deployment, p), 60)
    paths = {dag_id: _throttle(deployment, execution) for dag_id, execution in executions.items()}
    for dag_id, state in ((WORKER_WAIT, "running"), (DEFERRED_WAIT, "deferred")):
        task = deployment.task(dag_id, runs[dag_id], "wait")
        expect(task["state"] == state, f"{dag_id} was {task['state']}, not {state}, when its 429s were queued")
    for dag_id, run_id in runs.items():
        state = deployment.wait_run(dag_id, run_id)
        expect(state == "success", f"{dag_id} {run_id} ended {state}")
        refused = _refused(deployment, paths[dag_id])
        expect(refused == INJECTED_429, f"{dag_id}: the sandbox answered {refused} 429s to its polls, not 2")
    return paths


def _values(metrics: list[Metric], name: str, **tags: str) -> list[float]:
    return [metric.value for metric in named(metrics, f"analytics_platform.{name}", **tags)]


def _requests_answered(metrics: list[Metric]) -> tuple[int, int]:
    answered = _values(metrics, "requests", conn_id="analytics_default", status_class="2xx")
    timed = _values(metrics, "request_duration", conn_id="analytics_default", status_class="2xx")
    return int(sum(answered)), len(timed)


def _wait_counted(metrics: list[Metric], where: str) -> str:
    """``waits_in_flight`` of an execution rose and came back to 0, and ``work_duration`` came, in ``metrics``."""
    gauge = _values(metrics, "waits_in_flight", kind="execution")
    ended = _values(metrics, "work_duration", kind="execution", outcome="success")
    expect(any(v >= 1 for v in gauge) and 0 in gauge, f"{where}: waits_in_flight{{kind=execution}} sent {gauge}")
    expect(bool(ended), f"{where}: no work_duration{{kind=execution,outcome=success}}")
    return (f"waits_in_flight max {max(gauge):g} ({len(gauge)} values, back to 0); work_duration "
            f"{len(ended)}, max {max(ended) / 1000:.1f} s")  # fmt: skip


def _throttled(metrics: list[Metric], where: str) -> str:
    """The limiter's metrics of a process the platform refused twice (and nothing else ever refuses in e2e)."""
    refused = sum(_values(metrics, "rate_limited", method="GET", route=POLL_ROUTE))
    every_refusal = sum(_values(metrics, "rate_limited"))
    retried = sum(_values(metrics, "retries", cause="rate_limited"))
    pauses = sum(_values(metrics, "limiter.pauses", source="retry_after"))
    pace, depth = _values(metrics, "limiter.pace"), _values(metrics, "limiter.queue_depth")
    queued = _values(metrics, "limiter.queued")
    found = (f"rate_limited {refused:g} on {POLL_ROUTE}, retries(rate_limited) {retried:g}, pauses(retry_after) "
             f"{pauses:g}, pace {len(pace)} values, queue_depth {len(depth)}, queued {len(queued)}")  # fmt: skip
    expect(refused == every_refusal == INJECTED_429, f"{where}: {found}; every rate_limited: {every_refusal:g}")
    expect(retried == INJECTED_429 and pauses >= 1, f"{where}: {found}")
    expect(bool(pace) and max(pace) > 0 and bool(depth) and bool(queued), f"{where}: {found}")
    return (f"{found}; pace max {max(pace):g}/s, queued max {max(queued):.0f} ms, queue_depth max "
            f"{max(depth):g}")  # fmt: skip


def bounded_tags(metrics: list[Metric], forbidden: set[str]) -> str:
    """Every name is one of docs/metrics.md's; every tag one of its tags, with a value from its bounded set, and
    no name or value holds an id the platform handed out or a token (``forbidden``)."""
    series = {(metric.name, tuple(sorted(metric.tags.items()))) for metric in metrics}
    wrong = []
    for name, tags in sorted(series):
        short = name.removeprefix(PROVIDERS)
        if short not in NAMES:
            wrong.append(f"name {name}")
        for key, value in tags:
            if key not in TAG_VALUES or not TAG_VALUES[key](value):
                wrong.append(f"{short} {key}={value}")
            if any(secret in value or secret in name for secret in forbidden):
                wrong.append(f"{short} {key}={value} (an id or a token)")
    expect(bool(series), "no analytics_platform metric arrived at all")
    expect(not wrong, "; ".join(wrong[:10]))
    routes = sorted({dict(tags).get("route", "") for _, tags in series} - {""})
    return f"{len(metrics)} metrics in {len(series)} series, {len(routes)} routes: {', '.join(routes)}"


def platform_ids(deployment: Deployment) -> set[str]:
    """Every id the sandbox handed out in this run, and the tokens."""
    cluster = deployment.cluster
    ids = {cluster.sandbox_admin_token, "sandbox-token"}
    for record in cluster.sandbox("GET", "/_sandbox/executions")["data"]:
        ids |= {record["id"], record["workflow_id"]}
    ids |= {record["id"] for record in cluster.sandbox("GET", "/_sandbox/reports")["data"]}
    for listing in ("/v1/workflows", "/v1/dashboards", "/v1/charts", "/v1/data-sources"):
        ids |= {record["id"] for record in cluster.sandbox("GET", listing)["data"]}
    return ids


def metrics_arrived(deployment: Deployment, checks: Checks, listeners: Listeners) -> dict[str, str]:
    """The last checks of ``make e2e``: the provider's metrics, read where each process sent them. Returns the path
    each of the two waits polled, by DAG id (empty when the throttled check failed), for store_check.py."""
    workers = listeners.workers
    arrived: dict[str, list[Metric]] = {}
    paths: dict[str, str] = {}

    def refused_twice() -> str:
        paths.update(provoke(deployment))
        arrived.update(listeners.read())
        return f"{WORKER_WAIT} and {DEFERRED_WAIT}: 2 x 429 each on {len(paths)} polled executions, both succeeded"

    def read() -> dict[str, list[Metric]]:
        if not arrived:
            arrived.update(listeners.read())
        return arrived

    checks.check("metrics: a wait on a worker and a deferred one, each refused twice (429)", refused_twice)

    def requests_on_each_worker() -> str:
        found = {name: _requests_answered(read()[name]) for name in workers}
        for name, (answered, timed) in found.items():
            expect(answered > 0 and timed > 0, f"{name}: {answered} requests 2xx, {timed} request_duration")
        return "; ".join(f"{name}: requests(2xx) {a}, request_duration {t}" for name, (a, t) in found.items())

    def worker_wait() -> str:
        return _wait_counted([m for name in workers for m in read()[name]], "task side")

    def triggerer_wait() -> str:
        metrics = read()["triggerer"]
        detail = _wait_counted(metrics, "triggerer")
        longest = max(_values(metrics, "work_duration", kind="execution", outcome="success"))
        expect(longest >= (EXECUTION_SECONDS - 1) * 1000, f"work_duration max {longest:g} ms, under 15 s")
        answered, _ = _requests_answered(metrics)
        expect(answered > 0, "no requests(2xx) from the triggerer")
        return f"{detail}; requests(2xx) {answered}"

    def nothing_from_the_rest() -> str:
        ours = read()["others"]
        expect(not ours, f"{len(ours)} analytics_platform metrics, e.g. {ours[:3]}")
        return f"none of the provider's; {listeners.others['others']} of Airflow's own"

    def bounded() -> str:
        return bounded_tags([m for found in read().values() for m in found], platform_ids(deployment))

    where = "the scheduler (LocalExecutor: its task processes)" if workers == ("scheduler",) else "each Celery worker"
    checks.check(f"metrics from {where}: requests answered 2xx", requests_on_each_worker)
    checks.check("metrics from the task side: a wait held on the worker (waits_in_flight, work_duration)", worker_wait)
    checks.check("metrics from the triggerer: a deferred wait (waits_in_flight, work_duration)", triggerer_wait)
    checks.check("metrics from the task side: rate_limited, retries, limiter.pauses/pace/queue_depth/queued",
                 lambda: _throttled([m for name in workers for m in read()[name]], "task side"))  # fmt: skip
    checks.check("metrics from the triggerer: rate_limited, retries, limiter.pauses/pace/queue_depth/queued",
                 lambda: _throttled(read()["triggerer"], "triggerer"))  # fmt: skip
    checks.check("metrics: none from the components that run no task or trigger", nothing_from_the_rest)
    checks.check("metrics: names and tags bounded (no id, no token)", bounded)
    return paths
