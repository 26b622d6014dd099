# The connection as environment variables, as docs/connection.md shows them. tests/docs/test_snippets.py
# sources this file and reads each form back through AnalyticsHook: a form that no longer parses fails it.

# [START connection_json]
export AIRFLOW_CONN_ANALYTICS_DEFAULT='{
  "conn_type": "analytics",
  "host": "https://api.analytics.example.com",
  "password": "REPLACE_WITH_THE_API_TOKEN",
  "extra": {"workspace_id": "ws_finance", "timeout": 30, "ui_url": "https://app.analytics.example.com"}
}'
# [END connection_json]

# [START connection_uri]
export AIRFLOW_CONN_ANALYTICS_FINANCE='analytics://https://:REPLACE_WITH_THE_API_TOKEN@api.analytics.example.com?workspace_id=ws_finance&timeout=30'
# [END connection_uri]
