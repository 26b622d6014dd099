"""Host names for the two Celery workers of ``make e2e EXECUTOR=celery``.

Both workers run on this one machine; a name of their own in ``[core] hostname_callable`` lets the
checks see which worker ran a task and which one resumed it.
"""


def worker_a() -> str:
    return "worker_a"


def worker_b() -> str:
    return "worker_b"
