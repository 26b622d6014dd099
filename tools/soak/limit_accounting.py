"""The soak's invariants of its rate-limited phase: refusals, waits that gave up, and each wait's longest gap.

They read the sandbox's request log and the counters of its per-second limit (``limit_phase.py`` records them),
and, for what gave up, the log files. ``accounting.py`` holds the records and the other invariants.
"""

from __future__ import annotations

import bisect
import re
from collections import Counter, defaultdict
from pathlib import Path

from accounting import (
    WAITING_TASKS,
    WAITS_FOR_THE_END,
    WATCHED_PATH,
    Collected,
    Violation,
    Wait,
    chains,
    when,
)

# The limit may refuse at most this share of the /v1 requests sent in the limited phase (limit_phase.py).
# With the rate limit store (the default), every process on the token (the triggerer and each task process of the
# two workers) paces through one limiter it shares in Redis: it learns the limit once for the fleet, and a pause one
# process is told holds them all (wire/_shared_limiter.py). The bench's target for one process alone is 5 %
# (bench/ratelimit.py); a fleet that shares its limiter must do better than that, since its learning is not split:
# 1 %. A share says nothing of a fleet that sent less than the limit allows: the report gives how much of it the
# phase used (its requests per second, the windows in which the limit was reached), which no invariant judges.
MAX_REFUSED_SHARE_STORE = 0.01
# Without it (``--no-store``), each process has a limiter of its own (docs/deployment.md, "A fleet on one token"):
# a task process that lives for a request or two never learns the rate, a task process that reads Remaining 1 in
# the headers paces alone at the token's whole rate, and the five-minute soak restarts the triggerer twice inside
# the phase. Five-minute runs refused 5.9 to 16.1 % of 220-260 requests (one half of a run 15.6 %; two runs with the
# share learnt from Remaining, 9.6 and 12.8 %): that bound checks that the fleet paces at all, not how well: unpaced,
# the same traffic has 17 % of its requests beyond 3 in their second before any refused one is sent again, and each
# resend meets windows as full.
MAX_REFUSED_SHARE_ALONE = 0.20


def max_refused_share(store: bool) -> float:
    """The bound on the limited phase's refused share: with the rate limit store, or each process alone."""
    return MAX_REFUSED_SHARE_STORE if store else MAX_REFUSED_SHARE_ALONE


def refusals_bounded(store: bool) -> str:
    """The invariant's name, with its bound."""
    return f"at most {max_refused_share(store):.0%} of requests refused by the rate limit in its phase"


# No wait may go longer without a successful answer than max(GAP_FLOOR_FACTOR x floor, GAP_MIN_SECONDS), where the
# floor is what a fair client achieves: one answer per poll interval, or, while the limit binds, one per wait per
# (waits in flight / limit) seconds. The factor leaves room for what the soak adds to the bench's single
# triggerer (whose target is p99 <= 1.5 x floor): processes that each pace at the whole limit, pauses of a whole
# process for Retry-After, chaos on top of the limit. The minimum covers the operations: a wait handed over by a
# triggerer that was stopped (its triggers start again in the new one) or retried after its worker was killed
# (the 20-s heartbeat timeout, the 5-s retry delay, a free worker slot), with the waits' 5-s or 10-s polls.
GAP_FLOOR_FACTOR = 5.0
GAP_MIN_SECONDS = 120.0
# A gap across more than one triggerer stop has more than one handover in it (the short soak stops the triggerer
# every 90 s, so a wait can meet two): each further one adds this much (a SIGKILLed triggerer's waits move after
# its heartbeat times out; a new triggerer starts dozens of triggers on a busy machine).
GAP_HANDOVER_SECONDS = 60.0
# How a request that gave up on the platform's rate limit reads, in a log line or a failed try's error: the
# exception's name, or its text (``429 rate_limited on GET ...``). The throttle's own lines ("Rate limited by the
# Analytics Platform at ...", "No longer rate limited ...") say it paces, not that anything gave up.
GAVE_UP_ON_THE_LIMIT = (b"RateLimitedError", b"429 rate_limited")
# A poll not sent because a pause that began while it waited (another request's 429) outlasts the poll's deadline:
# the trigger logs it and polls again later, as when its turn in the queue comes too late. Not a give-up.
PAUSED_PAST_THE_POLL = b"its turn would come after this call's deadline"
# The provider's log lines (wire/_throttle.py, wire/_shared_limiter.py): a process starts pacing the token on its
# own, or through the rate limit store (the fleet's pace, at INFO in each process; the fleet's WARNING is said once,
# by the process that started it); stops pacing (its own limiter, or the fleet's: said once); a poll was not sent
# because its turn did not come before the poll's deadline (the trigger polls again later); the store did not answer
# (the process paces on its own for a while), and answered again.
THROTTLE_LINES = {"started alone": b"this process now paces that token's requests at",
                  "started through the store": b"every process on this token paces its requests at",
                  "ended": b"No longer rate limited at",
                  "poll not sent": b"for the connection's turn under the platform's rate limit",
                  "poll not sent (paused)": PAUSED_PAST_THE_POLL,
                  "store did not answer": b"did not answer (",
                  "store answered again": b"take their turns through it again"}  # fmt: skip
