"""Whether a conditional update refused with 412 was already applied by an earlier attempt of the same update.

A ``PUT`` is retried when its answer is lost (a reset connection, a timeout), by the client's retry loop and by a
task's retry alike. With ``If-Match`` the repeat is refused with 412 when the first attempt did go through: that
attempt moved the version on. Failing then would report a conflict with ourselves, and a retry of the task would
fail the same way forever. The update was ours when the resource now stands exactly one version past the one the
update expected and holds exactly what the update sent. Anything else (another writer's change, two versions on)
is a real conflict and stays one. The contract leaves this open; docs/api-contract.md records the decision.
:func:`send_update` is how every dashboard update is sent (the hook's ``update_dashboard``, an applied plan's).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from airflow_provider_analytics.wire import _endpoints as endpoints
from airflow_provider_analytics.wire._calls import Call, RequestSpec, Sender
from airflow_provider_analytics.wire._models import Dashboard
from airflow_provider_analytics.wire._pagination import listing
from airflow_provider_analytics.wire._progress import InfoLog
from airflow_provider_analytics.wire._redaction import scrub_value
from airflow_provider_analytics.wire.errors import PreconditionFailedError

__all__ = ["expected_version", "holds_update", "send_update"]


def expected_version(update: RequestSpec) -> int | None:
    """The version an update's ``If-Match`` names; ``None`` for an unconditional update.

    :param update: the ``PUT`` as built by :mod:`~airflow_provider_analytics.wire._endpoints`.
    """
    header = update.headers.get("If-Match", "")
    digits = header.strip('"')
    return int(digits) if digits.isdigit() else None


def _holds(current: Any, sent: Any) -> bool:
    """``current`` holds ``sent``: equal, except that a mapping may carry fields the platform added (defaults)."""
    if isinstance(sent, Mapping):
        return isinstance(current, Mapping) and all(
            key in current and _holds(current[key], value) for key, value in sent.items()
        )
    if isinstance(sent, list):
        return isinstance(current, list) and len(current) == len(sent) and all(map(_holds, current, sent))
    return bool(current == sent) and type(current) is type(sent)


def holds_update(resource: Mapping[str, Any], update: RequestSpec) -> bool:
    """Whether ``resource``, read after ``update`` was refused with 412, is that very update already applied.

    :param resource: the resource as it reads now.
    :param update: the refused ``PUT`` (with ``If-Match``).
    """
    expected = expected_version(update)
    version = resource.get("version")
    if expected is None or isinstance(version, bool) or version != expected + 1:
        return False
    return _holds(resource, update.json_body or {})


def send_update(sender: Sender, update: Call[Dashboard], dashboard_id: str, log: InfoLog) -> Dashboard:
    """Send a dashboard update; a 412 to a repeat of this very update answers with the dashboard that holds it.

    :param sender: what sends (the hook's client).
    :param update: the ``PUT`` as built by :func:`~airflow_provider_analytics.wire._endpoints.update_dashboard`.
    :param dashboard_id: the dashboard's id.
    :param log: the logger that says when an earlier attempt had applied the update.
    :raises PreconditionFailedError: a real conflict: the dashboard was changed by someone else.
    """
    try:
        return sender.call(update)
    except PreconditionFailedError:
        if expected_version(update.spec) is None:
            raise
        # One listing, every page, to read the dashboard: as the platform holds it, since it is compared with what
        # was sent (a remembered secret masked in its description would make the repeat look like a conflict).
        dashboards = listing(sender, endpoints.list_dashboards().unmasked())
        current = next((item for item in dashboards if item.get("id") == dashboard_id), None)
        if current is None or not holds_update(current, update.spec):
            raise
        log.info(
            "Dashboard %s already holds this update at version %s: an earlier attempt applied it (its answer was"
            " lost, or this is a retry)",
            dashboard_id,
            current.get("version"),
        )
        # Answered as the update's own answer would have been: masked, unless the caller takes it as data.
        return scrub_value(current) if update.spec.mask_answer else current
