"""Where a downloaded report or an exported chart is written: a local path or any ``ObjectStoragePath`` URI.

The public name here is :class:`DownloadResult`, what
:meth:`~airflow_provider_analytics.hooks.analytics.AnalyticsHook.download_report` returns. How a destination is
parsed and checked (``_target``), written whole or not at all (``_atomic``, ``_object_storage``) and filled from
the platform (``_download``) is the provider's own business: those modules may change in any release.

Cheap to import (the standard library only): the hook's module names :class:`DownloadResult` in its
signatures, and a DAG file must not pay for the client or the object-storage code at every parse.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = ["DownloadResult"]


@dataclass(frozen=True)
class DownloadResult:
    """A finished, verified download.

    :param uri: the file's location: a plain path for local files, the URI otherwise.
    :param size: bytes written.
    :param sha256: hex sha-256 of the file.
    :param content_type: the file's media type.
    :param kept: the file was already there with exactly the report's size and sha-256 (an earlier try wrote it),
        so nothing was downloaded; not part of :meth:`to_dict`, which describes the file, not how it got there.
    """

    uri: str
    size: int
    sha256: str
    content_type: str | None
    kept: bool = False

    def to_dict(self) -> dict[str, Any]:
        """A JSON-compatible dict (for XCom and asset events): the file's ``uri``, ``size``, ``sha256`` and type."""
        return {"uri": self.uri, "size": self.size, "sha256": self.sha256, "content_type": self.content_type}
