"""Streaming a ready report from the platform into its destination, verified before it appears there.

Apart from the parsing (``_target``) and the writers (``_atomic``), which the chart export uses as well: this
module brings the wire layer's download (``ReportStream``), which an export has no use for.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from airflow_provider_analytics.destinations import DownloadResult
from airflow_provider_analytics.destinations._atomic import write_atomically
from airflow_provider_analytics.destinations._target import AnyPath, Destination, holds_report, refuse_existing
from airflow_provider_analytics.wire._download import ReportStream
from airflow_provider_analytics.wire._file_headers import EXTENSION_BY_CONTENT_TYPE, media_type_of
from airflow_provider_analytics.wire.client import AnalyticsClient


def download_report_to(
    client: AnalyticsClient,
    report_id: str,
    destination: object,
    *,
    overwrite: bool = False,
    report: Mapping[str, Any] | None = None,
    keep_identical: bool = False,
) -> DownloadResult:
    """Stream a ready report to ``destination`` and return what was written.

    :param client: the client to download with.
    :param report_id: the report's id.
    :param destination: a local path, a URI or an ``ObjectStoragePath``; ending in ``/`` means a folder. A
        :class:`Destination` parsed earlier in the same task step is used as it is, not parsed again.
    :param overwrite: replace an existing file.
    :param report: the report as the platform last described it; its ``size_bytes`` and ``sha256`` then
        bound and check the download too.
    :param keep_identical: without ``overwrite``, an existing target with exactly ``report``'s size and sha-256 is
        kept and returned (``kept=True``) instead of refused, and nothing is downloaded into it.
    """
    where = destination if isinstance(destination, Destination) else Destination.parse(destination)
    known = report or {}
    # Checked here, right before the download, even when the operator checked before it waited for the
    # report: neither writer refuses an existing target itself (a local file is moved into place with
    # os.replace, an object-store upload completes over any object), so this is the one check that sees a file
    # that appeared while the task waited. For a folder the file name is known only from the answer, below.
    if not where.is_folder and _kept(where.path, overwrite, keep_identical, known):
        return _kept_result(where, where.path, known)
    where.prepare()
    with ReportStream(
        client, report_id, expected_size=known.get("size_bytes"), expected_sha256=known.get("sha256")
    ) as stream:
        target = where.target(stream.filename or f"{report_id}.{stream.extension}")
        if where.is_folder and _kept(target, overwrite, keep_identical, known):
            return _kept_result(where, target, known)  # the body is never read: leaving closes the answer
        written = write_atomically(target, stream.copy_to, stream.size)
    return DownloadResult(where.uri_of(target), written.size, written.sha256, written.content_type)


def _kept(target: AnyPath, overwrite: bool, keep_identical: bool, report: Mapping[str, Any]) -> bool:
    # True: the target already is the report's file; raises when it exists otherwise and overwrite is off.
    if keep_identical and not overwrite and holds_report(target, report):
        return True
    refuse_existing(target, overwrite)
    return False


def _kept_result(where: Destination, target: AnyPath, report: Mapping[str, Any]) -> DownloadResult:
    # The report's own word on its media type, kept only when it is one a download would name a file for.
    content_type = media_type_of(report.get("content_type"))
    return DownloadResult(
        where.uri_of(target),
        report["size_bytes"],
        str(report["sha256"]).lower(),
        content_type if content_type in EXTENSION_BY_CONTENT_TYPE else None,
        kept=True,
    )
