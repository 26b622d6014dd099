"""The soak's invariants, each a function from what was collected to the violations it finds.

Everything comes from records, not logs: the sandbox's (executions, reports, requests, injected faults, sync
attempts, the counters of its per-second rate limit) and Airflow's REST API (runs, task instances, XComs, asset
events), plus the files themselves; only the check that no task gave up on the rate limit also reads the log
files. A violation names its run and task, so a failed soak says where to look.
"""

from __future__ import annotations

import hashlib
import itertools
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

TERMINAL_TI = {"success", "failed", "skipped", "upstream_failed", "removed"}
# The task instances that start platform work, and which kind: their attempt chains are counted.
JOB_TASKS = {
    ("soak_workflow", "execute"): "execution",
    ("soak_fire_and_forget", "start"): "execution",
    ("soak_as_code", "run_workflow"): "execution",
    ("soak_report_local", "generate"): "report",
    ("soak_report_s3", "generate"): "report",
    ("soak_events", "sales_report"): "report",
}
WAITS_FOR_THE_END = {key for key in JOB_TASKS if key != ("soak_fire_and_forget", "start")}
DOWNLOADS = {"soak_report_local": "generate", "soak_report_s3": "generate", "soak_events": "sales_report"}
FAILED_WORK = {"failed"}
# How the error of a try the platform failed reads (the sandbox's chaos failures of executions and reports).
GENUINE_ERRORS = ("(chaos)", "render_failed", "report failed")
# A sync seen by the watcher this shortly before its triggerer was told to stop (or while it stopped) may be lost:
# the watermark is written, the event not yet handed on (docs/events.md).
LOST_EVENT_WINDOW = 3.0
# The tasks that wait on the platform (each holds one wait while it runs): the waits for executions and reports,
# and the sensors. The waits for executions and reports can be followed in the request log, one path each; the
# sensors of one data source all poll the same path, so only their number counts (the floor of the gaps).
WAITING_TASKS = {*WAITS_FOR_THE_END, ("soak_report_local", "fresh"), ("soak_report_s3", "fresh"),
                 ("soak_fire_and_forget", "events_fresh")}  # fmt: skip
# The data source the event trigger watches (dags/soak_events.py) and the asset its syncs update.
WATCHED_SOURCE, WATCHED_ASSET = "ds_warehouse", "soak-warehouse-synced"
# The event-driven DAG's watcher: one wait for the whole soak, the only poller of its path.
WATCHED_PATH = f"/v1/data-sources/{WATCHED_SOURCE}/sync"
# The watcher polls until the deployment stops, after the request log was read: a fault on one of its polls this
# shortly before the log's end may have its answer after the read (a slow answer holds the poll for the client's
# timeout, then the poll is sent again after a backoff, or at the next poll interval).
WATCHER_PENDING_SECONDS = 60.0


@dataclass(frozen=True)
class Violation:
    invariant: str
    run_id: str
    task_id: str
    detail: str


@dataclass(frozen=True, slots=True)
class Request:
    """One ``/v1`` request of the sandbox's log, in the fields the accounting reads (the log also keeps every
    header and body: soak_deployment.py reads it in slices and keeps only these).

    :param method: the HTTP method.
    :param path: the URL path.
    :param status: the status answered (0: the connection was dropped).
    :param request_id: the ``X-Request-Id`` of the answer.
    :param at: when it arrived (epoch seconds; the sandbox's clock is the wall clock in the soak).
    :param key: its ``Idempotency-Key`` ("" when it had none).
    """

    method: str
    path: str
    status: int
    request_id: str
    at: float
    key: str = ""

    @classmethod
    def of(cls, entry: dict[str, Any]) -> Request:
        """From one entry of ``GET /_sandbox/requests``."""
        key = (entry.get("headers") or {}).get("idempotency-key", "")
        return cls(entry["method"], entry["path"], int(entry["status"]), entry["request_id"],
                   when(entry["received_at"]), key)  # fmt: skip


@dataclass(frozen=True)
class LimitStep:
    """One change of the platform's per-second limit (limit_phase.py), with the sandbox's counters after it.

    :param at: when it was made (epoch seconds).
    :param per_second: the limit from then on (None: lifted).
    :param headers: whether answers carry the ``X-RateLimit-*`` headers from then on.
    :param allowed: requests the per-second limit had let through since the sandbox started.
    :param refused: requests it had refused (429) since the sandbox started: the chaos's 429s are not counted.
    """

    at: float
    per_second: float | None
    headers: bool
    allowed: int
    refused: int