PACE = re.compile(rb"paces that token's requests at ([0-9.]+)/s \(([^)]*)\)")
STORE_PACE = re.compile(rb"paces its requests at ([0-9.]+)/s in all through the rate limit store [^\n]*?\(([^()]*)\), ")


def waits(collected: Collected) -> list[Wait]:
    """The waits the request log follows: each waiting task's polls of its own execution or report (a retry that
    reattaches goes on polling the same path: one wait across the tries), and the watcher's."""
    faulted = {fault["request_id"] for fault in collected.injected}
    answered: dict[str, list[float]] = defaultdict(list)
    for request in collected.requests:
        if request.method == "GET" and request.status == 200 and request.request_id not in faulted:
            answered[request.path].append(request.at)
    waiting = {task_id for _, task_id in WAITS_FOR_THE_END}
    found = []
    for (run_id, task_id), chain in sorted(chains(collected).items()):
        if task_id not in waiting:
            continue
        for record in chain:
            if "workflow_id" in record:
                path, ended = f"/v1/workflows/{record['workflow_id']}/executions/{record['id']}", "finished_at"
            else:
                path, ended = f"/v1/reports/{record['id']}", "completed_at"
            times = sorted(answered.get(path, []))
            if record.get(ended):
                end = when(record[ended])
                times = times[: next((i + 1 for i, at in enumerate(times) if at >= end), len(times))]
            found.append(Wait(run_id, task_id, path, tuple(times)))
    found.append(Wait("", "watcher", WATCHED_PATH, tuple(sorted(answered.get(WATCHED_PATH, [])))))
    return found


def overlaps(gap: tuple[float, float], window: tuple[float, float] | None) -> bool:
    return window is not None and gap[0] < window[1] and gap[1] > window[0]


def waits_in_flight(collected: Collected, window: tuple[float, float]) -> float:
    """How many waits polled at a time, on average over ``window``: the followed waits (from their first answer
    to their last), the sensors (their task instances' run) and the watcher."""
    start, end = window

    def overlap(first: float, last: float) -> float:
        return max(0.0, min(last, end) - max(first, start))

    total = sum(overlap(wait.answers[0], wait.answers[-1]) for wait in waits(collected) if wait.answers)
    sensors = WAITING_TASKS - WAITS_FOR_THE_END
    for ti in collected.tis:
        if (ti["dag_id"], ti["task_id"]) in sensors and ti.get("start_date"):
            total += overlap(when(ti["start_date"]), when(ti.get("end_date")) or end)
    return total / (end - start) if end > start else 0.0


