"""What both hooks share: the connection type and id, and reading a connection into a client config."""

from __future__ import annotations

import logging
import warnings
from typing import TYPE_CHECKING, Any

from airflow.providers.common.compat.sdk import BaseHook

if TYPE_CHECKING:
    from airflow_provider_analytics.wire.config import ClientConfig

DEFAULT_CONN_ID = "analytics_default"


def masked_config(conn: Any) -> ClientConfig:
    """The client config of an Airflow connection, its token registered with Airflow's secrets masker."""
    # Imported here, not at the top: the hook's module is imported by every DAG file that uses an operator.
    from airflow_provider_analytics.hooks.connection import client_config_from_connection

    config = client_config_from_connection(conn)
    # Airflow masks connection passwords itself; registering again covers tokens from URI or env forms.
    from airflow.providers.common.compat.sdk import mask_secret

    mask_secret(config.token)
    quiet_httpx_request_lines()
    return config


def quiet_httpx_request_lines() -> None:
    """Set the ``httpx`` logger to WARNING, unless the deployment configured it.

    httpx logs one INFO line per request (``HTTP Request: GET ... "HTTP/1.1 200 OK"``): a line per poll of
    every wait, which floods a fleet's task and trigger logs. Airflow 3's logging configuration sets that
    logger to WARNING ("too chatty even at info"); Airflow 2.11's leaves it at INFO. A level set by the
    deployment (anything but ``NOTSET``) is kept.
    """
    logger = logging.getLogger("httpx")
    if logger.level == logging.NOTSET:
        logger.setLevel(logging.WARNING)


def prepared_config(conn: Any) -> ClientConfig:
    """The masked config with its TLS context built: everything blocking a client needs, done at once."""
    from airflow_provider_analytics.wire.tls import tls_context

    config = masked_config(conn)
    tls_context(config.verify)
    return config


class AnalyticsBaseHook(BaseHook):
    """Base of both hooks: the connection type, its default id and the ``analytics_conn_id`` name.

    :param analytics_conn_id: the Airflow connection of type ``analytics``.
    """

    conn_name_attr = "analytics_conn_id"
    default_conn_name = DEFAULT_CONN_ID
    conn_type = "analytics"
    hook_name = "Analytics Platform"

    def __init__(self, analytics_conn_id: str = DEFAULT_CONN_ID, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.analytics_conn_id = analytics_conn_id


# Names this module had in a release, kept importable for a while: old name -> (new name, the object).
_RENAMED = {"AnalyticsConnection": ("AnalyticsBaseHook", AnalyticsBaseHook)}


def _renamed(name: str) -> Any:
    """A renamed class under its old name, with a warning that names the new one.

    ``AnalyticsConnection`` was the hooks' base in 1.0.0. The warning is a plain ``DeprecationWarning``:
    Airflow's ``AirflowProviderDeprecationWarning`` lives in ``airflow.exceptions`` of Airflow core, which
    common-compat does not bridge and a task-SDK-only worker may lack; it is a ``DeprecationWarning`` too, so
    a filter on that catches both.

    :param name: the attribute looked up on this module.
    :raises AttributeError: for any other name.
    """
    if name not in _RENAMED:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    new_name, value = _RENAMED[name]
    warnings.warn(
        f"{__name__}.{name} is deprecated and will be removed in 2.0.0; use {__name__}.{new_name}",
        DeprecationWarning,
        stacklevel=2,
    )
    return value


if not TYPE_CHECKING:  # at run time only: for mypy the old names do not exist, so new code cannot use them
    __getattr__ = _renamed