@dataclass(frozen=True)
class LimitPart:
    """A stretch of the limited phase with one setting: from ``start`` to ``end`` (epoch seconds)."""

    start: float
    end: float
    per_second: float
    headers: bool
    allowed: int  # let through by the per-second limit in this stretch
    refused: int  # refused by it

    @property
    def name(self) -> str:
        return "with X-RateLimit headers" if self.headers else "without headers"


@dataclass
class LimitRecord:
    """The limited phase: what was asked for and the changes made (none when ``per_second`` is 0: no phase).

    :param per_second: the limit asked for (``--rate-limit``); 0 turns the phase off.
    :param planned: when the limit was to be set, its headers switched off, and it lifted (epoch seconds).
    :param steps: the changes made, in order.
    """

    per_second: float = 0.0
    planned: tuple[float, ...] = ()
    steps: list[LimitStep] = field(default_factory=list)

    def parts(self) -> list[LimitPart]:
        """The stretches that had a limit, each ended by the next change (its counters are the difference)."""
        return [LimitPart(step.at, after.at, step.per_second, step.headers, after.allowed - step.allowed,
                          after.refused - step.refused)
                for step, after in itertools.pairwise(self.steps) if step.per_second is not None]  # fmt: skip

    def window(self) -> tuple[float, float] | None:
        """From the limit set to the limit lifted (epoch seconds), or None when there was no limited phase."""
        parts = self.parts()
        return (parts[0].start, parts[-1].end) if parts else None


@dataclass(frozen=True)
class Wait:
    """One wait that the request log follows: one task's polls of its execution or report, or the watcher's.

    :param run_id: the run of the task that waits ("" for the watcher).
    :param task_id: the task (the watcher: ``watcher``).
    :param path: the path it polls.
    :param answers: when its polls were answered with 200 (not a faulted answer), oldest first, up to the first
        that came after the work had ended (that one ends the wait; a later read of the path, as a download's,
        is not part of it).
    """

    run_id: str
    task_id: str
    path: str
    answers: tuple[float, ...]

    def gaps(self) -> list[tuple[float, float]]:
        """Each stretch between two answers in a row: how long the wait went without a useful answer."""
        return list(itertools.pairwise(self.answers))


@dataclass
class Collected:
    """What the soak read at its end (see soak.py's ``collect``)."""

    runs: list[dict[str, Any]]
    tis: list[dict[str, Any]]
    xcoms: dict[tuple[str, str, str], Any]  # (run id, task id, key) -> value
    executions: list[dict[str, Any]]
    reports: list[dict[str, Any]]
    requests: list[Request]  # every /v1 request the sandbox received, in order of arrival
    injected: list[dict[str, Any]]
    syncs: list[dict[str, Any]]  # ds_warehouse's sync attempts
    asset_events: list[dict[str, Any]]
    exports: Path
    s3_objects: dict[str, bytes]
    s3_open_uploads: list[str]
    log_files: list[Path]
    tokens: list[str]
    triggerer_stops: list[tuple[float, float]]  # when each stop was signalled, and when the process was gone
    # When a Celery worker was killed or the scheduler restarted (epoch seconds): a worker-side wait whose worker
    # died is answered again only once the scheduler has retried it, which a scheduler restart delays.
    task_handovers: list[float] = field(default_factory=list)
    # (run id, task id) -> the earlier tries that failed, with the error each ended on
    failed_tries: dict[tuple[str, str], list[tuple[int, str]]] = field(default_factory=dict)
    limit: LimitRecord = field(default_factory=LimitRecord)  # the limited phase
    load: tuple[float, float] = (0.0, 0.0)  # when the load started and ended (epoch seconds)
    poll_seconds: float = 5.0  # every wait's poll interval
    notes: dict[str, Any] = field(default_factory=dict)  # figures the invariants found on the way
    # The provider's metrics each StatsD listener kept, by kind of process (metrics_accounting.py): Metric lists.
    metrics: dict[str, list[Any]] = field(default_factory=dict)
    # The rate limit store's keys at the end, each with what it holds (store_accounting.py); None: the soak ran
    # without one (--no-store), each process pacing the token alone.
    store: dict[str, list[str]] | None = None


def when(value: str | None) -> float:
    return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp() if value else 0.0


def chains(collected: Collected) -> dict[tuple[str, str], list[dict[str, Any]]]:
    """The platform work of each task instance, oldest first: (run id, task id) -> records."""
    found: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
    for execution in collected.executions:
        named = execution.get("inputs") or {}
        if "run" in named:
            found[(named["run"], named.get("task", ""))].append(execution)
    for report in collected.reports:
        named = report.get("parameters") or {}
        if "run" in named:
            found[(named["run"], named.get("task", ""))].append(report)
    for records in found.values():
        records.sort(key=lambda record: when(record["created_at"]))
    return found