def gap_floor(collected: Collected, limited: bool) -> float:
    """The shortest longest gap a fair client gives every wait: one answer per poll interval, and while the
    limit binds, one per wait per (waits in flight / limit) seconds (bench/ratelimit.py's floor)."""
    window, parts = collected.limit.window(), collected.limit.parts()
    if not limited or window is None:
        return collected.poll_seconds
    if "waits_in_flight" not in collected.notes:
        collected.notes["waits_in_flight"] = waits_in_flight(collected, window)
    flight: float = collected.notes["waits_in_flight"]
    return max(collected.poll_seconds, flight / parts[0].per_second)


def gap_bound(floor: float, handovers: int = 1) -> float:
    """The longest gap allowed: see GAP_FLOOR_FACTOR, GAP_MIN_SECONDS and GAP_HANDOVER_SECONDS.

    :param floor: :func:`gap_floor`.
    :param handovers: triggerer stops, worker kills and scheduler restarts within the gap.
    """
    return max(GAP_FLOOR_FACTOR * floor, GAP_MIN_SECONDS) + GAP_HANDOVER_SECONDS * max(0, handovers - 1)


def longest_gaps(collected: Collected) -> dict[str, list[tuple[Wait, float, float]]]:
    """Each wait's longest gap that overlaps the limited phase ("limited"), and its longest gap outside it
    ("unlimited"): (wait, from, to). A wait that polled in both counts in both."""
    window = collected.limit.window()
    found: dict[str, list[tuple[Wait, float, float]]] = {"limited": [], "unlimited": []}
    for wait in waits(collected):
        for kind, inside in (("limited", True), ("unlimited", False)):
            gaps = [gap for gap in wait.gaps() if overlaps(gap, window) == inside]
            if gaps:
                start, end = max(gaps, key=lambda gap: gap[1] - gap[0])
                found[kind].append((wait, start, end))
    return found


def load_time(collected: Collected, at: float) -> str:
    """A moment as seconds of the load (what the soak's own log lines and the report use)."""
    return f"{at - collected.load[0]:.0f} s"


def limit_refusals_bounded(collected: Collected) -> list[Violation]:
    """Over the limited phase the per-second limit refused at most :func:`max_refused_share` of the /v1 requests
    (the sandbox's own count of its refusals: the chaos's 429s are not in it); and the phase ran as planned."""
    store = collected.store is not None
    name = refusals_bounded(store)
    record = collected.limit
    if record.per_second <= 0:
        return []
    violations = []
    if len(record.steps) != len(record.planned) or record.steps[-1].per_second is not None:
        violations.append(Violation(name, "", "", f"the limited phase did not run as planned: {len(record.steps)} "
                                                  f"of its {len(record.planned)} changes made"))  # fmt: skip
    arrivals = sorted(request.at for request in collected.requests)
    counted = [(part, bisect.bisect_left(arrivals, part.end) - bisect.bisect_left(arrivals, part.start))
               for part in record.parts()]  # fmt: skip
    refused, sent = sum(part.refused for part, _ in counted), sum(number for _, number in counted)
    if sent and refused / sent > max_refused_share(store):
        window = record.window() or (0.0, 0.0)
        halves = ", ".join(f"{part.refused} of {number} {part.name}" for part, number in counted)
        violations.append(Violation(name, "", "", f"{record.per_second:g}/s from {load_time(collected, window[0])} to "
                                                  f"{load_time(collected, window[1])} of the load: {refused} of {sent} "
                                                  f"requests refused ({refused / sent:.1%}): {halves}"))  # fmt: skip
    return violations


