"""The sandbox platform's domain: what it stores and how that changes, with no HTTP in it.

Records and their clock-driven state machines (``records``, ``lifecycle``, ``clock``), the state that
holds them with the controls tests call (``store``), and the rules the contract leaves to the platform:
idempotency keys, pagination cursors, rate limits, seed data, chart data, report generation and the files
it renders, the redacted request log, the configuration, and the error a request is refused with
(``api_error``).

Nothing here imports the HTTP edge (``sandbox.http``, ``sandbox.routes``) or FastAPI, Starlette, pydantic
or uvicorn, so it imports without the ``sandbox`` extra (tests/sandbox/test_layers.py checks both).
"""
