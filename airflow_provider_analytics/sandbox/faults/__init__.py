"""Fault injection: the answers a misbehaving platform or network gives when a test asks for them.

``kinds`` defines :class:`Fault` (one constructor per kind, and its JSON form for the admin endpoint),
``arguments`` checks and converts the hostile kinds' arguments, ``queue`` holds the injected faults in
order, and ``hostile`` writes the hostile answers and rewrites straight to the ASGI connection.

Like the domain, nothing here imports the HTTP edge or the server stack when it runs.
"""

from __future__ import annotations

from airflow_provider_analytics.sandbox.faults.kinds import Fault
from airflow_provider_analytics.sandbox.faults.queue import FaultQueue

__all__ = ["Fault", "FaultQueue"]