def tries_the_platform_did_not_fail(collected: Collected) -> list[tuple[str, str, int, str]]:
    """Failed tries not explained by a failed piece of platform work: (run, task, try, error).

    A try the platform failed ends on the platform's error (the sandbox's chaos failures say so).
    """
    return [(run_id, task_id, number, error)
            for (run_id, task_id), tries in sorted(collected.failed_tries.items())
            for number, error in tries if not any(mark in error for mark in GENUINE_ERRORS)]  # fmt: skip


def tis_by_key(collected: Collected) -> dict[tuple[str, str], dict[str, Any]]:
    return {(ti["dag_run_id"], ti["task_id"]): ti for ti in collected.tis}


def every_permitted_run_succeeds(collected: Collected) -> list[Violation]:
    """A run fails only when the platform failed every try of one of its tasks."""
    work = chains(collected)
    violations = []
    for ti in collected.tis:
        if ti["state"] != "failed":
            continue
        chain = work.get((ti["dag_run_id"], ti["task_id"]), [])
        failures = sum(1 for record in chain if record["status"] in FAILED_WORK)
        if (ti["dag_id"], ti["task_id"]) in JOB_TASKS and chain and failures >= int(ti["try_number"]):
            continue  # the platform failed each try: failing is right
        violations.append(Violation("every run the platform let succeed succeeds", ti["dag_run_id"], ti["task_id"],
                                    f"failed after {ti['try_number']} tries; the platform failed {failures} of its "
                                    f"{len(chain)} pieces of work"))  # fmt: skip
    failed_runs = {ti["dag_run_id"] for ti in collected.tis if ti["state"] in ("failed", "upstream_failed")}
    for run in collected.runs:
        if run["state"] == "failed" and run["dag_run_id"] not in failed_runs:
            violations.append(Violation("every run the platform let succeed succeeds", run["dag_run_id"], "",
                                        "the run failed with no task failed"))  # fmt: skip
    return violations


def ready_then(report: dict[str, Any], ti: dict[str, Any]) -> bool:
    """A report that expired after its task succeeded on it: ready at the time (reports live an hour)."""
    ended, expires = ti.get("end_date"), report.get("expires_at")
    return report["status"] == "expired" and bool(ended and expires) and when(expires) > when(ended)


def one_piece_of_work_per_attempt_chain(collected: Collected) -> list[Violation]:
    """Each try reattaches to its task's work; a fresh start only follows a genuine failure; nothing is lost."""
    name = "exactly one execution/report per attempt chain"
    work, tis = chains(collected), tis_by_key(collected)
    violations = []
    for (run_id, task_id), chain in work.items():
        ti = tis.get((run_id, task_id))
        ids = [record["id"] for record in chain]
        if ti is None or (ti["dag_id"], task_id) not in JOB_TASKS:
            violations.append(Violation(name, run_id, task_id, f"work no task instance started: {ids}"))
            continue
        early = [record["id"] for record in chain[:-1] if record["status"] not in FAILED_WORK]
        if early:
            violations.append(Violation(name, run_id, task_id, f"started again although {early} had not failed "
                                                               f"(chain {ids})"))  # fmt: skip
        if len(chain) > int(ti["try_number"]):
            violations.append(Violation(name, run_id, task_id, f"{len(chain)} pieces of work in {ti['try_number']} "
                                                               f"tries: {ids}"))  # fmt: skip
        returned = collected.xcoms.get((run_id, task_id, "return_value"))
        if ti["state"] == "success" and (not isinstance(returned, dict) or returned.get("id") != ids[-1]):
            violations.append(Violation(name, run_id, task_id, f"returned {returned and returned.get('id')}, not "
                                                               f"the chain's last {ids[-1]}"))  # fmt: skip
        waited = ti["state"] == "success" and (ti["dag_id"], task_id) in WAITS_FOR_THE_END
        if waited and chain[-1]["status"] not in ("succeeded", "ready") and not ready_then(chain[-1], ti):
            violations.append(Violation(name, run_id, task_id, f"succeeded on work {ids[-1]} that is "
                                                               f"{chain[-1]['status']}"))  # fmt: skip
    for (run_id, task_id), ti in tis.items():
        if (ti["dag_id"], task_id) in JOB_TASKS and ti["state"] == "success" and (run_id, task_id) not in work:
            violations.append(Violation(name, run_id, task_id, "succeeded, but the platform has no work of it"))
    return violations


