"""Where a downloaded report goes: a local path or any ``ObjectStoragePath`` URI, file or folder.

A failed download never leaves a file (complete-looking or partial) behind. On a local disk the file is
written under a temporary name beside the target and moved into place once verified; an object store has no
rename, so there the bytes stream straight to the final key in an upload that is completed only once
verified and aborted otherwise (hooks/object_storage.py, docs/object-storage.md).
"""

from __future__ import annotations

import contextlib
import os
import secrets
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO, TypeVar
from urllib.parse import unquote, urlsplit

from airflow_provider_analytics.hooks.object_storage import filesystem_of, unusable, write_object
from airflow_provider_analytics.version_compat import (
    AIRFLOW_VERSION,
    local_path_of,
    object_storage_paths_work,
    universal_pathlib_version,
)
from airflow_provider_analytics.wire.client import AnalyticsClient
from airflow_provider_analytics.wire.download import ReportStream
from airflow_provider_analytics.wire.errors import AnalyticsInputError

# A pathlib.Path or an airflow.sdk.ObjectStoragePath: both offer the same file API used here.
AnyPath = Any
T = TypeVar("T")


@dataclass(frozen=True)
class DownloadResult:
    """A finished, verified download.

    :param uri: the file's location: a plain path for local files, the URI otherwise.
    :param size: bytes written.
    :param sha256: hex sha-256 of the file.
    :param content_type: the file's media type.
    """

    uri: str
    size: int
    sha256: str
    content_type: str | None

    def to_dict(self) -> dict[str, Any]:
        """A JSON-compatible dict (for XCom)."""
        return {"uri": self.uri, "size": self.size, "sha256": self.sha256, "content_type": self.content_type}


@dataclass(frozen=True)
class Destination:
    """A parsed destination: the path, whether it is a folder, and whether to report it as a ``file://`` URI."""

    path: AnyPath
    is_folder: bool
    file_uri: bool = False

    @classmethod
    def parse(cls, destination: object) -> Destination:
        """Parse a local path, a URI string or an ``ObjectStoragePath``; a trailing ``/`` means a folder.

        An ``ObjectStoragePath`` drops a trailing ``/`` when it is built, so one counts as a folder only
        when that folder already exists; name a new folder as a string ending in ``/`` instead.

        :param destination: where to write.
        """
        from airflow.providers.common.compat.sdk import ObjectStoragePath

        if isinstance(destination, ObjectStoragePath):
            folder_hint = str(destination).endswith("/")
            local = local_path_of(destination)
            if local is not None:  # written as a local file; reported as the file:// URI it was given as
                return cls(local, folder_hint or local.is_dir(), file_uri=True)
            filesystem_of(destination, str(destination))
            return cls(destination, folder_hint or destination.is_dir())
        if isinstance(destination, (str, os.PathLike)):
            text = os.fspath(destination)
            if not isinstance(text, str) or not text.strip():
                raise AnalyticsInputError(f"destination must be a path or a URI, got {destination!r}")
            folder_hint = text.endswith(("/", os.sep))
            if text.startswith("file://"):
                text = _local_path_of_file_uri(text)
            if "://" not in text:
                path = Path(text)
                return cls(path, folder_hint or path.is_dir())
            if not object_storage_paths_work():
                raise AnalyticsInputError(
                    f"cannot write to {text}: on Airflow {AIRFLOW_VERSION} with universal-pathlib "
                    f"{universal_pathlib_version()}, ObjectStoragePath refuses every protocol; install "
                    "'universal-pathlib<0.3' (docs/compatibility.md), or write to a local path"
                )
            try:  # Airflow 2.11 looks the filesystem up as the path is built, later releases on first use
                remote = ObjectStoragePath(text)
            except (ValueError, ImportError) as exc:
                raise unusable(text, exc) from None
            filesystem_of(remote, text)
            return cls(remote, folder_hint or remote.is_dir())
        raise AnalyticsInputError(
            f"destination must be a local path, a URI such as s3://bucket/key, or an ObjectStoragePath; "
            f"got {type(destination).__name__}"
        )

    def prepare(self) -> None:
        """Create the folder the file goes in, or fail with what to change; before any request is sent."""
        folder = self.path if self.is_folder else self.path.parent
        if local_path_of(self.path) is None:
            # An object store has no folders to create (s3fs's mkdir would even create a missing bucket).
            if self.is_folder and self.path.is_file():
                raise AnalyticsInputError(
                    f"destination {self.path} ends in '/' but is an existing object: name a folder, or drop the '/' "
                    "to write to that object"
                )
            return
        try:
            if self.is_folder and self.path.exists() and not self.path.is_dir():
                raise AnalyticsInputError(
                    f"destination {self.path} ends in '/' but is an existing file: name a folder, or drop the '/' "
                    "to write to that file"
                )
            folder.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise AnalyticsInputError(
                f"cannot create the folder {folder} for the report: {exc.strerror or exc}"
            ) from None

    def target(self, filename: str) -> AnyPath:
        """The file to write: the destination itself, or ``filename`` inside it when it is a folder."""
        return self.path / filename if self.is_folder else self.path

    def uri_of(self, path: AnyPath) -> str:
        """How to report ``path`` to users: a plain path when local, the URI otherwise.

        A local ``ObjectStoragePath`` destination is reported as its ``file://`` URI, as it was given.
        """
        return f"file://{path}" if self.file_uri else str(path)


