"""What the sandbox never keeps: credentials in headers and secret fields in JSON bodies.

A real platform accepts secrets (the bearer token, a data source's password) but does not write
them to its logs. The request log applies the same rules when it records a request.
"""

from __future__ import annotations

import json
import re
from typing import Any

REDACTED = "[redacted]"
SECRET_FIELD_MARKERS = (
    "password",
    "secret",
    "token",
    "private_key",
    "credentials",
    "api_key",
    "passphrase",
    "keyfile",
    "sslkey",
    "ssl_key",
    "cert_key",
)
_CREDENTIAL_HEADERS = frozenset({"cookie", "set-cookie", "proxy-authorization", "x-api-key", "api-key"})


def is_secret_field(name: str) -> bool:
    """Whether a connection field is write-only (accepted on connect, never returned nor logged).

    :param name: the field name.
    """
    lowered = name.lower().replace("-", "_")
    return any(marker in lowered for marker in SECRET_FIELD_MARKERS)


# Key material in any text: a PEM block (an unterminated one to the end of the text).
_PEM = re.compile(r"-----BEGIN [^-\r\n]*-----(?:.*?-----END [^-\r\n]*-----|.*\Z)", re.DOTALL)
# The password of a URL with userinfo: postgres://svc:pw@db/sales keeps everything but "pw".
_USERINFO_PASSWORD = re.compile(r"([A-Za-z][A-Za-z0-9+.-]*://[^\s:@/]*:)[^\s@/]*@")


def redact_text(text: str) -> str:
    """``text`` with key material (PEM blocks) and every URL's password replaced.

    :param text: a value shown on a page.
    """
    return _USERINFO_PASSWORD.sub(rf"\1{REDACTED}@", _PEM.sub(REDACTED, text))


def redact_for_display(value: Any) -> Any:
    """A copy of a resource fit for an unauthenticated page: every secret field at any depth replaced (as the
    request log does), and key material and URL passwords replaced inside every other text.

    :param value: a resource as the API renders it.
    """
    if isinstance(value, dict):
        return {
            key: REDACTED if isinstance(key, str) and is_secret_field(key) else redact_for_display(item)
            for key, item in value.items()
        }
    if isinstance(value, list):
        return [redact_for_display(item) for item in value]
    return redact_text(value) if isinstance(value, str) else value


def is_credential_header(name: str) -> bool:
    """Whether a header (other than ``Authorization``) carries a credential.

    ``Cookie``, ``Proxy-Authorization``, ``X-Api-Key`` and any name that reads like a secret field
    once ``-`` becomes ``_`` (``X-Auth-Token``, ``X-Client-Secret``...).

    :param name: the header name.
    """
    lowered = name.lower()
    return lowered in _CREDENTIAL_HEADERS or is_secret_field(lowered.replace("-", "_"))


def redact_authorization(value: str) -> str:
    """``Bearer abc`` becomes ``Bearer [redacted]``; a value without a scheme word becomes ``[redacted]``.

    :param value: the ``Authorization`` header value.
    """
    stripped = value.strip()
    if not stripped:
        return value
    scheme, separator, _ = stripped.partition(" ")
    return f"{scheme} {REDACTED}" if separator else REDACTED


def redact_headers(headers: dict[str, str]) -> dict[str, str]:
    """A copy of request headers (lower-case names) with credentials replaced.

    :param headers: the headers as received.
    """
    redacted: dict[str, str] = {}
    for name, value in headers.items():
        if name.lower() == "authorization":
            redacted[name] = redact_authorization(value)
        elif is_credential_header(name):
            redacted[name] = REDACTED
        else:
            redacted[name] = value
    return redacted


def redact_query(query: dict[str, str]) -> dict[str, str]:
    """A copy of query parameters with secret-looking ones (``api_key=...``) replaced.

    :param query: the query parameters.
    """
    return {name: REDACTED if is_secret_field(name) else value for name, value in query.items()}


def redact_json(value: Any) -> tuple[Any, bool]:
    """A copy of a parsed JSON value with every secret field, at any depth, replaced; and whether any was.

    :param value: the parsed JSON.
    """
    if isinstance(value, dict):
        changed = False
        result: dict[Any, Any] = {}
        for key, item in value.items():
            if isinstance(key, str) and is_secret_field(key):
                result[key] = REDACTED
                changed = True
            else:
                result[key], inner = redact_json(item)
                changed = changed or inner
        return result, changed
    if isinstance(value, list):
        items = [redact_json(item) for item in value]
        return [item for item, _ in items], any(inner for _, inner in items)
    return value, False


def redact_body(body: bytes) -> tuple[bytes, Any]:
    """The body to keep and its parsed JSON (None when empty or not JSON), secrets replaced.

    A JSON body holding secrets is kept re-serialised from its redacted form, so the original
    bytes are never stored; any other body is kept as received.

    :param body: the raw request body.
    """
    try:
        parsed = json.loads(body) if body.strip() else None
    except (ValueError, RecursionError):
        return body, None
    redacted, changed = redact_json(parsed)
    if not changed:
        return body, parsed
    return json.dumps(redacted, ensure_ascii=False).encode(), redacted