def downloads_match_reports(collected: Collected) -> list[Violation]:
    """Every file is its report's (sha256), and nothing else is left: no partial file, object or upload."""
    name = "every downloaded file matches its report, nothing partial is left"
    reports = {report["id"]: report for report in collected.reports}
    violations = []
    expected_local: set[Path] = set()
    expected_keys: set[str] = set()
    for ti in collected.tis:
        if ti["dag_id"] not in DOWNLOADS or ti["task_id"] != "download" or ti["state"] != "success":
            continue
        run_id = ti["dag_run_id"]
        written = collected.xcoms.get((run_id, "download", "download")) or {}
        generated = collected.xcoms.get((run_id, DOWNLOADS[ti["dag_id"]], "return_value")) or {}
        report = reports.get(generated.get("id", ""), {})
        uri = str(written.get("uri", ""))
        if uri.startswith("s3://"):
            key = uri.split("/", 3)[3]
            expected_keys.add(key)
            content = collected.s3_objects.get(key)
        else:
            expected_local.add(Path(uri))
            content = Path(uri).read_bytes() if Path(uri).is_file() else None
        digest = hashlib.sha256(content).hexdigest() if content is not None else None
        if not report or digest is None or digest != report.get("sha256") or written.get("sha256") != digest:
            detail = f"{uri}: sha256 {digest}, XCom {written.get('sha256')}, report {generated.get('id')} "
            violations.append(Violation(name, run_id, "download", detail + str(report.get("sha256"))))
    for path in sorted(p for p in collected.exports.rglob("*") if p.is_file()):
        if path not in expected_local:
            violations.append(Violation(name, "", "", f"a file no task reported: {path}"))
    for key in sorted(set(collected.s3_objects) - expected_keys):
        violations.append(Violation(name, "", "", f"an S3 object no task reported: {key}"))
    for key in collected.s3_open_uploads:
        violations.append(Violation(name, "", "", f"an open multipart upload: {key}"))
    collected.notes["files"] = len(expected_local) + len(expected_keys)
    return violations


def sync_events_exactly_once(collected: Collected) -> list[Violation]:
    """The watcher reports each sync it saw once: none twice, none missed (but in the documented window)."""
    name = "no sync reported twice by the event trigger, none missed"
    reported = Counter(event["extra"]["payload"]["last_synced_at"] for event in collected.asset_events)
    violations = [Violation(name, "", "", f"the sync of {synced_at} was reported {count} times")
                  for synced_at, count in reported.items() if count > 1]  # fmt: skip
    faulted = {fault["request_id"] for fault in collected.injected}
    polls = sorted(r.at for r in collected.requests
                   if r.path == WATCHED_PATH and r.status == 200 and r.request_id not in faulted)  # fmt: skip
    finished = sorted(sync["finished_at"] for sync in collected.syncs if sync["outcome"] == "synced")
    lost, folded = [], 0
    for position, synced_at in enumerate(finished):
        end = when(synced_at)
        if not polls or end <= polls[0] or synced_at in reported:
            continue  # before the watcher's first poll (its watermark), or reported
        following = when(finished[position + 1]) if position + 1 < len(finished) else float("inf")
        seen = [poll for poll in polls if end <= poll < following]
        if not seen:
            folded += 1  # the next sync finished before the watcher looked: one event for the newest
        elif any(signalled - LOST_EVENT_WINDOW <= seen[0] <= gone for signalled, gone in collected.triggerer_stops):
            lost.append(synced_at)
        else:
            violations.append(Violation(name, "", "", f"the sync of {synced_at} was seen by the watcher at "
                                                      f"{seen[0]:.1f} but never reported"))  # fmt: skip
    collected.notes["syncs"] = {"finished": len(finished), "events": sum(reported.values()), "folded": folded,
                                "lost_in_documented_window": lost}  # fmt: skip
    return violations


def no_token_in_logs(collected: Collected) -> list[Violation]:
    """No log line of any component or task holds a token the connection ever had."""
    violations = []
    tokens = [token.encode() for token in collected.tokens]
    for path in collected.log_files:
        for number, line in enumerate(path.read_bytes().splitlines(), 1):
            if any(token in line for token in tokens):
                violations.append(Violation("no token in any log line", "", "", f"{path.name}:{number}"))
    return violations


def nothing_left_in_flight(collected: Collected) -> list[Violation]:
    """At the end no run or task instance is left running, deferred, queued or waiting to retry."""
    name = "nothing running, deferred or queued at the end"
    violations = [Violation(name, ti["dag_run_id"], ti["task_id"], f"left {ti['state']}")
                  for ti in collected.tis if ti["state"] not in TERMINAL_TI]  # fmt: skip
    violations += [Violation(name, run["dag_run_id"], "", f"run left {run['state']}")
                   for run in collected.runs if run["state"] not in ("success", "failed")]  # fmt: skip
    return violations


# --- the limited phase (limit_phase.py) -----------------------------------------------------------------------
