"""Sensors that wait on platform state."""

__all__: list[str] = []
