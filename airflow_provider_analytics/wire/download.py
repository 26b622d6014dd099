"""Streaming report downloads: resume with ``Range``, verify length and ``Repr-Digest``, never trust names.

Memory stays flat: the body goes to the output chunk by chunk, as the transport reads it, while it is
hashed. Where the bytes end up (a local temporary file, an object store) is the caller's business; this
module only writes to a binary file object and says whether what it wrote is the whole, correct file.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import logging
import re
import unicodedata
from dataclasses import dataclass
from types import TracebackType
from typing import BinaryIO
from urllib.parse import unquote

import httpx

from airflow_provider_analytics.wire import endpoints
from airflow_provider_analytics.wire.client import AnalyticsClient
from airflow_provider_analytics.wire.contract import HEADER_REPR_DIGEST, HEADER_REQUEST_ID
from airflow_provider_analytics.wire.errors import DownloadIntegrityError

log = logging.getLogger("airflow_provider_analytics.wire")

EXTENSION_BY_CONTENT_TYPE = {
    "application/pdf": "pdf",
    "text/csv": "csv",
    "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet": "xlsx",
    "text/html": "html",
}
_CONTENT_RANGE = re.compile(r"^bytes (\d+)-(\d+)/(\d+)$")
_UNSAFE_CHARS = re.compile(r"[^A-Za-z0-9._ ()-]+")


@dataclass(frozen=True)
class DownloadedFile:
    """What a finished download wrote: its size, sha-256 (hex) and content type."""

    size: int
    sha256: str
    content_type: str | None


def safe_filename(content_disposition: str | None) -> str | None:
    """Reduce a ``Content-Disposition`` file name to a safe base name, or ``None`` when nothing is left.

    The name is untrusted: directories, ``..``, leading dots, control and shell-special characters are
    dropped, so it can never choose where the file goes.

    :param content_disposition: the header's value.
    """
    if not content_disposition:
        return None
    extended = re.search(r"filename\*\s*=\s*(?:UTF-8|utf-8)''([^;]+)", content_disposition)
    plain = re.search(r'filename\s*=\s*"((?:[^"\\]|\\.)*)"|filename\s*=\s*([^;]+)', content_disposition)
    if extended:
        raw = unquote(extended.group(1).strip())
    elif plain:
        raw = re.sub(r"\\(.)", r"\1", plain.group(1)) if plain.group(1) is not None else plain.group(2).strip()
    else:
        return None
    base = unicodedata.normalize("NFKC", raw).replace("\\", "/").split("/")[-1]
    base = _UNSAFE_CHARS.sub("_", base).strip(" .")
    return base[:200] or None


def parse_repr_digest(value: str | None) -> bytes | None:
    """The sha-256 digest from an RFC 9530 ``Repr-Digest`` header (``sha-256=:<base64>:``).

    ``None`` when there is no header or it names only other algorithms.

    :raises DownloadIntegrityError: a sha-256 entry that is not 32 bytes of valid base64, since a digest
        that cannot be checked must not let a file through as verified.
    """
    if not value or "sha-256=" not in value:
        return None
    match = re.search(r"sha-256=:([^:]*):", value)
    try:
        digest = base64.b64decode(match.group(1), validate=True) if match else b""
    except binascii.Error:
        digest = b""
    if len(digest) != hashlib.sha256().digest_size:
        raise DownloadIntegrityError(f"the Repr-Digest header has a malformed sha-256 value: {value!r}")
    return digest


class ReportStream:
    """An open download of a report; use it as a context manager, then :meth:`copy_to` a file object.

    :param client: the client to download with.
    :param report_id: the report's id.
    :param max_resumes: how many times a dropped connection is resumed with ``Range``.
    """

    def __init__(self, client: AnalyticsClient, report_id: str, *, max_resumes: int = 3) -> None:
        self._client = client
        self._report_id = endpoints.validate_id(report_id, "report_id")
        self._max_resumes = max_resumes
        self._response: httpx.Response | None = None

    def __enter__(self) -> ReportStream:
        self._response = self._client.open_stream(endpoints.download_report(self._report_id))
        if self._response.headers.get("Content-Length") is None:
            self._response.close()
            raise DownloadIntegrityError(
                f"report {self._report_id}: the download has no Content-Length, so it cannot be verified"
            )
        return self

    def __exit__(self, *exc_info: type[BaseException] | BaseException | TracebackType | None) -> None:
        if self._response is not None:
            self._response.close()

    @property
    def _headers(self) -> httpx.Headers:
        if self._response is None:
            raise RuntimeError("use ReportStream as a context manager")
        return self._response.headers

    @property
    def size(self) -> int:
        """The announced size of the whole file, in bytes."""
        return int(self._headers["Content-Length"])

    @property
    def filename(self) -> str | None:
        """The platform's file name, reduced to a safe base name."""
        return safe_filename(self._headers.get("Content-Disposition"))

    @property
    def content_type(self) -> str | None:
        """The file's media type, without parameters."""
        value = self._headers.get("Content-Type")
        return value.split(";")[0].strip() if value else None

    @property
    def extension(self) -> str:
        """A file extension for the content type (``bin`` when it is unknown)."""
        return EXTENSION_BY_CONTENT_TYPE.get(self.content_type or "", "bin")

    def copy_to(self, out: BinaryIO) -> DownloadedFile:
        """Write the whole body to ``out``, resuming after dropped connections, and verify it.

        :param out: a binary file object opened for writing (seekable if a server may ignore ``Range``).
        :raises DownloadIntegrityError: the body was short after the resumes, or its digest was wrong.
        """
        response = self._response
        if response is None:
            raise RuntimeError("use ReportStream as a context manager")
        total, expected = self.size, parse_repr_digest(self._headers.get(HEADER_REPR_DIGEST))
        etag, request_id = self._headers.get("ETag"), self._headers.get(HEADER_REQUEST_ID)
        hasher, written, resumes = hashlib.sha256(), 0, 0
        while True:
            try:
                # No chunk_size: httpx would buffer up to a whole chunk and lose it when the connection
                # drops, so a resume would start up to a chunk early (or from 0 for a small file).
                # Chunks are bounded by the transport's read size (64 KiB for httpcore).
                for chunk in response.iter_bytes():
                    out.write(chunk)
                    hasher.update(chunk)
                    written += len(chunk)
                break
            except httpx.TransportError as exc:
                response.close()
                if written >= total or resumes >= self._max_resumes:
                    raise DownloadIntegrityError(
                        f"report {self._report_id}: connection lost after {written} of {total} bytes and "
                        f"{resumes} resumes (request id {request_id})"
                    ) from exc
                resumes += 1
                log.warning(
                    "Report %s: connection lost after %d of %d bytes (%s); resuming (%d of %d)",
                    self._report_id, written, total, type(exc).__name__, resumes, self._max_resumes,
                )  # fmt: skip
                response = self._resume(written, total, etag)
                self._response = response
                if response.status_code == 200:  # the server ignored Range: start over
                    out.seek(0)
                    out.truncate()
                    hasher, written = hashlib.sha256(), 0
        if written != total:
            raise DownloadIntegrityError(
                f"report {self._report_id}: received {written} bytes, Content-Length announced {total} "
                f"(request id {request_id})"
            )
        if expected is not None and hasher.digest() != expected:
            raise DownloadIntegrityError(
                f"report {self._report_id}: sha-256 of the {written} bytes received does not match Repr-Digest "
                f"(request id {request_id})"
            )
        return DownloadedFile(size=written, sha256=hasher.hexdigest(), content_type=self.content_type)

    def _resume(self, offset: int, total: int, etag: str | None) -> httpx.Response:
        spec = endpoints.download_report(self._report_id, offset=offset, if_range=etag)
        response = self._client.open_stream(spec)
        if response.status_code == 206:
            match = _CONTENT_RANGE.match(response.headers.get("Content-Range", ""))
            if not match or int(match.group(1)) != offset or int(match.group(3)) != total:
                response.close()
                raise DownloadIntegrityError(
                    f"report {self._report_id}: asked to resume at byte {offset} of {total}, the platform "
                    f"answered Content-Range {response.headers.get('Content-Range')!r}"
                )
        return response
