"""The ``analytics://<host>/<kind>/<id>`` asset URI: build it, check and normalise it, convert it to OpenLineage.

One platform object has one name everywhere: ``Asset("analytics://api.example.com/dashboard/db_sales")`` in
a DAG and the dataset an operator reports to OpenLineage (namespace ``analytics://api.example.com``, name
``dashboard/db_sales``) are the same thing, so the Airflow asset graph and a lineage tool agree.

Registered in the provider info (``asset-uris``; ``dataset-uris`` on Airflow 2, for ``Dataset``); Airflow
calls :func:`normalize_uri` on every such ``Asset`` and the OpenLineage provider calls
:func:`convert_asset_to_openlineage`. Where Airflow does not let the handler refuse a URI:

- Airflow drops a URI's user info (with a ``UserWarning``) *before* it calls the handler: any user info on
  2.11 and 3.0, user info with a password from 3.1 on. Only ``analytics://user@host/...`` on 3.1+ reaches
  :func:`normalize_uri`, which refuses it; elsewhere the asset is the URI without the user info.
- Airflow 2.11 turns the handler's ``ValueError`` into a ``UserWarning`` carrying its message, unless
  ``[core] strict_dataset_uri_validation`` is on; Airflow 3 always refuses the ``Asset``.

This module stays cheap to import (Airflow imports it while registering providers) and imports OpenLineage
only inside the converter.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any, NamedTuple
from urllib.parse import SplitResult, urlsplit, urlunsplit

if TYPE_CHECKING:
    from openlineage.client.event_v2 import Dataset

# The names Airflow (provider_info.py) and docs/lineage.md use; the rest serves the provider's own lineage.
__all__ = ["build_uri", "convert_asset_to_openlineage", "normalize_uri"]

SCHEME = "analytics"
# The platform objects that data flows through; the names are the singular of the API's collections.
KINDS = ("data_source", "chart", "dashboard", "report", "workflow")
# The contract's id rule (wire._contract.ID_PATTERN), repeated so this module never loads the wire layer.
_ID = re.compile(r"^[A-Za-z0-9_-]{1,64}$")


class AnalyticsObject(NamedTuple):
    """A platform object as lineage names it.

    :param host: the platform's host (and port), lower-case.
    :param kind: one of :data:`KINDS`.
    :param id: the object's id.
    """

    host: str
    kind: str
    id: str

    @property
    def uri(self) -> str:
        """``analytics://<host>/<kind>/<id>``."""
        return f"{SCHEME}://{self.host}/{self.kind}/{self.id}"

    @property
    def namespace(self) -> str:
        """The OpenLineage namespace: scheme and authority, as OpenLineage names datasets."""
        return f"{SCHEME}://{self.host}"

    @property
    def name(self) -> str:
        """The OpenLineage dataset name: the URI's path without its leading slash."""
        return f"{self.kind}/{self.id}"


def host_of(base_url: str) -> str:
    """The ``<host>`` part for a connection's base URL: host and port, lower-case, no user or path.

    :param base_url: the connection's base URL, e.g. ``https://API.example.com:8443/prefix``.
    """
    parts = urlsplit(base_url)
    host = (parts.hostname or "").lower()
    if not host:
        raise ValueError(f"the base URL {base_url!r} has no host")
    if ":" in host:  # an IPv6 literal keeps its brackets in a URI
        host = f"[{host}]"
    return f"{host}:{parts.port}" if parts.port is not None else host


def analytics_object(host: str, kind: str, object_id: str) -> AnalyticsObject:
    """A checked :class:`AnalyticsObject`.

    :param host: host and optional port, as in the URI.
    :param kind: one of :data:`KINDS`.
    :param object_id: the object's id (the contract's id rule).
    :raises ValueError: an unknown kind, a malformed id or an empty host, saying what to change.
    """
    if kind not in KINDS:
        raise ValueError(f"unknown analytics asset kind {kind!r}: use one of {', '.join(KINDS)}")
    if not isinstance(object_id, str) or not _ID.match(object_id):
        raise ValueError(
            f"bad analytics {kind} id {object_id!r}: ids are 1-64 characters of letters, digits, '_' and '-'"
        )
    if not host:
        raise ValueError(f"an analytics asset URI needs the platform's host: {SCHEME}://<host>/{kind}/{object_id}")
    return AnalyticsObject(host.lower(), kind, object_id)


