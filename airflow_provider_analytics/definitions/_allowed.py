"""Which Airflow secrets a definition's reference may name: the trust boundary's allow-list (docs/guides/
apply-definitions.md, "The trust boundary"). No Airflow, no I/O: the hook layer builds a :class:`SecretSources`
from the analytics connection (``hooks/_definitions.py``); a plan checks every reference against it before any
request, and an apply again before it reads anything (:func:`check_sources`).

Two rules, both decided here:

- **Patterns.** A reference may name a connection id or variable key that the analytics connection's extra
  ``secret_sources`` (glob patterns) matches; without it, those beginning with ``analytics_`` (the names an export
  writes). A wildcard matches only names made of the characters of an Airflow connection id.
- **Never the provider's own connections by default.** The analytics connection's password is the platform's API
  token, and a rate limit store's connection holds that store's password: a definition that named one of them
  (``{from_connection: analytics_default}``, which ``analytics_*`` matches) would make an apply send the token to
  whatever host the definition's data source names. No wildcard ever admits them, the default included; a
  deployment that truly means it lists such an id exactly in ``secret_sources``.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Sequence
from dataclasses import dataclass

from airflow_provider_analytics.definitions._model import Definition, SecretRef
from airflow_provider_analytics.definitions._problems import Problems, one_line
from airflow_provider_analytics.definitions._references import free_form_of, path_text, refs_of

__all__ = ["DEFAULT_OWN_CONNECTIONS", "DEFAULT_SECRET_SOURCES", "SecretSources", "check_sources"]

# The connections and variables a reference may name when the analytics connection sets no extra secret_sources:
# the names an export writes (analytics_<data source name>, analytics_<object name>_<field path>).
DEFAULT_SECRET_SOURCES = ("analytics_*",)
# The provider's own connection, by its default id: never read by a definition through a wildcard (the hook adds
# the id of the connection it uses, and of its rate limit store's).
DEFAULT_OWN_CONNECTIONS = frozenset({"analytics_default"})
_PLAIN_NAME = re.compile(r"[A-Za-z0-9_.-]+")


@dataclass(frozen=True)
class SecretSources:
    """The Airflow connections and variables a definition's reference may name: glob patterns, matched
    case-sensitively against a connection's id or a variable's key (one list for both).

    :param patterns: the patterns (``fnmatch``: ``*``, ``?``, ``[...]``); empty: no reference is allowed.
    :param setting: where they come from, for messages: the analytics connection's extra, or the default.
    :param own: the ids of the connections the provider itself uses (the analytics connection, its rate limit
        store's): a reference to one, in any case and with ``-`` for ``_`` (as secrets backends may read it), is
        allowed only by a pattern that is that very spelling.
    """

    patterns: tuple[str, ...] = DEFAULT_SECRET_SOURCES
    setting: str = "the default (the analytics connection sets no extra 'secret_sources')"
    own: frozenset[str] = DEFAULT_OWN_CONNECTIONS

    def allows(self, ref: SecretRef) -> bool:
        """Whether ``ref`` names a connection or variable these patterns allow. A wildcard matches only a name
        made of letters, digits, ``_``, ``-`` and ``.`` (no ``..``), the characters of an Airflow connection id: a
        secrets backend may read ``analytics_x/../aws_default`` as a path to another secret. Any other name, and
        a connection of the provider's own (:attr:`own`), is allowed only by a pattern that is that very name.

        :param ref: the reference.
        """
        if not _PLAIN_NAME.fullmatch(ref.key) or ".." in ref.key or self.is_own(ref):
            return ref.key in self.patterns
        return any(fnmatch.fnmatchcase(ref.key, pattern) for pattern in self.patterns)

    def is_own(self, ref: SecretRef) -> bool:
        """Whether ``ref`` names a connection the provider itself uses.

        :param ref: the reference.
        """
        return ref.source == "connection" and _folded(ref.key) in {_folded(own) for own in self.own}

    def said(self) -> str:
        """The patterns and their origin, in a phrase: ``analytics_* (the default ...)``."""
        patterns = ", ".join(self.patterns) if self.patterns else "nothing"
        return f"{patterns} ({self.setting})"


def _folded(connection_id: str) -> str:
    """A connection id as secrets backends may read it: Airflow's environment variables upper-case it
    (``AIRFLOW_CONN_ANALYTICS_DEFAULT`` answers ``analytics_DEFAULT`` too), Azure Key Vault ignores case and reads
    ``_`` as ``-``. An own connection is refused by any of these spellings."""
    return connection_id.casefold().replace("-", "_")


def check_sources(definitions: Sequence[Definition], sources: SecretSources) -> None:
    """Refuse every reference to a connection or variable ``sources`` does not allow, before anything is read.

    :param definitions: every definition loaded (a plan checks them all, whatever it will write).
    :param sources: what the deployment allows.
    :raises AnalyticsInputError: naming each such reference, where it is written and the setting.
    """
    problems = Problems("The definitions' secrets from Airflow")
    for definition in definitions:
        field, value = free_form_of(definition)
        for path, ref in refs_of(value):
            if sources.allows(ref):
                continue
            where = f"{definition.origin}: {path_text(field, path)}: refers to {ref}"
            if sources.is_own(ref):
                problems.add(
                    f"{where}, a connection this provider itself uses (the analytics connection's password is the"
                    " platform's API token; a rate limit store's, that store's password), which definitions may not"
                    " read: an apply would send it to whatever the definition names. Keep the secret in a"
                    " connection of its own (analytics_<name>), or, if the deployment truly means it, name this id"
                    " exactly (not by a wildcard) in the analytics connection's extra secret_sources"
                )
            else:
                problems.add(
                    f"{where}, which the deployment does not let definitions read: references may name"
                    f" {one_line(sources.said())}. Keep the secret in a connection or variable of an allowed name,"
                    " or add this one to the analytics connection's extra secret_sources (a list of glob patterns)"
                )
    problems.raise_if_any()
