"""Streaming report downloads: resume with ``Range``, verify length and ``Repr-Digest``, never trust names.

Memory stays flat: the body goes to the output chunk by chunk, as the transport reads it, while it is
hashed. Where the bytes end up (a local temporary file, an object store) is the caller's business; this
module only writes to a binary file object and says whether what it wrote is the whole, correct file.
"""

from __future__ import annotations

import base64
import hashlib
import logging
import re
import time
import unicodedata
from dataclasses import dataclass
from types import TracebackType
from typing import BinaryIO
from urllib.parse import unquote

import httpx

from airflow_provider_analytics.wire import endpoints
from airflow_provider_analytics.wire.bodies import content_codings
from airflow_provider_analytics.wire.client import AnalyticsClient
from airflow_provider_analytics.wire.contract import HEADER_REPR_DIGEST, HEADER_REQUEST_ID
from airflow_provider_analytics.wire.deadline import request_deadline
from airflow_provider_analytics.wire.errors import DownloadIntegrityError, clean_text
from airflow_provider_analytics.wire.progress import TransferProgress

log = logging.getLogger("airflow_provider_analytics.wire")

EXTENSION_BY_CONTENT_TYPE = {
    "application/pdf": "pdf",
    "text/csv": "csv",
    "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet": "xlsx",
    "text/html": "html",
}
_CONTENT_RANGE = re.compile(r"^bytes ([0-9]{1,19})-([0-9]{1,19})/([0-9]{1,19})$")
_CONTENT_LENGTH = re.compile(r"^[0-9]{1,19}$")
# A download may take its timeout plus the time this rate needs for the announced size: slow links
# finish, a server that trickles bytes does not hold the task for ever.
MIN_DOWNLOAD_RATE = 16 * 1024
_UNSAFE_CHARS = re.compile(r"[^A-Za-z0-9._ ()-]+")


@dataclass(frozen=True)
class DownloadedFile:
    """What a finished download wrote: its size, sha-256 (hex) and content type."""

    size: int
    sha256: str
    content_type: str | None