def nothing_gave_up_on_the_limit(collected: Collected) -> list[Violation]:
    """No try failed on a 429 and no log line (of a task, a trigger or a component) shows a request that gave up on
    the rate limit: a 429 waits its turn (wire/_throttle.py), it never fails a poll or a task. Counts the throttle's
    own log lines on the way, for the report."""
    name = "no task or trigger gave up on the rate limit"
    violations = []
    for (run_id, task_id), tries in sorted(collected.failed_tries.items()):
        for number, error in tries:
            if any(marker.decode() in error for marker in GAVE_UP_ON_THE_LIMIT):
                violations.append(Violation(name, run_id, task_id, f"try {number} failed: {error}"))
    found, throttle, paces = [], Counter(), defaultdict(list)  # type: ignore[var-annotated]
    for path in collected.log_files:
        content = path.read_bytes()
        kind = "task" if "dag_id=" in str(path) else path.stem
        for what, marker in THROTTLE_LINES.items():
            throttle[(kind, what)] += content.count(marker)
        for pattern, whose in ((PACE, ""), (STORE_PACE, ", the fleet's, through the store")):
            for pace, source in pattern.findall(content):
                paces[source.decode(errors="replace") + whose].append(float(pace))
        if not any(marker in content for marker in GAVE_UP_ON_THE_LIMIT):
            continue
        for number, line in enumerate(content.splitlines(), 1):
            if b"will poll again" in line and PAUSED_PAST_THE_POLL in line:
                continue
            if any(marker in line for marker in GAVE_UP_ON_THE_LIMIT):
                found.append((*_run_and_task(path), f"{path.name}:{number}: {line.decode(errors='replace')[:240]}"))
    violations += [Violation(name, run_id, task_id, detail) for run_id, task_id, detail in found]
    collected.notes["throttle"] = {
        f"{kind}: {what}": count for (kind, what), count in sorted(throttle.items()) if count
    }
    collected.notes["paces"] = dict(paces)
    return violations


def _run_and_task(path: Path) -> tuple[str, str]:
    """The run and task of a task's log file (``.../dag_id=d/run_id=r/task_id=t/attempt=1.log``), else blanks."""
    named = dict(part.split("=", 1) for part in path.parts if "=" in part)
    return named.get("run_id", ""), named.get("task_id", "")


def no_wait_unanswered_too_long(collected: Collected) -> list[Violation]:
    """No wait went longer without a successful answer than max(GAP_FLOOR_FACTOR x floor, GAP_MIN_SECONDS)."""
    name = "no wait unanswered for longer than its bound"
    window = collected.limit.window()
    violations = []
    for wait in waits(collected):
        for start, end in wait.gaps():
            limited = overlaps((start, end), window)
            floor = gap_floor(collected, limited)
            stops = [load_time(collected, at) for at, _ in collected.triggerer_stops if start <= at <= end]
            # A worker killed under a worker-side wait, then a scheduler restart before its retry: two handovers.
            # An operation is recorded when it begins, and the kill first looks for a busy worker (up to 36 s), so
            # one that began shortly before the gap counts too.
            others = [load_time(collected, at) for at in collected.task_handovers
                      if start - GAP_HANDOVER_SECONDS <= at <= end]  # fmt: skip
            handovers = len(stops) + len(others)
            if end - start <= gap_bound(floor, handovers):
                continue
            more = f" + {GAP_HANDOVER_SECONDS:g} s x {handovers - 1} handovers" if handovers > 1 else ""
            detail = (f"GET {wait.path} unanswered for {end - start:.0f} s ({load_time(collected, start)} to "
                      f"{load_time(collected, end)} of the load{', in the limited phase' if limited else ''}): "
                      f"over max({GAP_FLOOR_FACTOR:g} x floor {floor:.1f} s, {GAP_MIN_SECONDS:g} s){more}")  # fmt: skip
            if stops:
                detail += f"; the triggerer was stopped at {', '.join(stops)}"
            if others:
                detail += f"; a worker was killed or the scheduler restarted at {', '.join(others)}"
            violations.append(Violation(name, wait.run_id, wait.task_id, detail))
    return violations
