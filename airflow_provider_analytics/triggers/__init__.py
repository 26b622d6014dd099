"""Deferrable triggers: one per thing waited on, all built on :class:`~.base.AnalyticsPollTrigger`."""

__all__: list[str] = []
