"""Writing to an object store (s3://, gs://, abfs://...): straight into the final key, visible only when verified.

An object store has no rename: "write a temporary key, then move it" is a full server-side copy plus a delete,
doubles the time and leaves the temporary object behind whenever either step fails. Instead the bytes go to the
final key through the filesystem's buffered writer (fsspec's ``AbstractBufferedFile``: s3fs, gcsfs, adlfs),
which holds back the last block until ``close()``: a multipart (resumable) upload that is completed only once
the caller's checks pass, and discarded (the multipart upload aborted) on any failure. A file smaller than one
block is never sent at all before ``close()``, so a failed small download uploads nothing.

The caller's thread writes into that file, which sends a part whenever its buffer holds a block, so memory stays
flat (about two blocks) whatever the file's size. A writer thread with a queue of its own, to overlap receiving
and uploading, used to sit in between: ``bench/object_storage.py`` found it no faster (256 MiB to moto's S3,
6 alternating pairs on a loaded machine: each way faster in 3, medians 22.0 s with it and 24.4 s without,
while runs of one way spread 3.5x) and about 12 MB heavier in peak RSS (207 MB against 195 MB).
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

from airflow_provider_analytics.wire.errors import AnalyticsInputError

T = TypeVar("T")
MIB = 1024 * 1024
# Parts of 8 MiB: over S3's 5 MiB minimum, small enough that a part in flight costs little memory.
BLOCK_SIZE = 8 * MIB
# S3 allows 10,000 parts; a larger file gets larger parts (known from its announced size).
_MAX_PARTS = 9_000

# What each scheme needs installed for Airflow's ObjectStoragePath to reach it (docs/object-storage.md).
NEEDS_BY_SCHEME = {
    "s3": "the Amazon provider with s3fs: pip install 'apache-airflow-providers-amazon[s3fs]'",
    "gs": "the Google provider with gcsfs: pip install apache-airflow-providers-google gcsfs",
    "abfs": "the Microsoft Azure provider with adlfs: pip install apache-airflow-providers-microsoft-azure adlfs",
}
for _alias, _scheme in {"s3a": "s3", "s3n": "s3", "gcs": "gs", "abfss": "abfs", "az": "abfs", "adl": "abfs"}.items():
    NEEDS_BY_SCHEME[_alias] = NEEDS_BY_SCHEME[_scheme]


def needs_for(scheme: str) -> str:
    """What to install for ``scheme``, as the end of a sentence."""
    return NEEDS_BY_SCHEME.get(scheme, f"the Airflow provider that registers the {scheme} filesystem")


def filesystem_of(path: Any, shown: str) -> Any:
    """The fsspec filesystem behind an ``ObjectStoragePath``, or a sentence saying what to install.

    Called while the destination is parsed, before any request: without it the raw ``ValueError: No
    filesystem registered for scheme s3`` would escape only once the report had been requested.

    :param path: the ``ObjectStoragePath``.
    :param shown: the destination as the user gave it, for the message.
    """
    try:
        fs = path.fs
    except (ValueError, ImportError) as exc:  # Airflow's registry, or fsspec's own "install x" ImportError
        raise unusable(shown, exc) from None
    # A worker process may have listed this prefix before (s3fs caches listings for ever): ask the store.
    with contextlib.suppress(Exception):
        fs.invalidate_cache(path.path)
    return fs


def unusable(shown: str, exc: BaseException) -> AnalyticsInputError:
    """The error for a destination whose scheme has no usable filesystem here."""
    scheme = shown.split("://", 1)[0].lower() if "://" in shown else "?"
    return AnalyticsInputError(
        f"cannot write to {shown}: {scheme}:// destinations need {needs_for(scheme)} ({type(exc).__name__}: {exc})"
    )


def block_size_for(size_hint: int | None) -> int:
    """A part size that keeps a file of ``size_hint`` bytes under S3's 10,000 parts."""
    if not size_hint:
        return BLOCK_SIZE
    return max(BLOCK_SIZE, math.ceil(size_hint / _MAX_PARTS / MIB) * MIB)


