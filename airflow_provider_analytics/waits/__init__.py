"""Each kind of wait described once: what it names, what it fetches, when it is over, how it is cancelled.

One module per kind (``executions``, ``reports``, ``syncs``). A task polling on its worker and the trigger it
defers to both run from the same description, so neither repeats what the other knows.
"""
