"""Streaming report downloads: resume with ``Range``, verify length and ``Repr-Digest``, never trust names.

Memory stays flat: the body goes to the output chunk by chunk, as the transport reads it, while it is
hashed; what the headers say about the file (its type, a safe name, its digests) is read by ``_file_headers.py``.
Where the bytes end up (a local temporary file, an object store) is the caller's business; this module only
writes to a binary file object and says whether what it wrote is the whole, correct file.
Hand-written because no HTTP library checks ``Repr-Digest`` (RFC 9530) or resumes a download, and a digest of
the representation spans every resumed ``Range`` part: only the loop that resumes can keep the hash going.
"""

from __future__ import annotations

import logging
import re
import time
from dataclasses import dataclass
from types import TracebackType
from typing import BinaryIO

import httpx

from airflow_provider_analytics.wire import _endpoints as endpoints
from airflow_provider_analytics.wire._bodies import content_codings
from airflow_provider_analytics.wire._contract import HEADER_REPR_DIGEST, HEADER_REQUEST_ID
from airflow_provider_analytics.wire._deadline import request_deadline
from airflow_provider_analytics.wire._file_headers import (
    DIGEST_ALGORITHMS,
    EXTENSION_BY_CONTENT_TYPE,
    Hash,
    media_type_of,
    repr_digests,
    safe_filename,
)
from airflow_provider_analytics.wire._ids import validate_id
from airflow_provider_analytics.wire._observer import observer
from airflow_provider_analytics.wire._progress import TransferProgress
from airflow_provider_analytics.wire.client import AnalyticsClient
from airflow_provider_analytics.wire.config import ClientConfig
from airflow_provider_analytics.wire.errors import AnalyticsTimeoutError, DownloadIntegrityError, clean_text

log = logging.getLogger("airflow_provider_analytics.wire")

_CONTENT_RANGE = re.compile(r"^bytes ([0-9]{1,19})-([0-9]{1,19})/([0-9]{1,19})$")
_CONTENT_LENGTH = re.compile(r"^[0-9]{1,19}$")
# A download may take its timeout plus the time this rate needs for the announced size: slow links
# finish, a server that trickles bytes does not hold the task for ever. (The floor over a window that ends a
# trickle sooner is the connection's min_download_rate, ClientConfig.min_download_rate.)
MIN_DOWNLOAD_RATE = 16 * 1024


@dataclass(frozen=True)
class DownloadedFile:
    """What a finished download wrote: its size, sha-256 (hex) and content type."""

    size: int
    sha256: str
    content_type: str | None


