"""Where a text holds a credential: the part of the one secret rule (``_secret_rule.py``) that reads inside texts.

A text holds a credential, and the rest of it is plain, in these shapes (docs/hook.md, "Secrets"):

- **a URL's password**: in ``scheme://user:<password>@host``, everything from the colon after the user to the
  *last* ``@`` of the URL (which ends at whitespace, a quote or ``<``/``>``). Connection strings are often written
  with the password raw, so it may hold ``#``, ``?``, ``/``, ``[`` or ``@``, which a URL parser would take for the
  end of the userinfo (``urlsplit`` gives no password at all for ``postgres://u:p#ss@h/db``). The cost: a URL with
  no userinfo but an ``@`` after a port (``https://host:8080/a@b``) is read as one with a password, ``8080/a``:
  hidden, never leaked;
- **an assignment** ``<name>=<value>`` whose name names a credential (:func:`names_credential`): a libpq or ODBC
  DSN (``password=``, ``sslpassword=``, ``PWD={...};``), an environment entry (``DB_PASSWORD=...``), a query
  parameter (``?api_key=...``), a command's ``--password=...``. Written without spaces around ``=``: a query's
  ``where password = 'x'`` is no assignment. The value is quoted, braced, or runs to whitespace or ``;`` (in a URL's
  query, after ``?`` or ``&``, to the next ``&`` or ``#``);
- **a header line** ``<name>: <value>`` (a line of its own) whose name names a credential, the value one word,
  after an optional authentication scheme: ``Authorization: Basic dXNlcjpwYXNz``, ``X-Api-Key: abc``,
  ``password: hunter22``;
- **a keyed value** in a serialised mapping, under a name that names a credential: JSON or a Python ``repr``
  inside a text (``"password": "..."``, ``'private_key': '...'``, the name quoted, the value quoted or bare), a
  YAML flow mapping (``{password: ...}``, ``, token: ...``: a bare name right after ``{`` or ``,``) and an XML
  element (``<password>...</password>``). A quoted value is read up to ``KEYED_MOST`` characters (a key file's
  PEM text fits), with its escapes;
- **a bearer credential** ``Bearer <8 or more token characters>``, wherever it stands (what ``_redaction`` masks
  in every text, whoever's it is; "send a Bearer token" is prose).

Every pattern is linear in the text's length (a hostile platform's text may be a mebibyte): none scans back
over what it matched, and each starts only where a name or URL can start.
"""

from __future__ import annotations

import re
import unicodedata

__all__ = ["BEARER", "credential_spans", "names_credential", "normalized_name"]

# The Authorization header's own shape; the scheme is kept when masked ("Bearer ***").
BEARER = r"(?P<scheme>(?i:bearer)[ \t]+)(?P<credential>[A-Za-z0-9\-._~+/=]{8,})"
_BEARER = re.compile(BEARER)
# A run of text a URL may span: it ends at whitespace, a quote or an angle bracket.
_URL_RUN = re.compile(r"""[^\s"'<>`]+""")
_SCHEME_END = re.compile(r"(?<![A-Za-z0-9+.-])[A-Za-z][A-Za-z0-9+.-]*://")
_USER_END = re.compile(r"[:/?#]")
# An assignment: a name not glued to a word before it (leading dashes allowed: --password=), "=", the value. In a
# URL's query (after "?" or "&") the value ends at the next "&" or "#"; elsewhere a password may hold them.
# A quoted or braced value is read up to QUOTED_MOST characters: one left open (" a={" many times over, no "}")
# would otherwise be scanned to the text's end from each opening, a time that grows with the square of the text.
QUOTED_MOST = 256
_ASSIGNED = re.compile(
    r"""(?<![\w.?&-])-{0,2}(?P<name>[A-Za-z_][\w.-]*)="""
    rf"""(?P<value>'(?:[^'\\]|\\.){{0,{QUOTED_MOST}}}'|"[^"]{{0,{QUOTED_MOST}}}"|\{{[^}}]{{0,{QUOTED_MOST}}}\}}|[^\s;'"]+)"""
)
_QUERY_ASSIGNED = re.compile(r"""(?<=[?&])(?P<name>[A-Za-z_][\w.-]*)=(?P<value>[^\s&#'"]+)""")
_SCHEMES = "basic|bearer|digest|token|negotiate|ntlm|key|apikey"
_HEADER_LINE = re.compile(
    rf"(?m)^[ \t]*(?P<name>[A-Za-z][\w.-]*)[ \t]*:[ \t]*(?:(?i:{_SCHEMES})[ \t]+)?(?P<value>[^\s]+)[ \t]*\r?$"
)
# A keyed value: each scan of a quoted value ends at the next unescaped quote, where the next quoted name would
# have to start, and a bare one at the next delimiter (a "{" included), so the whole text is read about once.
KEYED_MOST = 16_384
_KEYED = re.compile(
    r"""(?:(?P<quote>["'])(?P<quoted>[A-Za-z_][\w.-]*)(?P=quote)|(?<=[{,])[ \t]*(?P<bare>[A-Za-z_][\w.-]*))[ \t]*:"""
    rf"""[ \t]*(?P<value>"(?:[^"\\]|\\.){{0,{KEYED_MOST}}}"|'(?:[^'\\]|\\.){{0,{KEYED_MOST}}}'|[^\s,{{}}\[\]'"]+)"""
)
_ELEMENT = re.compile(rf"<(?P<name>[A-Za-z_][\w.-]*)>(?P<value>[^<]{{1,{KEYED_MOST}}})</(?P=name)>")
_NON_WORD = re.compile(r"\W+")
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
# A name names a credential when it ends in one of these (as normalized_name writes it): "DB_PASSWORD",
# "sslpassword", "X-Api-Key", "client_secret", "GITHUB_TOKEN", a presigned URL's "X-Amz-Signature"; not
# "max_tokens", "tokenizer" or "bypass".
_CREDENTIAL_NAME = re.compile(
    r"(?:password|passwd|secret|token|credentials?|authorization|"
    r"api_?key|access_?key|private_?key|secret_?key|signature|(?:^|_)sig|(?:^|_)pwd|(?:^|_)pass)$"
)