def _local_path_of_file_uri(uri: str) -> str:
    parts = urlsplit(uri)
    if parts.netloc not in ("", "localhost") or not parts.path.startswith("/"):
        raise AnalyticsInputError(
            f"a file:// destination must be an absolute local path (file:///path or file://localhost/path), got {uri!r}"
        )
    return unquote(parts.path)


def refuse_existing(target: AnyPath, overwrite: bool) -> None:
    """Fail before writing when the target exists and ``overwrite`` is not set."""
    if local_path_of(target) is None:
        # s3fs answers exists() from listings it cached (Destination.parse's is_dir()): ask the store itself.
        with contextlib.suppress(Exception):
            target.fs.invalidate_cache(target.path)
    if not overwrite and target.exists():
        raise AnalyticsInputError(f"{target} already exists: pass overwrite=True to replace it, or pick another path")


def _open_new(local: Path) -> BinaryIO:
    # A local file is created, never reused: O_EXCL refuses an existing file or a planted symlink.
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_BINARY", 0)
    return os.fdopen(os.open(local, flags, 0o666), "wb")


def write_atomically(target: AnyPath, write: Callable[[BinaryIO], T], size_hint: int | None = None) -> T:
    """Run ``write`` on a new temporary file beside ``target``, then move it into place; on failure remove it.

    On an object store (no rename) ``write`` streams into ``target`` itself, in an upload completed only when
    ``write`` returns and aborted when it raises (:func:`write_object`).

    :param target: the final file.
    :param write: writes the content to the binary file object it is given.
    :param size_hint: the expected size, when known (an object store's part size depends on it).
    """
    if local_path_of(target) is None:
        return write_object(target.fs, target.path, str(target), write, size_hint)
    partial = target.parent / f".{target.name}.{secrets.token_hex(8)}.part"
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        with _open_new(local_path_of(partial) or Path(partial)) as out:
            result = write(out)
        partial.replace(target)
    except OSError as exc:
        _remove(partial)
        raise AnalyticsInputError(f"cannot write {target}: {exc.strerror or exc}") from None
    except BaseException:
        _remove(partial)
        raise
    return result


def _remove(partial: AnyPath) -> None:
    with contextlib.suppress(OSError):  # the error that brought us here is the one to report
        partial.unlink(missing_ok=True)


def download_report_to(
    client: AnalyticsClient,
    report_id: str,
    destination: object,
    *,
    overwrite: bool = False,
    report: Mapping[str, Any] | None = None,
) -> DownloadResult:
    """Stream a ready report to ``destination`` and return what was written.

    :param client: the client to download with.
    :param report_id: the report's id.
    :param destination: a local path, a URI or an ``ObjectStoragePath``; ending in ``/`` means a folder.
    :param overwrite: replace an existing file.
    :param report: the report as the platform last described it; its ``size_bytes`` and ``sha256`` then
        bound and check the download too.
    """
    where = Destination.parse(destination)
    if not where.is_folder:
        refuse_existing(where.path, overwrite)
    where.prepare()
    known = report or {}
    with ReportStream(
        client, report_id, expected_size=known.get("size_bytes"), expected_sha256=known.get("sha256")
    ) as stream:
        target = where.target(stream.filename or f"{report_id}.{stream.extension}")
        if where.is_folder:
            refuse_existing(target, overwrite)
        written = write_atomically(target, stream.copy_to, stream.size)
    return DownloadResult(where.uri_of(target), written.size, written.sha256, written.content_type)
