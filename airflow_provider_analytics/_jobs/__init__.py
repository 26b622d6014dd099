"""Each kind of remote work described once: its ids, its start, its read, its verdict, its cancel, its words.

One module per kind (``executions``, ``reports``, ``syncs``), and the event contract between a trigger and the
task it resumes (``events``). A task polling on its worker, the sensor's poke and the trigger a task defers to
all run from the same description, so none repeats what another knows. Internal: the public way in is the
operators, the sensor and the triggers.
"""
