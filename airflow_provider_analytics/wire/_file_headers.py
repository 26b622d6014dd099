"""What a download's headers say about the file: its media type, a safe name for it, and its digests.

Pure functions of header values, which are untrusted: a name can never choose where a file goes nor what kind of
file lands, and a ``Repr-Digest`` (RFC 9530) that cannot be checked fails instead of letting a file through as
verified. ``_download.py`` streams and checks the body against them; ``destinations/`` names the file with them.
"""

from __future__ import annotations

import base64
import hashlib
import re
import unicodedata
from collections.abc import Callable
from typing import Protocol
from urllib.parse import unquote

from airflow_provider_analytics.wire.errors import DownloadIntegrityError

__all__ = [
    "DIGEST_ALGORITHMS",
    "EXTENSION_BY_CONTENT_TYPE",
    "Hash",
    "media_type_of",
    "parse_repr_digest",
    "repr_digests",
    "safe_filename",
]

EXTENSION_BY_CONTENT_TYPE = {
    "application/pdf": "pdf",
    "text/csv": "csv",
    "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet": "xlsx",
    "text/html": "html",
}


def media_type_of(value: object) -> str | None:
    """A ``Content-Type`` (or a report's ``content_type``) without its parameters, lower case; ``None`` if absent.

    :param value: the header's or the field's value, untrusted.
    """
    if not isinstance(value, str):
        return None
    return value.split(";")[0].strip().lower() or None


class Hash(Protocol):  # what hashlib's constructors return
    @property
    def digest_size(self) -> int: ...
    def update(self, data: bytes, /) -> None: ...
    def digest(self) -> bytes: ...
    def hexdigest(self) -> str: ...


# The Repr-Digest algorithms (RFC 9530) a download is checked against; sha-256 is always computed.
DIGEST_ALGORITHMS: dict[str, Callable[[], Hash]] = {"sha-256": hashlib.sha256, "sha-512": hashlib.sha512}
_DIGEST_VALUE = re.compile(r":([^:]*):")
_UNSAFE_CHARS = re.compile(r"[^A-Za-z0-9._ ()-]+")


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


def repr_digests(value: str | None) -> dict[str, bytes]:
    """The digests of an RFC 9530 ``Repr-Digest`` header (``sha-256=:<base64>:, sha-512=:<base64>:``) whose
    algorithm is in :data:`DIGEST_ALGORITHMS`; other algorithms are left out.

    :param value: the header's value.
    :raises DownloadIntegrityError: an entry of a known algorithm that is not valid base64 of its digest's
        length, or two different values of one algorithm, since a digest that cannot be checked must not let
        a file through as verified.
    """
    found: dict[str, bytes] = {}
    for member in (value or "").split(","):
        name, _, rest = member.partition("=")
        algorithm = name.strip().lower()
        if algorithm not in DIGEST_ALGORITHMS:
            continue
        match = _DIGEST_VALUE.fullmatch(rest.split(";")[0].strip())  # parameters (";...") are ignored
        try:
            digest = base64.b64decode(match.group(1), validate=True) if match else b""
        except ValueError:  # binascii.Error, and non-ASCII text (what httpx makes of a byte like 0xE9)
            digest = b""
        if len(digest) != DIGEST_ALGORITHMS[algorithm]().digest_size or found.get(algorithm, digest) != digest:
            raise DownloadIntegrityError(f"the Repr-Digest header has a malformed {algorithm} value: {value!r}")
        found[algorithm] = digest
    return found


def parse_repr_digest(value: str | None) -> bytes | None:
    """The sha-256 digest of a ``Repr-Digest`` header, ``None`` when it has none (:func:`repr_digests`).

    :param value: the header's value.
    :raises DownloadIntegrityError: as :func:`repr_digests`.
    """
    return repr_digests(value).get("sha-256")