class _RateFloor:
    """Ends a download whose average rate over the config's ``download_rate_window`` falls below its
    ``min_download_rate`` (0: never). Checked as bytes arrive; a wait with none at all ends at the read timeout.
    A resume starts a new window, so the time to reconnect is not taken for slowness.
    """

    def __init__(self, config: ClientConfig, report_id: str) -> None:
        self._floor, self._window, self._report_id = config.min_download_rate, config.download_rate_window, report_id
        self.restart(0)

    def restart(self, written: int) -> None:
        """Begin a new window now, at ``written`` bytes (after a resume, or 0 when the download started over)."""
        self._since, self._count = time.monotonic(), written

    def check(self, written: int) -> None:
        """:raises AnalyticsTimeoutError: a whole window has passed at less than the floor."""
        if not self._floor:
            return
        now = time.monotonic()
        elapsed = now - self._since
        if elapsed < self._window:
            return
        rate = (written - self._count) / elapsed
        if rate < self._floor:
            raise AnalyticsTimeoutError(
                f"report {self._report_id}: the download ran at {rate:.0f} bytes/s over the last {elapsed:.0f} s, "
                f"below the floor of {self._floor} bytes/s (connection extra min_download_rate; lower it, or 0 "
                "turns the floor off)",
                method="GET",
                path=endpoints.download_report(self._report_id).path,
            )
        self._since, self._count = now, written


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
        self._report_id = validate_id(report_id, "report_id")
        self._max_resumes = max_resumes
        self._expected_size = expected_size if isinstance(expected_size, int) and expected_size >= 0 else None
        self._expected_sha256 = expected_sha256.lower() if isinstance(expected_sha256, str) else None
        self._response: httpx.Response | None = None
        # The answer the file began with (the first 200, or a restart's): its size, type, digest and ETag
        # describe the whole file; a 206 that continues it only carries the rest.
        self._whole: httpx.Headers | None = None
        self._received = 0  # every byte read, those of attempts resumed or started over too (for the metrics)

    def __enter__(self) -> ReportStream:
        self._response = self._checked_start(self._client.open_stream(endpoints.download_report(self._report_id)))
        return self

    def __exit__(self, *exc_info: type[BaseException] | BaseException | TracebackType | None) -> None:
        if self._response is not None:
            self._response.close()
        observer().downloaded(self._client.config.connection_id or "none", self._received)

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
        return media_type_of(self._headers.get("Content-Type"))

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
            repr_digests(response.headers.get(HEADER_REPR_DIGEST))
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
        :raises AnalyticsTimeoutError: the download ran slower than the connection's ``min_download_rate``.
        """
        response = self._response
        if response is None:
            raise RuntimeError("use ReportStream as a context manager")
        total = self.size
        deadline = time.monotonic() + self._client.config.timeout + total / MIN_DOWNLOAD_RATE
        if progress is None:
            progress = TransferProgress(f"report {self._report_id}", total=total)
        hashers, written, resumes = self._hashers(), 0, 0
        announced: list[dict[str, bytes]] = []  # Repr-Digests of resuming 206s: the whole file's digests too
        floor = _RateFloor(self._client.config, self._report_id)
        while True:
            try:
                with request_deadline(deadline):
                    for chunk in response.iter_raw():
                        if written + len(chunk) > total:
                            raise self._fail(f"the platform sent more than the {total} bytes it announced")
                        out.write(chunk)
                        for hasher in hashers.values():
                            hasher.update(chunk)
                        written += len(chunk)
                        self._received += len(chunk)
                        progress.update(written)
                        floor.check(written)
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
                    hashers, written, total, announced = self._hashers(), 0, self.size, []
                    progress.total = total
                else:
                    announced.append(repr_digests(response.headers.get(HEADER_REPR_DIGEST)))
                floor.restart(written)
        if written != total:
            raise self._fail(f"received {written} bytes, Content-Length announced {total}")
        for algorithm, expected in self._announced_digests(announced):
            if algorithm not in hashers:  # first named by a resuming 206: the bytes before it were not hashed so
                log.warning("Report %s: %s in Repr-Digest of a resumed answer only; not checked", self._report_id,
                            algorithm)  # fmt: skip
            elif hashers[algorithm].digest() != expected:
                raise self._fail(f"{algorithm} of the {written} bytes received does not match Repr-Digest")
        sha256 = hashers["sha-256"].hexdigest()
        if self._expected_sha256 is not None and sha256 != self._expected_sha256:
            raise self._fail(f"sha-256 of the {written} bytes received does not match the report's sha256")
        progress.finish(written)
        return DownloadedFile(size=written, sha256=sha256, content_type=self.content_type)

    def _hashers(self) -> dict[str, Hash]:
        """sha-256, and every other known algorithm the whole file's ``Repr-Digest`` names, fresh."""
        named = repr_digests(self._headers.get(HEADER_REPR_DIGEST))
        return {name: make() for name, make in DIGEST_ALGORITHMS.items() if name == "sha-256" or name in named}

    def _announced_digests(self, resumed: list[dict[str, bytes]]) -> list[tuple[str, bytes]]:
        """Every (algorithm, digest) the whole file's answer and the resuming 206s announced."""
        whole = repr_digests(self._headers.get(HEADER_REPR_DIGEST))
        return [item for digests in (whole, *resumed) for item in digests.items()]

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