def safe_filename(content_disposition: str | None, extension: str | None = None) -> str | None:
    """Reduce a ``Content-Disposition`` file name to a safe base name, or ``None`` when nothing is left.

    The name is untrusted: directories, ``..``, leading dots, control and shell-special characters are
    dropped, so it can never choose where the file goes; with ``extension`` a name that does not end in
    it is refused too, so a server can never choose what kind of file lands (a ``.py`` in a DAG folder).

    :param content_disposition: the header's value.
    :param extension: the extension the name must have (from the content type), without the dot.
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
    base = _UNSAFE_CHARS.sub("_", base).strip(" .")[-200:].lstrip(" .")
    if extension is not None and not base.lower().endswith(f".{extension}"):
        return None
    return base or None


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
    except ValueError:  # binascii.Error, and non-ASCII text (what httpx makes of a byte like 0xE9)
        digest = b""
    if len(digest) != hashlib.sha256().digest_size:
        raise DownloadIntegrityError(f"the Repr-Digest header has a malformed sha-256 value: {value!r}")
    return digest


class ReportStream:
    """An open download of a report; use it as a context manager, then :meth:`copy_to` a file object.

    Only a ``200`` starts a download and only a ``206`` continues one; the body is read as sent
    (``Accept-Encoding: identity``), bounded by its ``Content-Length``, the report's own ``size_bytes``
    when known and the client's ``max_download_bytes``, and checked against ``Repr-Digest`` and the
    report's ``sha256`` when known.

    :param client: the client to download with.
    :param report_id: the report's id.
    :param max_resumes: how many times a dropped connection is resumed (or the download restarted).
    :param expected_size: the report's ``size_bytes``, when the caller knows it.
    :param expected_sha256: the report's ``sha256`` (hex), when the caller knows it.
    """

    def __init__(
        self,
        client: AnalyticsClient,
        report_id: str,
        *,
        max_resumes: int = 3,
        expected_size: int | None = None,
        expected_sha256: str | None = None,
    ) -> None:
        self._client = client
        self._report_id = endpoints.validate_id(report_id, "report_id")
        self._max_resumes = max_resumes
        self._expected_size = expected_size if isinstance(expected_size, int) and expected_size >= 0 else None
        self._expected_sha256 = expected_sha256.lower() if isinstance(expected_sha256, str) else None
        self._response: httpx.Response | None = None
        # The answer the file began with (the first 200, or a restart's): its size, type, digest and ETag
        # describe the whole file; a 206 that continues it only carries the rest.
        self._whole: httpx.Headers | None = None

    def __enter__(self) -> ReportStream:
        self._response = self._checked_start(self._client.open_stream(endpoints.download_report(self._report_id)))
        return self

    def __exit__(self, *exc_info: type[BaseException] | BaseException | TracebackType | None) -> None:
        if self._response is not None:
            self._response.close()

    @property
    def _headers(self) -> httpx.Headers:
        if self._whole is None:
            raise RuntimeError("use ReportStream as a context manager")
        return self._whole

    @property
    def size(self) -> int:
        """The announced size of the whole file, in bytes."""
        return int(self._headers["Content-Length"])

    @property
    def filename(self) -> str | None:
        """The platform's file name, reduced to a safe base name; ``None`` unless it has :attr:`extension`."""
        return safe_filename(self._headers.get("Content-Disposition"), self.extension)

    @property
    def content_type(self) -> str | None:
        """The file's media type, without parameters."""
        value = self._headers.get("Content-Type")
        return value.split(";")[0].strip().lower() if value else None

    @property
    def extension(self) -> str:
        """A file extension for the content type (``bin`` when it is unknown)."""
        return EXTENSION_BY_CONTENT_TYPE.get(self.content_type or "", "bin")

    def _fail(self, problem: str, response: httpx.Response | None = None) -> DownloadIntegrityError:
        source = response if response is not None else self._response
        request_id = source.headers.get(HEADER_REQUEST_ID) if source is not None else None
        suffix = f" (request id {clean_text(request_id, 200)})" if request_id else ""
        return DownloadIntegrityError(f"report {self._report_id}: {problem}{suffix}")

    def _checked_start(self, response: httpx.Response) -> httpx.Response:
        """The first answer (or a restart's): ``200``, not compressed, of an allowed announced size."""
        try:
            if response.status_code != 200:
                raise self._fail(f"the download answered {response.status_code}; only 200 can start one", response)
            codings = content_codings(response.headers.get("Content-Encoding"))
            if codings:
                raise self._fail(
                    f"the platform sent the file with Content-Encoding {codings} although identity was asked", response
                )
            length = response.headers.get("Content-Length")
            if length is None or not _CONTENT_LENGTH.match(length):
                raise self._fail(
                    f"the download has no valid Content-Length ({clean_text(length, 40)!r}), so it cannot be verified",
                    response,
                )
            limit = self._client.config.max_download_bytes
            if int(length) > limit:
                raise self._fail(
                    f"the platform announced {length} bytes, over the {limit} allowed (connection extra "
                    "max_download_bytes)",
                    response,
                )
            if self._expected_size is not None and int(length) != self._expected_size:
                raise self._fail(
                    f"the download announces {length} bytes, the report says size_bytes {self._expected_size}", response
                )
            parse_repr_digest(response.headers.get(HEADER_REPR_DIGEST))
        except DownloadIntegrityError:
            response.close()
            raise
        self._whole = response.headers
        return response

    def copy_to(self, out: BinaryIO, progress: TransferProgress | None = None) -> DownloadedFile:
        """Write the whole body to ``out``, resuming after dropped connections, and verify it.

        :param out: a binary file object opened for writing (seekable: a download may have to start over).
        :param progress: logs how far a long download got; by default every ``PROGRESS_INTERVAL`` seconds.
        :raises DownloadIntegrityError: the body was short, long or wrong after the resumes, or took longer
            than its deadline (the timeout plus the announced size at 16 KiB/s).
        """
        response = self._response
        if response is None:
            raise RuntimeError("use ReportStream as a context manager")
        total = self.size
        deadline = time.monotonic() + self._client.config.timeout + total / MIN_DOWNLOAD_RATE
        if progress is None:
            progress = TransferProgress(f"report {self._report_id}", total=total)
        hasher, written, resumes = hashlib.sha256(), 0, 0
        announced: list[bytes | None] = []  # Repr-Digests of resuming 206s: the whole file's digest too
        while True:
            try:
                with request_deadline(deadline):
                    for chunk in response.iter_raw():
                        if written + len(chunk) > total:
                            raise self._fail(f"the platform sent more than the {total} bytes it announced")
                        out.write(chunk)
                        hasher.update(chunk)
                        written += len(chunk)
                        progress.update(written)
                break
            except httpx.TransportError as exc:
                response.close()
                if written >= total or resumes >= self._max_resumes or time.monotonic() >= deadline:
                    raise self._fail(
                        f"connection lost after {written} of {total} bytes and {resumes} resumes ({type(exc).__name__})"
                    ) from exc
                resumes += 1
                log.warning(
                    "Report %s: connection lost after %d of %d bytes (%s); resuming (%d of %d)",
                    self._report_id, written, total, type(exc).__name__, resumes, self._max_resumes,
                )  # fmt: skip
                response = self._resume(written, total)
                self._response = response
                if response.status_code == 200:  # a restart: the file changed, or ranges are not honoured
                    out.seek(0)
                    out.truncate()
                    hasher, written, total, announced = hashlib.sha256(), 0, self.size, []
                    progress.total = total
                else:
                    announced.append(parse_repr_digest(response.headers.get(HEADER_REPR_DIGEST)))
        if written != total:
            raise self._fail(f"received {written} bytes, Content-Length announced {total}")
        digests = {parse_repr_digest(self._headers.get(HEADER_REPR_DIGEST)), *announced} - {None}
        if any(hasher.digest() != expected for expected in digests):
            raise self._fail(f"sha-256 of the {written} bytes received does not match Repr-Digest")
        if self._expected_sha256 is not None and hasher.hexdigest() != self._expected_sha256:
            raise self._fail(f"sha-256 of the {written} bytes received does not match the report's sha256")
        progress.finish(written)
        return DownloadedFile(size=written, sha256=hasher.hexdigest(), content_type=self.content_type)

    def _strong_etag(self) -> str | None:
        etag = self._headers.get("ETag")
        # Only a strong validator may splice two answers together (RFC 9110 13.1.5).
        return etag if etag and etag.startswith('"') and etag.endswith('"') and len(etag) > 2 else None

    def _resume(self, offset: int, total: int) -> httpx.Response:
        """Continue at ``offset`` when the file provably did not change, else start over."""
        etag = self._strong_etag()
        if etag is None:
            log.warning("Report %s: no strong ETag to resume against; downloading it again", self._report_id)
            return self._restart()
        response = self._client.open_stream(endpoints.download_report(self._report_id, offset=offset, if_range=etag))
        if response.status_code == 200:
            return self._checked_start(response)
        if response.status_code != 206:
            response.close()
            raise self._fail(
                f"asked to resume at byte {offset}, the platform answered {response.status_code}", response
            )
        if response.headers.get("ETag") != etag:
            response.close()
            log.warning("Report %s: the file changed while it was downloaded; downloading it again", self._report_id)
            return self._restart()
        match = _CONTENT_RANGE.match(response.headers.get("Content-Range", ""))
        length = response.headers.get("Content-Length")
        if (
            not match
            or int(match.group(1)) != offset
            or int(match.group(2)) != total - 1
            or int(match.group(3)) != total
            or length != str(total - offset)
            or content_codings(response.headers.get("Content-Encoding"))
        ):
            response.close()
            raise self._fail(
                f"asked to resume at byte {offset} of {total}, the platform answered Content-Range "
                f"{clean_text(response.headers.get('Content-Range'), 80)!r} with {clean_text(length, 40)} bytes",
                response,
            )
        return response

    def _restart(self) -> httpx.Response:
        return self._checked_start(self._client.open_stream(endpoints.download_report(self._report_id)))
