"""Lineage: the ``analytics://`` asset URI scheme and the operators' OpenLineage facets (docs/lineage.md).

Importing this package is free of OpenLineage: only the operators' ``get_openlineage_facets_*`` methods
load :mod:`airflow_provider_analytics.lineage._facets`, which is where the optional provider is imported.
"""

__all__: list[str] = []
