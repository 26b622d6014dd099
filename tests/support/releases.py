"""What the Airflow release under test has, for tests whose expectations differ by release.

The provider itself does not branch on these (airflow_provider_analytics/version_compat.py holds only what
it reads); the tests do, to expect each release's own behaviour.
"""

from __future__ import annotations

from airflow_provider_analytics.version_compat import AIRFLOW_V_3_0_PLUS, AIRFLOW_V_3_2_PLUS, AIRFLOW_V_3_3_PLUS

# Airflow 3.3 keeps a task's state across tries (task_state_store); before, a retry finds its remote work
# again through the platform's Idempotency-Key replay alone (operators/jobs.py).
HAS_TASK_STATE_STORE = AIRFLOW_V_3_3_PLUS
# Airflow 3.2 reads the connection form (conn-fields, ui-field-behaviour) from provider info; before, from
# the hook's get_connection_form_widgets / get_ui_field_behaviour.
DECLARATIVE_CONNECTION_FORM = AIRFLOW_V_3_2_PLUS
# Provider info names its asset URI handlers "asset-uris" from 3.0 on, "dataset-uris" on 2.x.
ASSET_URIS_KEY = "asset-uris" if AIRFLOW_V_3_0_PLUS else "dataset-uris"
