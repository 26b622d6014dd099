"""Which file a download or an export writes: the destination parsed, its folder made, an existing file refused.

One parse per task step: :meth:`Destination.parse` touches the store (a look at the bucket, and ``is_dir()``: a
listing on S3), so the operator parses once, checks before it waits, and hands the parsed
:class:`Destination` to the hook, which does not parse it again
(:func:`~airflow_provider_analytics.destinations._download.download_report_to`).
Everything here runs before any byte is written; nothing here writes the file.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

from airflow_provider_analytics.destinations._object_storage import filesystem_of, unusable
from airflow_provider_analytics.version_compat import (
    AIRFLOW_VERSION,
    bucket_of,
    local_path_of,
    object_storage_paths_work,
    universal_pathlib_version,
)
from airflow_provider_analytics.wire.errors import AnalyticsInputError

# A pathlib.Path or an airflow.sdk.ObjectStoragePath: both offer the same file API used here.
AnyPath = Any
_SHA256_HEX = re.compile(r"[0-9a-f]{64}")


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
            _check_bucket(destination)
            return cls(destination, folder_hint or destination.is_dir())
        if isinstance(destination, (str, os.PathLike)):
            text = os.fspath(destination)
            if not isinstance(text, str) or not text.strip():
                raise AnalyticsInputError(f"destination must be a path or a URI, got {destination!r}")
            if "\x00" in text:  # the OS (and pathlib's checks) raise ValueError on it
                raise AnalyticsInputError(
                    "destination holds a NUL character (\\x00), which no path or URI can: remove it"
                )
            if not text.isascii():
                try:  # a lone surrogate (a run conf's "\ud800") cannot be a file's name: the OS raises on it
                    text.encode("utf-8")
                except UnicodeEncodeError as exc:
                    raise AnalyticsInputError(
                        f"destination holds {text[exc.start]!r} at character {exc.start}, half of a UTF-16 pair "
                        "that no path or URI can hold: correct the text it was rendered from"
                    ) from None
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
            _check_bucket(remote)
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


def _check_bucket(path: AnyPath) -> None:
    """Refuse a destination whose bucket (or container) does not exist, with one look at the bucket (a ``HEAD`` on
    S3), while the destination is parsed, before any request to the platform: otherwise the first write found it,
    after the work was done (an export's listings, a report waited for).

    Only a clear "not found" is refused: a store that does not let this connection look at the bucket (403), or
    that fails otherwise, is left to the write, which may still be allowed.
    """
    bucket = bucket_of(path)
    if not bucket:
        return
    try:
        path.fs.info(bucket)
    except FileNotFoundError:
        raise AnalyticsInputError(
            f"destination {path}: the bucket {bucket!r} does not exist: create it, or correct the destination"
        ) from None
    except Exception as error:  # no right to look, or an answer this check cannot read: the write will say
        if no_credentials(error):  # but no write goes anywhere without any: a setting to change, not retried
            raise AnalyticsInputError(
                f"destination {path}: no credentials for its store ({error}): give the connection in the"
                " destination (scheme://CONN_ID@bucket/...) a key, or the deployment the store's credentials"
            ) from None
        return


def no_credentials(error: BaseException) -> bool:
    """Whether ``error`` is botocore's "no credentials" (none found, or half of a key): S3 without any key. Told by
    its class's name and module, as botocore is not the provider's dependency (only S3 destinations bring it)."""
    return any(
        kind.__module__ == "botocore.exceptions" and kind.__name__ in ("NoCredentialsError", "PartialCredentialsError")
        for kind in type(error).__mro__
    )


def _local_path_of_file_uri(uri: str) -> str:
    parts = urlsplit(uri)
    if parts.netloc not in ("", "localhost") or not parts.path.startswith("/"):
        raise AnalyticsInputError(
            f"a file:// destination must be an absolute local path (file:///path or file://localhost/path), got {uri!r}"
        )
    return unquote(parts.path)


def refuse_existing(target: AnyPath, overwrite: bool) -> None:
    """Fail before writing when the target exists and ``overwrite`` is not set.

    Neither writer refuses an existing target by itself (a local file is moved into place with
    ``os.replace``, an upload completes over any object), so this is the guard: call it right before writing.
    """
    _forget_listings(target)
    if not overwrite and target.exists():
        raise AnalyticsInputError(f"{target} already exists: pass overwrite=True to replace it, or pick another path")


def holds_report(target: AnyPath, report: Mapping[str, Any]) -> bool:
    """Whether ``target`` already holds exactly the report's content: its ``size_bytes`` and its ``sha256``.

    What an earlier try of the same download left when its process was lost after the file was in place and
    before the task could report it. The file is read (and hashed) only when its size is the report's; a report
    that is not ``ready``, or whose size or digest is missing or malformed, is never held.

    :param target: the file to look at.
    :param report: the report as the platform last described it (untrusted: checked here).
    """
    size, sha256 = report.get("size_bytes"), report.get("sha256")
    if report.get("status") != "ready" or type(size) is not int or size < 0:
        return False
    if not isinstance(sha256, str) or not _SHA256_HEX.fullmatch(sha256.lower()):
        return False
    _forget_listings(target)
    digest = hashlib.sha256()
    try:
        if not target.is_file() or target.stat().st_size != size:
            return False
        with target.open("rb") as file:
            while chunk := file.read(1024 * 1024):
                digest.update(chunk)
    except OSError:  # gone or unreadable meanwhile: not held, so the usual refusal names it
        return False
    return hmac.compare_digest(digest.hexdigest(), sha256.lower())


def _forget_listings(target: AnyPath) -> None:
    if local_path_of(target) is None:
        # s3fs answers exists() from listings it cached (Destination.parse's is_dir()): ask the store itself.
        with contextlib.suppress(Exception):
            target.fs.invalidate_cache(target.path)
