"""Configuration of a sandbox server: state-machine timings, tokens and limits."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from airflow_provider_analytics.sandbox.domain.rate_limits import per_second_problem
from airflow_provider_analytics.sandbox.faults.chaos import ChaosConfig

DEFAULT_WORKSPACE = "ws_default"
MARKETING_WORKSPACE = "ws_marketing"
FULL_ACCESS_TOKEN = "sandbox-token"
LIMITED_TOKEN = "sandbox-token-limited"


# The largest synthetic CSV report (``parameters.rows``), about 45 bytes a row: 5,000,000 rows is about 227 MB.
MAX_GENERATED_ROWS = 5_000_000


@dataclass(frozen=True)
class Timings:
    """How long each state of each clock-driven state machine lasts, in seconds.

    :param execution_queued: time an execution spends ``queued`` before it runs.
    :param execution_running: time an execution spends ``running`` before it finishes.
    :param sync_pending: time a data-source sync spends ``pending``.
    :param sync_running: time a data-source sync spends ``syncing``.
    :param report_pending: time a report spends ``pending``.
    :param report_generating: time a report spends ``generating`` (at least as long as rendering takes).
    :param report_ttl: time a ready report stays downloadable before it becomes ``expired``.
    :param auto_sync_interval: when set, every data source starts a (successful) sync this often.
    """

    execution_queued: float = 1.0
    execution_running: float = 4.0
    sync_pending: float = 0.5
    sync_running: float = 2.5
    report_pending: float = 0.5
    report_generating: float = 2.5
    report_ttl: float = 3600.0
    auto_sync_interval: float | None = None

    @classmethod
    def fast(cls) -> Timings:
        """Timings for automated tests: every state machine finishes in about 0.3 s."""
        return cls(
            execution_queued=0.05,
            execution_running=0.25,
            sync_pending=0.05,
            sync_running=0.25,
            report_pending=0.05,
            report_generating=0.25,
        )

    @classmethod
    def demo(cls) -> Timings:
        """Timings for a demo a human watches: a few seconds per run, and a sync every 15 s."""
        return cls(auto_sync_interval=15.0)

    @property
    def execution_total(self) -> float:
        """Seconds from an execution's creation to its natural end."""
        return self.execution_queued + self.execution_running

    @property
    def sync_total(self) -> float:
        """Seconds from the start of a sync to its end."""
        return self.sync_pending + self.sync_running

    @property
    def report_total(self) -> float:
        """Seconds from a report's creation to the earliest moment it can be ready."""
        return self.report_pending + self.report_generating


@dataclass(frozen=True)
class TokenGrant:
    """What one API token may do.

    :param default_workspace: the workspace used when a request has no ``X-Workspace-Id``.
    :param workspaces: every workspace the token may select (includes the default one).
    """

    default_workspace: str
    workspaces: frozenset[str]

    def __post_init__(self) -> None:
        if self.default_workspace not in self.workspaces:
            raise ValueError(f"default workspace {self.default_workspace!r} must be one of the token's")


def default_tokens() -> dict[str, TokenGrant]:
    """The sandbox's built-in tokens: one with access to both workspaces, one limited to the default."""
    return {
        FULL_ACCESS_TOKEN: TokenGrant(DEFAULT_WORKSPACE, frozenset({DEFAULT_WORKSPACE, MARKETING_WORKSPACE})),
        LIMITED_TOKEN: TokenGrant(DEFAULT_WORKSPACE, frozenset({DEFAULT_WORKSPACE})),
    }


@dataclass(frozen=True)
class SandboxConfig:
    """Everything that shapes one sandbox server.

    :param timings: durations of the clock-driven state machines.
    :param tokens: accepted bearer tokens and what each may access; the first one is the server's
        "full access" token (``SandboxServer.token``).
    :param rate_limit_per_minute: requests each token may make per one-minute window before 429.
    :param rate_limit_per_second: requests each token may make per second of the wall clock before 429 (a
        fraction is kept, never exceeded: ``sandbox.domain.rate_limits``); None: no per-second limit.
    :param rate_limit_headers: whether responses carry ``X-RateLimit-Limit``, ``-Remaining`` and ``-Reset``
        (a 429 carries ``Retry-After`` either way).
    :param chart_rows: number of rows every chart's data has.
    :param seed: whether to fill the workspaces with believable sample data on start and reset.
    :param max_body_bytes: request bodies larger than this are answered with 413.
    :param chaos: seeded random faults, work failures and work durations (off by default).
    """

    timings: Timings = field(default_factory=Timings)
    tokens: Mapping[str, TokenGrant] = field(default_factory=default_tokens)
    rate_limit_per_minute: int = 6000
    rate_limit_per_second: float | None = None
    rate_limit_headers: bool = True
    chart_rows: int = 250
    seed: bool = True
    max_body_bytes: int = 1024 * 1024
    chaos: ChaosConfig = field(default_factory=ChaosConfig)

    def __post_init__(self) -> None:
        if not self.tokens:
            raise ValueError("a sandbox needs at least one token")
        if self.rate_limit_per_minute < 1:
            raise ValueError("rate_limit_per_minute must be at least 1")
        problem = per_second_problem(self.rate_limit_per_second)
        if problem is not None:
            raise ValueError(f"rate_limit_per_second {problem}")
        if not isinstance(self.rate_limit_headers, bool):
            raise ValueError("rate_limit_headers must be True or False")
        if self.chart_rows < 0:
            raise ValueError("chart_rows must not be negative")

    @property
    def primary_token(self) -> str:
        """The token handed out by ``SandboxServer.token`` and in connection JSON."""
        if FULL_ACCESS_TOKEN in self.tokens:
            return FULL_ACCESS_TOKEN
        return next(iter(self.tokens))

    @property
    def workspace_ids(self) -> list[str]:
        """Every workspace any token can reach, in a stable order (default workspace first)."""
        found: list[str] = []
        for grant in self.tokens.values():
            for workspace_id in [grant.default_workspace, *sorted(grant.workspaces)]:
                if workspace_id not in found:
                    found.append(workspace_id)
        return found
