"""The Airflow connection of type ``analytics``: how it is read into a client config, how its form looks in
Airflow's UI, and how it is tested.

Nothing here is public API: the way in is the hook
(:class:`~airflow_provider_analytics.hooks.analytics.AnalyticsHook`), and the connection's fields are
documented in the connection guide. The modules, each imported only when it is needed (never by a DAG file):
``_protocol.py`` is the shape of a connection the others read; ``_config.py`` reads a connection into a
``ClientConfig`` and refuses a field it cannot use; ``_notes.py`` says what it ignores or repairs instead, and
how messages name a connection; ``_form.py`` builds the form for Airflow releases before 3.2; ``_probe.py`` is
the body of ``AnalyticsHook.test_connection()``.
"""

__all__: list[str] = []