class ObjectUpload:
    """A write-only binary file that streams to ``path`` on ``fs`` through fsspec's buffered file; see the module doc.

    Nothing is visible at ``path`` until :meth:`commit`; :meth:`abort` leaves nothing behind. ``seek(0)``
    (a download that has to start over) discards what was sent and begins a fresh upload.

    :param fs: the fsspec filesystem.
    :param path: the key, as the filesystem names it (``bucket/key``).
    :param shown: the destination's URI, for messages.
    :param block_size: the upload's part size.
    """

    def __init__(self, fs: Any, path: str, shown: str, block_size: int = BLOCK_SIZE) -> None:
        self._fs, self._path, self._shown, self._block_size = fs, path, shown, block_size
        self._file: Any = None
        self._done = False
        self._position = 0

    # The file API ReportStream.copy_to and io.TextIOWrapper use.
    closed = False

    def writable(self) -> bool:
        return True

    def readable(self) -> bool:
        return False

    def seekable(self) -> bool:
        return False  # only seek(0), to start over: TextIOWrapper must not try to tell()

    def flush(self) -> None:
        """Nothing to do: fsspec's file sends a part when its buffer holds a block, the rest on :meth:`commit`."""

    def tell(self) -> int:
        return self._position

    def write(self, data: bytes | bytearray | memoryview) -> int:
        with self._reported():
            if self._file is None:
                self._file = self._open()
            self._file.write(data)
        self._position += len(data)
        return len(data)

    def seek(self, offset: int, whence: int = 0) -> int:
        if (offset, whence) != (0, 0):
            raise OSError(f"an upload to {self._shown} can only start over (seek(0)), not move to {offset}")
        self._discard()
        self._position = 0
        return 0

    def truncate(self, size: int | None = None) -> int:
        if (self._position if size is None else size) != 0:
            raise OSError(f"an upload to {self._shown} can only be emptied (after seek(0))")
        return 0

    def commit(self) -> None:
        """Send the rest and complete the upload: the object appears now, whole."""
        self._done = self.closed = True
        with self._reported():
            if self._file is None:  # an empty file is still a file
                self._file = self._open()
            self._file.close()  # completes the multipart upload, or one PUT for a small file
            self._file = None

    def abort(self) -> None:
        """Drop everything: the upload (its multipart upload aborted). Never raises."""
        if self._done:
            return
        self._done = self.closed = True
        self._discard()

    @contextlib.contextmanager
    def _reported(self) -> Iterator[None]:
        """Turn the filesystem's failure into the task's error, dropping the upload (the first error is the one)."""
        try:
            yield
        except Exception as exc:
            self._discard()
            if isinstance(exc, AnalyticsInputError):
                raise
            raise AnalyticsInputError(f"cannot write {self._shown}: {type(exc).__name__}: {exc}") from exc

    def _open(self) -> Any:
        return self._fs.open(self._path, "wb", block_size=self._block_size)

    def _discard(self) -> None:
        if self._file is None:
            return
        opened, self._file = self._file, None
        with contextlib.suppress(Exception):  # the first error is the one to report
            opened.discard()  # s3fs: aborts the multipart upload; gcsfs: cancels the resumable upload
        # fsspec's __del__ would otherwise close() the discarded file, which commits (or fails noisily).
        with contextlib.suppress(Exception):
            opened.closed = True


def write_object(fs: Any, path: str, shown: str, write: Callable[[Any], T], size_hint: int | None = None) -> T:
    """Run ``write`` on an :class:`ObjectUpload` to ``path``; commit when it returns, abort when it raises.

    :param fs: the fsspec filesystem.
    :param path: the key, as the filesystem names it.
    :param shown: the destination's URI, for messages.
    :param write: writes (and verifies) the content; raising leaves nothing behind.
    :param size_hint: the expected size, to pick a part size.
    """
    upload = ObjectUpload(fs, path, shown, block_size_for(size_hint))
    try:
        result = write(upload)
        upload.commit()
    except BaseException:
        upload.abort()
        raise
    return result
