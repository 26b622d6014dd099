"""The invariant that every fault the sandbox injected was absorbed: the same request later got an answer.

Apart from the other invariants (accounting.py) because a fault on the event watcher's polls needs more words:
the watcher polls until the deployment stops, so it says what the watcher did after the fault, which tells a
watcher that stopped polling from one whose every later poll was refused.
"""

from __future__ import annotations

from collections import Counter, defaultdict

from accounting import WATCHED_PATH, WATCHER_PENDING_SECONDS, Collected, Request, Violation

NAME = "every injected fault absorbed"


def faults_absorbed(collected: Collected) -> list[Violation]:
    """Each injected fault was absorbed: the same request (same key for a POST) later got an answer.

    A conditional ``PUT`` whose lost answer had been applied is refused with 412 when sent again; that answer
    counts, as the hook then finds its update applied (``wire/_conditional.py``; were it not, the task would fail
    and ``every_permitted_run_succeeds`` say so).
    """
    answered: dict[tuple[str, str, str], list[float]] = defaultdict(list)
    faulted = {fault["request_id"] for fault in collected.injected}
    for request in collected.requests:
        settled = 200 <= request.status < 300 or (request.method == "PUT" and request.status == 412)
        if request.request_id not in faulted and settled:
            answered[_same_request(request)].append(request.at)
    by_id = {request.request_id: request for request in collected.requests}
    log_end = max((request.at for request in collected.requests), default=0.0)
    violations, absorbed, pending = [], Counter[str](), 0
    for fault in collected.injected:
        hit = by_id.get(fault["request_id"])
        if hit is not None and any(at >= hit.at for at in answered[_same_request(hit)]):
            absorbed[fault["kind"]] += 1
        elif hit is not None and hit.path == WATCHED_PATH and log_end - hit.at < WATCHER_PENDING_SECONDS:
            pending += 1  # its answer may come after the log was read: the watcher is still polling
        else:
            what = f"{fault['kind']} on {fault['method']} {fault['path']} ({fault['request_id']})"
            detail = what + " was never followed by an answer"
            if hit is not None and hit.path == WATCHED_PATH:
                detail += _what_the_watcher_did(collected.requests, hit, log_end)
            violations.append(Violation(NAME, "", "", detail))
    collected.notes["faults"] = {"injected": dict(Counter(f["kind"] for f in collected.injected)),
                                 "absorbed": dict(absorbed), "pending": pending}  # fmt: skip
    return violations


def _what_the_watcher_did(requests: list[Request], fault: Request, log_end: float) -> str:
    """After a fault on one of its polls: how its later polls were answered, and when it last polled."""
    later = [request for request in requests if request.path == WATCHED_PATH and request.at > fault.at]
    statuses = dict(sorted(Counter(request.status for request in later).items()))
    last = f"; its last poll {log_end - later[-1].at:.0f} s before the log's end" if later else ""
    return f" ({log_end - fault.at:.0f} s before the log's end; the watcher's later polls by status: {statuses}{last})"


def _same_request(request: Request) -> tuple[str, str, str]:
    return request.method, request.path, request.key
