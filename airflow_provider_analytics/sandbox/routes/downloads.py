"""Report downloads: ``Range`` handling, download headers and a chunked body that never copies the file."""

from __future__ import annotations

import base64
import re
from collections.abc import AsyncIterator
from urllib.parse import quote

from starlette.responses import StreamingResponse

from airflow_provider_analytics.sandbox.domain.api_error import ApiError

CHUNK_BYTES = 64 * 1024
_RANGE = re.compile(r"^\s*bytes\s*=\s*(?P<first>\d*)\s*-\s*(?P<last>\d*)\s*$", re.IGNORECASE)
_EXTENSIONS = {"pdf": "pdf", "csv": "csv", "xlsx": "xlsx", "html": "html"}


def requested_range(header: str | None, total: int) -> tuple[int, int] | None:
    """The inclusive byte range a ``Range`` header asks for, None for the whole file; 416 when unsatisfiable.

    Supports ``bytes=N-``, ``bytes=N-M`` and ``bytes=-S``; other forms (several ranges, other units,
    nonsense) are ignored as RFC 9110 allows, and the whole file is sent.

    :param header: the ``Range`` header value, if any.
    :param total: the file size.
    """
    match = _RANGE.match(header or "")
    if match is None or (not match["first"] and not match["last"]):
        return None
    if not match["first"]:
        suffix = int(match["last"])
        if suffix == 0 or total == 0:
            raise _unsatisfiable(total)
        return max(0, total - suffix), total - 1
    first = int(match["first"])
    last = int(match["last"]) if match["last"] else total - 1
    if first >= total:
        raise _unsatisfiable(total)
    if last < first:
        return None
    return first, min(last, total - 1)


def _unsatisfiable(total: int) -> ApiError:
    return ApiError(
        416,
        f"requested range is beyond the end of the file ({total} bytes)",
        {"size_bytes": total},
        headers={"Content-Range": f"bytes */{total}"},
    )


def content_disposition(name: str, file_format: str) -> str:
    """``attachment; filename="<name>.<ext>"`` with the name as-is (the client must sanitise it).

    Only what HTTP cannot carry is changed: control characters become ``_``, ``"`` and ``\\`` are
    escaped, and a non-ASCII name also gets an RFC 8187 ``filename*``.

    :param name: the report name.
    :param file_format: the report format.
    """
    filename = "".join(ch if ch >= " " and ch != "\x7f" else "_" for ch in f"{name}.{_EXTENSIONS[file_format]}")
    ascii_name = "".join(ch if ord(ch) < 128 else "_" for ch in filename)
    quoted = ascii_name.replace("\\", "\\\\").replace('"', '\\"')
    value = f'attachment; filename="{quoted}"'
    if ascii_name != filename:
        value += f"; filename*=UTF-8''{quote(filename, safe='')}"
    return value


async def _chunks(content: bytes, first: int, last: int) -> AsyncIterator[bytes]:
    view = memoryview(content)
    for offset in range(first, last + 1, CHUNK_BYTES):
        yield bytes(view[offset : min(offset + CHUNK_BYTES, last + 1)])


def download_response(
    content: bytes,
    sha256_hex: str,
    content_type: str,
    name: str,
    file_format: str,
    range_header: str | None,
    if_range: str | None,
) -> StreamingResponse:
    """The 200 or 206 answer for a ready report's file.

    :param content: the whole file.
    :param sha256_hex: its SHA-256 (hex).
    :param content_type: its media type.
    :param name: the report name (for ``Content-Disposition``).
    :param file_format: the report format.
    :param range_header: the request's ``Range`` header.
    :param if_range: the request's ``If-Range`` header (a range is honoured only if it names this file).
    """
    total = len(content)
    etag = f'"{sha256_hex}"'
    byte_range = requested_range(range_header, total) if if_range in (None, etag) else None
    first, last = byte_range if byte_range is not None else (0, total - 1)
    headers = {
        "Content-Length": str(max(0, last - first + 1)),
        "ETag": etag,
        "Accept-Ranges": "bytes",
        "Content-Disposition": content_disposition(name, file_format),
        "Repr-Digest": f"sha-256=:{base64.b64encode(bytes.fromhex(sha256_hex)).decode()}:",
    }
    status = 200
    if byte_range is not None:
        status = 206
        headers["Content-Range"] = f"bytes {first}-{last}/{total}"
    return StreamingResponse(
        _chunks(content, first, last), status_code=status, headers=headers, media_type=content_type
    )
