"""Shared fixtures: both transports behind one face, so sync and async run the same test bodies; the hook."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

import pytest
from anyio.from_thread import BlockingPortal, start_blocking_portal

from airflow_provider_analytics.sandbox.server import SandboxServer
from airflow_provider_analytics.wire import _endpoints as endpoints
from airflow_provider_analytics.wire._endpoints import Call, Page, PagedCall
from airflow_provider_analytics.wire.client import AnalyticsClient, AsyncAnalyticsClient
from airflow_provider_analytics.wire.config import ClientConfig
from airflow_provider_analytics.wire.retry import RetryPolicy

if TYPE_CHECKING:  # the hook imports Airflow; the tests of tests/support/airflow_free.py load this module too
    from airflow_provider_analytics.hooks.analytics import AnalyticsHook


class Api:
    """One face over either client. ``sleeps`` records every wait the retry loop asked for."""

    def __init__(self, mode: str, config: ClientConfig, portal: BlockingPortal | None) -> None:
        self.mode = mode
        self.config = config
        self.sleeps: list[float] = []
        self._portal = portal
        if portal is None:
            self._sync: AnalyticsClient | None = AnalyticsClient(config, sleep=self.sleeps.append)
        else:
            self._sync = None

            async def record(seconds: float) -> None:
                self.sleeps.append(seconds)

            self._async = AsyncAnalyticsClient(config, sleep=record)

    def call(self, call: Call[Any]) -> Any:
        if self._sync is not None:
            return self._sync.call(call)
        assert self._portal is not None
        return self._portal.call(self._async.call, call)

    def items(self, paged: PagedCall[Any], limit: int | None = None) -> list[Any]:
        """Items across pages (at most ``limit``, stopping the lazy iteration early)."""
        if self._sync is not None:
            out = []
            for item in self._sync.paginate(paged):
                out.append(item)
                if limit is not None and len(out) >= limit:
                    break
            return out

        async def collect() -> list[Any]:
            out = []
            async for item in self._async.paginate(paged):
                out.append(item)
                if limit is not None and len(out) >= limit:
                    break
            return out

        assert self._portal is not None
        return self._portal.call(collect)

    def pages(self, paged: PagedCall[Any]) -> list[Page[Any]]:
        if self._sync is not None:
            return list(self._sync.paginate(paged).pages())

        async def collect() -> list[Page[Any]]:
            pager = self._async.paginate(paged).pages()
            return [page async for page in pager]

        assert self._portal is not None
        return self._portal.call(collect)

    def close(self) -> None:
        if self._sync is not None:
            self._sync.close()
        else:
            assert self._portal is not None
            self._portal.call(self._async.aclose)


def make_config(server: SandboxServer, **overrides: Any) -> ClientConfig:
    """A client configuration for the sandbox; fast backoff so retry tests do not wait."""
    settings: dict[str, Any] = {
        "base_url": server.base_url,
        "token": server.token,
        "retry": RetryPolicy(max_retries=3, backoff_initial=0.01, backoff_max=0.05),
        "timeout": 5.0,
    }
    settings.update(overrides)
    return ClientConfig(**settings)


@pytest.fixture(scope="session")
def portal() -> Iterator[BlockingPortal]:
    with start_blocking_portal() as running:
        yield running


# What the api_factory fixture gives: build an Api with ClientConfig overrides (timeout=..., retry=...).
ApiFactory = Callable[..., Api]


@pytest.fixture(params=["sync", "async"])
def api_factory(
    request: pytest.FixtureRequest, analytics_sandbox: SandboxServer, portal: BlockingPortal
) -> Iterator[ApiFactory]:
    """Build an :class:`Api` on the sandbox for the parametrised transport: ``api_factory(**config)``."""
    made: list[Api] = []

    def factory(**overrides: Any) -> Api:
        api = Api(
            request.param, make_config(analytics_sandbox, **overrides), None if request.param == "sync" else portal
        )
        made.append(api)
        return api

    yield factory
    for api in made:
        api.close()


@pytest.fixture
def api(api_factory: ApiFactory) -> Api:
    """The default :class:`Api` on the sandbox, for both transports."""
    return api_factory()


@pytest.fixture
def sandbox(analytics_sandbox: SandboxServer) -> SandboxServer:
    """Short name for the sandbox plugin's fixture (fresh state, connection env var set)."""
    return analytics_sandbox


@pytest.fixture
def hook(sandbox: SandboxServer) -> Iterator[AnalyticsHook]:
    """A blocking hook on ``analytics_default`` (the sandbox fixture points the env connection at the sandbox)."""
    from airflow_provider_analytics.hooks.analytics import AnalyticsHook

    made = AnalyticsHook()
    yield made
    made.close()


__all__ = ["Api", "endpoints", "make_config"]
