"""Sensors that wait on platform state."""
