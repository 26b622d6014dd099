"""The sandbox's settings under the names the docs give them; they live in ``sandbox.domain.config``.

``SandboxConfig`` and ``Timings``, and the two tokens of the docs' table (``FULL_ACCESS_TOKEN``,
``LIMITED_TOKEN``).
"""

from __future__ import annotations

from airflow_provider_analytics.sandbox.domain.config import FULL_ACCESS_TOKEN, LIMITED_TOKEN, SandboxConfig, Timings

__all__ = ["FULL_ACCESS_TOKEN", "LIMITED_TOKEN", "SandboxConfig", "Timings"]
