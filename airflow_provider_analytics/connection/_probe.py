"""The connection test (``AnalyticsHook.test_connection``): one cheap authenticated call, its failure in words.

Kept out of the hook's module: it needs the client and every error class, and a DAG file importing the hook
must not pay for them at each parse. It takes the connection, not the hook: it sends on a client of its own,
built from the connection with one retry, the connection's timeout bounding the whole test.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from airflow.providers.common.compat.sdk import AirflowNotFoundException

from airflow_provider_analytics.connection._config import masked_config
from airflow_provider_analytics.connection._notes import not_the_api, redact, with_notes
from airflow_provider_analytics.connection._store import rate_limit_store_id, rate_limit_store_of
from airflow_provider_analytics.wire import _endpoints as endpoints
from airflow_provider_analytics.wire._deadline import call_deadline
from airflow_provider_analytics.wire._store_clients import ping
from airflow_provider_analytics.wire.client import AnalyticsClient
from airflow_provider_analytics.wire.config import ClientConfig
from airflow_provider_analytics.wire.errors import (
    ADVICE_NO_API,
    ADVICE_TOKEN_REJECTED,
    ADVICE_WORKSPACE_FORBIDDEN,
    AnalyticsAPIError,
    AnalyticsConnectionError,
    AnalyticsError,
    AnalyticsTimeoutError,
    AnalyticsTLSError,
    ForbiddenError,
    NotFoundError,
    UnauthenticatedError,
    UnexpectedResponseError,
)
from airflow_provider_analytics.wire.retry import RetryPolicy


def probe_connection(
    conn_id: str, read_connection: Callable[[], Any], read_store: Callable[[str], Any] | None = None
) -> tuple[bool, str]:
    """List one workflow with a client of its own built from the connection, with one retry, within the
    connection's ``timeout``; say what to change.

    Never raises: the UI's Test button and ``airflow connections test`` always get an answer, and no
    answer repeats the token or the credentials of a URL.

    :param conn_id: the connection's id, for the message when it cannot be read.
    :param read_connection: reads the Airflow connection (the hook's lookup); called inside the test, so a
        connection that is missing or does not parse is an answer too.
    :param read_store: reads the Redis connection the analytics connection names as its rate limit store (the hook's
        lookup, given the id): when it names one, the test also asks the store once.
    :return: whether it worked, and the message for the user.
    """
    conn = None
    try:
        conn = read_connection()
        config = masked_config(conn)
        probe = ClientConfig(**{**config.__dict__, "retry": RetryPolicy(max_retries=1)})
        # The whole test, its retry and any rate-limit pause included, ends within the connection's timeout: the
        # Test button must answer, not hang for a pause the platform asked for (a task's deadline, when one is in
        # force, still ends it sooner).
        with AnalyticsClient(probe) as client, call_deadline(probe.timeout):
            client.call(endpoints.list_workflows(page_size=1).page(None))
    # The advice first, then the error without it (its summary), so it is said once.
    except UnauthenticatedError as exc:
        message = f"{ADVICE_TOKEN_REJECTED} {exc.summary}"
    except ForbiddenError as exc:
        message = f"{ADVICE_WORKSPACE_FORBIDDEN} {exc.summary}"
    except NotFoundError as exc:  # the probed list exists wherever the API does
        message = f"{ADVICE_NO_API} {exc.summary}"
    except (AnalyticsTLSError, AnalyticsTimeoutError, AnalyticsConnectionError) as exc:
        message = str(exc)  # it says what to change first, and names the connection (wire/_tls.py)
    except AnalyticsAPIError as exc:
        message = f"The platform answered with an error: {exc}"
    except UnexpectedResponseError as exc:  # the probed list is plain JSON wherever the API is: a wrong host
        message = not_the_api(conn, probe.base_url, exc.content_type, str(exc))
    except AnalyticsError as exc:
        text = str(exc)  # a setting's error starts with the connection's name: said once, capitalised
        named = text.startswith(("this connection", "connection '"))
        message = text[0].upper() + text[1:] if named else f"The connection is misconfigured: {text}"
    except AirflowNotFoundException as exc:  # Airflow also says so when a connection's URI or JSON does not parse
        message = (
            f"Cannot read connection {conn_id!r}: define it, and check that its URI or JSON parses "
            f"(a port is a number from 1 to 65535). {exc}"
        )
    except Exception as exc:  # the Test button must get an answer, whatever went wrong
        message = f"Could not test the connection: {type(exc).__name__}: {exc}"
    else:
        where = f" (workspace {probe.workspace_id})" if probe.workspace_id else ""
        connected = f"Connected to the Analytics Platform at {probe.base_url}{where}"
        store_ok, store_said = probe_store(conn, read_store, probe.timeout)
        return store_ok, with_notes(connected + store_said, conn)
    return False, redact(with_notes(message, conn), conn)


def probe_store(conn: Any, read_store: Callable[[str], Any] | None, timeout: float) -> tuple[bool, str]:
    """When the connection names a rate limit store: whether it answers, as the end of the test's sentence.

    A store that does not answer fails nothing (each process paces on its own), but a deployment that set one wants
    to hear that its fleet does not share a limiter: the test says so, and fails.

    :param conn: the analytics connection.
    :param read_store: the hook's lookup of the Redis connection, by id.
    :param timeout: seconds the store may take to answer.
    """
    store_id = rate_limit_store_id(conn)
    if store_id is None or read_store is None:
        return True, ""
    try:
        store = rate_limit_store_of(read_store(store_id), conn.conn_id)
    except AirflowNotFoundException:
        return False, f", but its rate limit store names the connection {store_id!r}, which Airflow does not have"
    except AnalyticsError as exc:
        return False, f", but its rate limit store cannot be used: {exc}"
    where = f"the rate limit store {store.address} (connection {store_id!r})"
    problem = ping(store, min(timeout, 5.0))
    if problem is not None:
        return False, (
            f", but {where} did not answer ({problem}): each process would pace the token's requests on its own. "
            f"Check the connection {store_id!r} (host, port, password, db, TLS)"
        )
    return True, f"; {where} answers: every process on this token shares one rate limiter through it"