def normalized_name(name: str) -> str:
    """A key's or a name's comparable form: compatibility characters folded (fullwidth letters, the Kelvin sign),
    camel case split (``dbPassword`` is ``db_password``), lower-cased, and every run of other characters than
    letters, digits and ``_`` made ``_``.

    :param name: a mapping key, a header's or an environment variable's name.
    """
    folded = unicodedata.normalize("NFKC", name.strip())
    return _NON_WORD.sub("_", _CAMEL.sub("_", folded).casefold()).strip("_")


def names_credential(name: str) -> bool:
    """Whether a name written inside a text (an assignment's, a header line's, a command's flag) names a
    credential: it ends in a password's, secret's, token's or key's name (``DB_PASSWORD``, ``X-Api-Key``).

    Narrower than a mapping key's rule (``_secret_rule.is_secret_key``, which also counts ``max_tokens``): a text is
    written by people, and what it holds is hidden as a whole or not at all.

    :param name: the name, as written.
    """
    return bool(_CREDENTIAL_NAME.search(normalized_name(name)))


def credential_spans(text: str) -> list[tuple[int, int]]:
    """Where ``text`` holds a credential (the module's shapes), as sorted ``(start, end)`` spans that do not overlap.

    :param text: any text.
    """
    spans: list[tuple[int, int]] = []
    if "://" in text and "@" in text:
        spans += _url_passwords(text)
    if "=" in text:
        spans += _assigned(text)
    if ":" in text:
        spans += [match.span("value") for match in _HEADER_LINE.finditer(text) if names_credential(match["name"])]
        spans += _keyed(text)
    if "</" in text:
        spans += [match.span("value") for match in _ELEMENT.finditer(text) if names_credential(match["name"])]
    spans += [match.span("credential") for match in _BEARER.finditer(text)]
    merged: list[tuple[int, int]] = []
    for start, end in sorted(span for span in spans if span[1] > span[0]):
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(end, merged[-1][1]))
        else:
            merged.append((start, end))
    return merged


def _url_passwords(text: str) -> list[tuple[int, int]]:
    """The password of each URL with userinfo: from the colon after its user to the last ``@`` of its run."""
    spans = []
    for run in _URL_RUN.finditer(text):
        last_at = text.rfind("@", run.start(), run.end())
        if last_at < 0:
            continue
        for scheme in _SCHEME_END.finditer(text, run.start(), last_at):
            user_end = _USER_END.search(text, scheme.end(), last_at)
            if user_end is not None and user_end.group() == ":":  # "host/path:x@y" is no userinfo
                spans.append((user_end.end(), last_at))
    return spans


def _assigned(text: str) -> list[tuple[int, int]]:
    """The value of each assignment to a name that names a credential (quotes and braces left out)."""
    spans = []
    for match in (*_ASSIGNED.finditer(text), *_QUERY_ASSIGNED.finditer(text)):
        if not names_credential(match["name"]):
            continue
        start, end = match.span("value")
        if text[start] in "'\"{":
            start, end = start + 1, end - 1
        spans.append((start, end))
    return spans


def _keyed(text: str) -> list[tuple[int, int]]:
    """The value of each keyed value (JSON, a ``repr``, a YAML flow mapping) under a name that names a credential
    (quotes left out)."""
    spans = []
    for match in _KEYED.finditer(text):
        if not names_credential(match["quoted"] or match["bare"]):
            continue
        start, end = match.span("value")
        if text[start] in "'\"":
            start, end = start + 1, end - 1
        spans.append((start, end))
    return spans
