"""Opaque, tamper-evident cursors and page slicing for the paginated lists."""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
from collections.abc import Mapping, Sequence
from typing import TypeVar

from airflow_provider_analytics.sandbox.domain.api_error import ApiError

T = TypeVar("T")
DEFAULT_LIMIT = 20
MAX_LIMIT = 100


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


class CursorCodec:
    """Encodes a list position as ``c_<payload>.<signature>``; a cursor only works for the list it came from.

    :param secret: the HMAC key (random per server).
    """

    def __init__(self, secret: bytes) -> None:
        self._secret = secret

    def _sign(self, payload: bytes) -> bytes:
        return hmac.new(self._secret, payload, hashlib.sha256).digest()[:9]

    def encode(self, scope: str, offset: int) -> str:
        """A cursor for position ``offset`` of list ``scope``.

        :param scope: which list, e.g. ``ws_default/workflows``.
        :param offset: index of the first item of the next page.
        """
        payload = f"{scope}|{offset}".encode()
        return f"c_{_b64(payload)}.{_b64(self._sign(payload))}"

    def decode(self, scope: str, cursor: str) -> int:
        """The position a cursor points to; 400 when it is malformed, tampered or for another list.

        :param scope: which list the request is for.
        :param cursor: the cursor the client sent.
        """
        invalid = ApiError.invalid_fields({"cursor": "is unknown or expired"}, status=400)
        if not cursor.startswith("c_") or "." not in cursor:
            raise invalid
        encoded_payload, _, encoded_signature = cursor[2:].partition(".")
        try:
            payload, signature = _unb64(encoded_payload), _unb64(encoded_signature)
        except (binascii.Error, ValueError):
            raise invalid from None
        if not hmac.compare_digest(signature, self._sign(payload)):
            raise invalid
        cursor_scope, _, offset = payload.decode(errors="replace").rpartition("|")
        if cursor_scope != scope or not offset.isdigit():
            raise invalid
        return int(offset)


def page_limit(query: Mapping[str, str]) -> int:
    """The ``limit`` query parameter: 1-100, default 20; 400 otherwise.

    :param query: the request's query parameters.
    """
    raw = query.get("limit")
    if raw is None:
        return DEFAULT_LIMIT
    if not raw.strip().isdigit() or not 1 <= int(raw) <= MAX_LIMIT:
        raise ApiError.invalid_fields({"limit": f"must be an integer from 1 to {MAX_LIMIT}"}, status=400)
    return int(raw)


def paginate(
    items: Sequence[T], scope: str, query: Mapping[str, str], codec: CursorCodec
) -> tuple[list[T], str | None]:
    """One page of ``items`` and the cursor of the next page (None on the last page).

    :param items: the whole list, in a stable order.
    :param scope: which list (cursors from other lists are refused).
    :param query: the request's query parameters (``limit``, ``cursor``).
    :param codec: the server's cursor codec.
    """
    limit = page_limit(query)
    cursor = query.get("cursor")
    offset = codec.decode(scope, cursor) if cursor else 0
    page = list(items[offset : offset + limit])
    next_offset = offset + limit
    return page, codec.encode(scope, next_offset) if next_offset < len(items) else None