def parse_uri(uri: str | SplitResult) -> AnalyticsObject:
    """The platform object an ``analytics://<host>/<kind>/<id>`` URI names.

    :param uri: the URI, as text or already split.
    :raises ValueError: anything else, saying what to change.
    """
    parts = urlsplit(uri) if isinstance(uri, str) else uri
    shown = urlunsplit(parts)
    if parts.scheme.lower() != SCHEME:
        raise ValueError(f"{shown!r} is not an {SCHEME}:// URI")
    if "@" in parts.netloc:
        raise ValueError(f"{shown!r}: an analytics asset URI carries no user or password, only the platform's host")
    if parts.query or parts.fragment:
        raise ValueError(f"{shown!r}: an analytics asset URI has no query or fragment: {SCHEME}://<host>/<kind>/<id>")
    try:
        port = parts.port  # reading it checks it is a number in range
    except ValueError as exc:
        raise ValueError(f"{shown!r}: bad port ({exc})") from None
    host = (parts.hostname or "").lower()
    if not host:
        raise ValueError(f"{shown!r} has no host: use {SCHEME}://<platform host>/<kind>/<id>")
    if ":" in host:
        host = f"[{host}]"
    segments = parts.path.strip("/").split("/")
    if len(segments) != 2:
        raise ValueError(f"{shown!r}: the path must be /<kind>/<id> with kind one of {', '.join(KINDS)}")
    kind, object_id = segments
    return analytics_object(f"{host}:{port}" if port is not None else host, kind, object_id)


def build_uri(host: str, kind: str, object_id: str) -> str:
    """``analytics://<host>/<kind>/<id>``, checked.

    :param host: host and optional port.
    :param kind: one of :data:`KINDS`.
    :param object_id: the object's id.
    """
    return analytics_object(host, kind, object_id).uri


def normalize_uri(parts: SplitResult) -> SplitResult:
    """Airflow's URI handler for ``analytics://``: checks the URI and lower-cases the host.

    :param parts: the URI as Airflow split it (scheme lower-cased, trailing slashes removed).
    :raises ValueError: a malformed URI (Airflow refuses the ``Asset`` with this message).
    """
    obj = parse_uri(parts)
    return SplitResult(SCHEME, obj.host, f"/{obj.kind}/{obj.id}", "", "")


def convert_asset_to_openlineage(asset: Any, lineage_context: Any = None) -> Dataset:
    """The OpenLineage dataset an ``analytics://`` asset stands for (namespace ``analytics://<host>``).

    :param asset: an Airflow ``Asset`` whose URI is ``analytics://<host>/<kind>/<id>``.
    :param lineage_context: what the OpenLineage provider passes along (unused: the URI says everything).
    """
    from openlineage.client.event_v2 import Dataset

    obj = parse_uri(asset.uri)
    return Dataset(namespace=obj.namespace, name=obj.name)


def file_dataset_parts(uri: str) -> tuple[str, str]:
    """OpenLineage ``(namespace, name)`` of a written file: ``file`` and the path for local files,
    ``<scheme>://<bucket>`` and the key for object storage (OpenLineage's dataset naming).

    :param uri: a local path or an object storage URI, as the download and chart-data operators return it.
    """
    parts = urlsplit(uri)
    if parts.scheme in ("", "file") or len(parts.scheme) == 1:  # a Windows drive letter is not a scheme
        return "file", parts.path if parts.scheme == "file" else uri
    return f"{parts.scheme}://{parts.netloc}", parts.path.lstrip("/")
